"""Layers across devices: ``attnscope.load(…, device_map=…)``.

A model is cut into three kinds of part, each put on one device:

============  =================================================================================
``embed``     the embeddings (and a decoder's rotary tables, made where the embeddings run)
``layers.i``  layer i (written ``"layers.3"`` or a range ``"layers.0-14"``, both ends included)
``head``      what comes after the last layer: the final norm and an untied output matrix
============  =================================================================================

``device_map`` is either a dict from those names to devices (``"cpu"``, ``"cuda:1"``, a
:class:`torch.device` or a CUDA index, as accelerate writes them) that names every layer once —
``embed`` defaults to layer 0's device and ``head`` to the last layer's — or a list of devices (the
layers cut into as many runs of consecutive layers, as even as they go, the first runs one longer:
TransformerLens' ``n_devices`` split), or ``"balanced"``: that list over every CUDA device here.

Activations follow: a forward pre-hook on each part moves the tensors it is called with (hidden
states, masks, a decoder's rotary cos/sin, keyword arguments) to the part's device, and
the model's output goes to the head's device. A tied output matrix is the token embedding, so
logits come out on the embeddings' device. Hooks and traces work unchanged; a trace's tensors stay
on the device where they were made (layer i's on layer i's device). ``model.placement`` keeps the
map and counts, per part, the calls whose inputs went through its hook (:attr:`Placement.calls`).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Union

import torch

from ..errors import ModelLoadError
from ..i18n import error

Device = Union[str, int, torch.device]

_LAYERS = re.compile(r"layers\.(\d+)(?:-(\d+))?$")


@dataclass
class Placement:
    """Where each part of a model is (see the module docstring).

    Attributes:
        embed, head: the embeddings' and the head's devices.
        layers: one device per layer, in order.
        calls: part name (``"embed"``, ``"layers.3"``, ``"head"``) → how many calls' inputs its hook
            moved (or found on the right device already).
    """

    embed: torch.device
    layers: list[torch.device]
    head: torch.device
    calls: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict[str, str]:
        """``{"embed": …, "layers.0": …, …, "head": …}``, each device as a string."""
        out = {"embed": str(self.embed)}
        out.update({f"layers.{i}": str(d) for i, d in enumerate(self.layers)})
        out["head"] = str(self.head)
        return out


def as_device(value: Any, where: str) -> torch.device:
    """``value`` as a device that exists here, or ModelLoadError naming ``where`` in the map."""
    if isinstance(value, bool) or not isinstance(value, (str, int, torch.device)):
        raise error(ModelLoadError, "errors.h3_device_map_value", where=where, value=repr(value))
    try:
        dev = torch.device("cuda", value) if isinstance(value, int) else torch.device(value)
    except (RuntimeError, ValueError):
        raise error(ModelLoadError, "errors.h3_device_map_value", where=where, value=repr(value)) from None
    if dev.type == "cuda":
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if (dev.index or 0) >= n:
            raise error(ModelLoadError, "errors.h3_device_map_absent", where=where, device=str(dev), n=n)
    elif dev.type not in ("cpu", "meta"):
        try:
            torch.empty(0, device=dev)
        except (RuntimeError, AssertionError):
            raise error(ModelLoadError, "errors.h3_device_map_absent", where=where, device=str(dev), n=0) from None
    return dev


def split_layers(n_layers: int, devices: list[torch.device]) -> list[torch.device]:
    """``n_layers`` cut into ``len(devices)`` runs of consecutive layers, as even as they go (the
    first ``n_layers % len(devices)`` runs one layer longer): one device per layer."""
    k = len(devices)
    base, extra = divmod(n_layers, k)
    out: list[torch.device] = []
    for j, d in enumerate(devices):
        out += [d] * (base + (1 if j < extra else 0))
    return out


def parse_device_map(spec: Any, n_layers: int) -> Placement:
    """A :class:`Placement` of ``n_layers`` layers from ``spec`` (see the module docstring), or
    ModelLoadError in one sentence: an unknown part, a layer out of range or named twice, layers
    not covered, a device that is not one or is not here."""
    if isinstance(spec, str) and spec == "balanced":
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if n == 0:
            raise error(ModelLoadError, "errors.h3_device_map_no_cuda")
        spec = [f"cuda:{i}" for i in range(n)]
    if isinstance(spec, (list, tuple)):
        if not spec:
            raise error(ModelLoadError, "errors.h3_device_map_empty")
        devices = [as_device(d, f"[{i}]") for i, d in enumerate(spec)]
        layers = split_layers(n_layers, devices)
        return Placement(embed=devices[0], layers=layers, head=layers[-1] if layers else devices[-1])
    if not isinstance(spec, dict):
        raise error(ModelLoadError, "errors.h3_device_map_type", got=type(spec).__name__)
    at: dict[int, torch.device] = {}
    ends: dict[str, torch.device] = {}
    for key, value in spec.items():
        name = str(key).strip()
        dev = as_device(value, repr(name))
        if name in ("embed", "head"):
            ends[name] = dev
            continue
        m = _LAYERS.match(name)
        if m is None:
            raise error(ModelLoadError, "errors.h3_device_map_key", part=repr(key), last=n_layers - 1)
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo or hi >= n_layers:
            raise error(ModelLoadError, "errors.h3_device_map_range", part=repr(key), n=n_layers, last=n_layers - 1)
        for i in range(lo, hi + 1):
            if i in at:
                raise error(ModelLoadError, "errors.h3_device_map_twice", layer=i, part=repr(key))
            at[i] = dev
    missing = [i for i in range(n_layers) if i not in at]
    if missing:
        raise error(ModelLoadError, "errors.h3_device_map_missing", layers=_runs(missing), n=n_layers)
    layers = [at[i] for i in range(n_layers)]
    return Placement(embed=ends.get("embed", layers[0]), layers=layers, head=ends.get("head", layers[-1]))


def _runs(ids: list[int]) -> str:
    """``[0, 1, 2, 5]`` → ``"layers.0-2, layers.5"``: the map's own way of writing layers."""
    out, start = [], ids[0]
    for k, a in enumerate(ids):
        if k + 1 == len(ids) or ids[k + 1] != a + 1:
            out.append(f"layers.{start}" if start == a else f"layers.{start}-{a}")
            if k + 1 < len(ids):
                start = ids[k + 1]
    return ", ".join(out)


def move(x: Any, device: torch.device) -> Any:
    """``x`` with every tensor in it (in tuples, lists and dict values too) on ``device``."""
    if isinstance(x, torch.Tensor):
        return x.to(device)
    if isinstance(x, (tuple, list)):
        return type(x)(move(t, device) for t in x)
    if isinstance(x, dict):
        return {k: move(v, device) for k, v in x.items()}
    return x


class MoveInputs:
    """A forward pre-hook (``with_kwargs=True``): the call's tensors to ``device``, counted under ``part``."""

    def __init__(self, placement: Placement, part: str, device: torch.device) -> None:
        self.placement, self.part, self.device = placement, part, device

    def __call__(self, module, args, kwargs):
        self.placement.calls[self.part] += 1
        return move(args, self.device), move(kwargs, self.device)


class MoveOutput:
    """A forward hook: the model's output (or the first item of a tuple) to ``device``."""

    def __init__(self, device: torch.device) -> None:
        self.device = device

    def __call__(self, module, args, output):
        if isinstance(output, tuple) and output:
            return (move(output[0], self.device), *output[1:])
        return move(output, self.device)


def place(model, spec: Any):
    """Put ``model``'s parts on the devices ``spec`` says and hook the moves between them; returns
    ``model`` with ``model.placement`` set. ModelLoadError for a model this cannot cut (an
    encoder–decoder, DeBERTa, layers that share weights) or a bad ``spec``."""
    layers = getattr(model, "layers", None)
    kind = getattr(model.config, "kind", "")
    if (kind == "seq2seq" or not isinstance(layers, torch.nn.ModuleList) or not hasattr(model, "embed")
            or hasattr(model, "rel_embeddings") or type(model).__name__ == "DebertaModel"):
        raise error(ModelLoadError, "errors.h3_device_map_family", name=model.name, family=model.family)
    p = parse_device_map(spec, len(layers))
    owner: dict[int, int] = {}
    for i, layer in enumerate(layers):
        for t in layer.parameters():
            if owner.setdefault(id(t), i) != i and p.layers[owner[id(t)]] != p.layers[i]:
                # ALBERT's layers share one set of weights: they can only sit together
                raise error(ModelLoadError, "errors.h3_device_map_shared", a=owner[id(t)], b=i)
    on_meta = [part for part, dev in p.as_dict().items() if dev == "meta"]
    if on_meta:  # shapes without numbers: the weights moved there would be lost
        raise error(ModelLoadError, "errors.h3_device_map_meta", part=repr(on_meta[0]))
    try:
        model.to(p.head)  # the head and anything else outside the layers and embeddings
        model.embed.to(p.embed)
        for layer, dev in zip(layers, p.layers):
            layer.to(dev)
    except (RuntimeError, TypeError) as e:
        raise error(ModelLoadError, "errors.models_cannot_move", device=p.as_dict(), dtype=None, why=str(e)) from None
    model.embed.register_forward_pre_hook(MoveInputs(p, "embed", p.embed), with_kwargs=True)
    for i, (layer, dev) in enumerate(zip(layers, p.layers)):
        layer.register_forward_pre_hook(MoveInputs(p, f"layers.{i}", dev), with_kwargs=True)
    ln_f = getattr(model, "ln_f", None)
    if isinstance(ln_f, torch.nn.Module):
        ln_f.register_forward_pre_hook(MoveInputs(p, "head", p.head), with_kwargs=True)
    model.register_forward_hook(MoveOutput(p.head))
    model.placement = p
    return model


__all__ = ["Placement", "parse_device_map", "place", "split_layers"]
