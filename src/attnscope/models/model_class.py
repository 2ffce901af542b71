"""Which class a model is, in one place: a family's, or a config's.

The loader builds ``model_class(family)`` for a checkpoint of ``family`` (:func:`build_model`). A
config alone (a saved trace's, one written by hand) names no family; :func:`class_for_config` finds
the class among the families' classes (the registry knows every one of them) by the config class
each declares (``config: DecoderConfig`` on :class:`~attnscope.models.DecoderModel`): the nearest in
the config's class hierarchy. :func:`empty_model` builds that class on the meta device — no memory,
no weights, milliseconds — for what is read from the module tree alone (the trace names).
"""

from __future__ import annotations

import typing
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

import torch

from ..config import TransformerConfig
from ..errors import ConfigError, ModelLoadError, first_line
from ..i18n import error
from .model import Model
from .registry import FAMILIES, Family, family_for, make_config


def model_class(family: Family) -> type:
    """The class the loader builds for a checkpoint of ``family`` (:class:`Model` unless it names its own)."""
    return family.model_class or Model


@contextmanager
def weights_not_initialised() -> Iterator[None]:
    """Build modules without drawing random weights (``torch.nn.init``'s random fills do nothing).

    The file's weights replace them right away (``map_weights(..., assign=True)``); drawing them
    would only write every page of a second copy of the weights while the dequantized one is held
    (Gemma 3 270M: 2.6 GB at the peak of loading, 1.9 GB without). Not thread-safe: it patches
    ``torch.nn.init`` for the duration of the block.
    """
    names = ("kaiming_uniform_", "kaiming_normal_", "uniform_", "normal_", "trunc_normal_", "xavier_uniform_",
             "xavier_normal_")
    saved = {n: getattr(torch.nn.init, n) for n in names}
    for n in names:
        setattr(torch.nn.init, n, lambda tensor, *args, **kwargs: tensor)
    try:
        yield
    finally:
        for n, f in saved.items():
            setattr(torch.nn.init, n, f)


def build_model(hf: dict, source: Path, name: str, path: Path, *, where: str = "",
                empty: bool = False) -> tuple[typing.Any, Family]:
    """``(model, family)`` of a config.json dict ``hf`` read from ``source``, its weights not
    loaded (``empty``: not even drawn, for the file's tensors to replace; see
    :func:`weights_not_initialised`); ``config.extra["source"]`` is ``where`` or ``source``."""
    family = family_for(hf.get("model_type"), str(source))
    config = make_config(family.config_from_hf, source, hf, str(source))
    config.extra["source"] = where or str(source)
    check_layers_fit(config.n_layers + getattr(config, "n_decoder_layers", 0), config.d_model,
                     weight_bytes(path), source)
    try:
        with weights_not_initialised() if empty else nullcontext():
            return model_class(family)(config, family, name=name, path=path), family
    except (RuntimeError, MemoryError) as e:  # sizes past memory: torch's allocator failed inside nn.Linear
        raise error(ModelLoadError, "errors.models_cannot_build", source=source, why=first_line(e)) from None


def check_layers_fit(layers: int, d_model: int, held: int, source, field=None) -> None:
    """ModelLoadError when ``layers`` layers of width ``d_model`` cannot fit in ``held`` bytes of
    weights (0: not known, no check): a layer holds at least d_model weights of a byte or more, so
    more is a typo in the layer count (10**9 layers built, or their names listed, for days).
    ``field``: where the count was read, as the message names it (default: config.json's keys)."""
    if held and layers * d_model > held:
        raise error(ModelLoadError, "errors.models_layers_past_weights", source=source, n=f"{layers:,}",
                    d=d_model, size=f"{held:,}", field=field or "num_hidden_layers, n_layer, num_layers")


def weight_bytes(path: Path) -> int:
    """The bytes of a checkpoint's weights: the file ``path``, or a folder's .safetensors and .bin
    files (0 when it has none: the loader names what is missing)."""
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.glob("*") if f.suffix in (".safetensors", ".bin") and f.is_file())


def class_for_config(config: TransformerConfig) -> tuple[type, Family]:
    """``(model class, a family that builds it)`` for ``config``: of the families' classes, the one
    whose declared config class is nearest to ``type(config)`` in its hierarchy; ConfigError when
    no family's class takes this kind of config."""
    mro = type(config).__mro__
    best: typing.Optional[tuple[int, type, Family]] = None
    for family in FAMILIES.values():
        cls = model_class(family)
        want = typing.get_type_hints(cls)["config"]  # the config class it declares (its ``config:`` annotation)
        if want in mro and (best is None or mro.index(want) < best[0]):
            best = (mro.index(want), cls, family)
    if best is None:
        raise error(ConfigError, "errors.models_no_family_for", config=type(config).__name__)
    return best[1], best[2]


def empty_model(config: TransformerConfig) -> torch.nn.Module:
    """A model of ``config`` on the meta device: its module tree without memory or weights."""
    cls, family = class_for_config(config)
    with torch.device("meta"):
        return cls(config, family)
