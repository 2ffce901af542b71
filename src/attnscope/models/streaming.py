"""Models larger than memory, one layer at a time: ``attnscope.load(…, stream_layers=True)``.

A streamed model keeps in memory what every pass needs (the embeddings, the final norm, an untied
output matrix, buffers such as rotary tables) and none of its layers' weights: each parameter of
``layers.N`` is a tensor on the ``meta`` device (a shape and a dtype, no storage). A forward
pre-hook on ``layers.N`` reads that layer's weights from the checkpoint file when the layer is
called, and a forward hook lets them go when it returns, so at any moment one layer's weights are
held, besides the activations.

The weights are read by the same rules and the same dequantisation as the in-memory load (the
family's :class:`~.registry.WeightRule` table, each parameter ``combine``-d from its source
tensors as :func:`.weights.map_weights` does, GGUF through :func:`.gguf.hf_tensor`), one rule at a
time, so every parameter is bit for bit the one ``load(…)`` gives and every kernel runs on the same
numbers. Files are read as they are needed: safetensors through ``safetensors.safe_open``
(memory-mapped, opened for each read: whatever of the mapping a tensor keeps goes with the tensor,
so a dropped layer's pages leave the process with it), GGUF through its mapped file
(:class:`.gguf_file.GGUFFile`, whose pages are dropped after each tensor is dequantized).

Whatever runs a forward pass works unchanged: traces of chosen names, hooks, the statistics of
``analyze``, patching. Two things refuse, with one sentence each: a pass with gradients (the
backward pass would need every layer's weights kept) and generation with a key/value cache (a full
read of the model per new token). Code that reads a layer's weights outside a forward pass (QK/OV
circuits, copying scores) holds it with :meth:`LayerStream.resident`.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Protocol, Sequence

import torch
from torch import nn

from ..errors import InputError, ModelLoadError, fmt_shape
from ..i18n import error
from .gguf import check_complete, gguf_names, hf_tensor, read_gguf_config
from .gguf_file import GGUFFile
from .gguf_model import attach_tokenizer, gguf_file_of
from .model_class import build_model
from .packages import license_notice
from .registry import Family, WeightRule
from .weights import map_weights, normalise_keys

Tensor = torch.Tensor

_LAYER = re.compile(r"^layers\.(\d+)\.")


def layer_index(target: str) -> Optional[int]:
    """N of a state-dict key under ``layers.N.``, else None (a resident weight)."""
    m = _LAYER.match(target)
    return int(m.group(1)) if m else None


class TensorReader(Protocol):
    """Where a streamed model's weights come from: the file's keys, their shapes, and the tensors."""

    shapes: dict[str, tuple[int, ...]]  # the file's key → shape
    paths: list[Path]  # the files read
    mapped: bool  # its tensors can be views of the file's memory mapping

    def read(self, keys: Sequence[str]) -> dict[str, Tensor]: ...


class SafetensorsReader:
    """Tensors of one or several ``.safetensors`` files (a sharded checkpoint), read by key.

    Floating tensors come back as ``dtype`` (float32: the in-memory load copies them into float32
    parameters, the same exact conversion); others as stored, for :func:`.weights.map_weights` to refuse.
    """

    mapped = True  # a float32 tensor is returned as a view of the mapping

    def __init__(self, files: Sequence[Path], dtype: torch.dtype = torch.float32) -> None:
        from safetensors import safe_open

        self.open, self.dtype = safe_open, dtype
        self.paths = list(files)
        self.where: dict[str, Path] = {}
        self.shapes: dict[str, tuple[int, ...]] = {}
        for f in files:
            if f.suffix != ".safetensors":
                raise error(ModelLoadError, "errors.stream_format", path=f)
            try:
                with safe_open(str(f), framework="pt") as h:
                    for k in h.keys():
                        self.where[k] = f
                        self.shapes[k] = tuple(h.get_slice(k).get_shape())
            except Exception as e:  # safetensors raises its own error types; name the file
                raise error(ModelLoadError, "errors.weights_unreadable", path=f, why=f"{type(e).__name__}: {e}") from None

    def read(self, keys: Sequence[str]) -> dict[str, Tensor]:
        out = {}
        for f in dict.fromkeys(self.where[k] for k in keys):
            # opened per read and closed after: the mapping (and the pages it touched) goes with it
            with self.open(str(f), framework="pt") as h:
                for k in keys:
                    if self.where[k] == f:
                        t = h.get_tensor(k)
                        out[k] = t.to(self.dtype) if t.is_floating_point() else t
        return out


class GGUFReader:
    """Tensors of an open GGUF file under their Hugging Face names, dequantized by
    :func:`.gguf.hf_tensor` to ``dtype`` (float32, or float64), the file's pages dropped after."""

    mapped = False  # dequantized into new tensors

    def __init__(self, f: GGUFFile, config: dict, dtype: torch.dtype) -> None:
        self.f, self.config, self.dtype = f, config, dtype
        self.paths = [Path(f.path)]
        self.infos = gguf_names(f)
        self.shapes = {k: tuple(i.shape) for k, i in self.infos.items()}

    #: Stored bytes dequantized per call: the dequantizer's float32 temporaries are a few times
    #: this, so that they stay small beside one of a small model's layers (SmolLM2's is 14 MB).
    CHUNK_BYTES = 64 << 10

    def read(self, keys: Sequence[str]) -> dict[str, Tensor]:
        out = {}
        for k in keys:
            out[k] = hf_tensor(self.f, self.infos[k], self.config, self.dtype, chunk_bytes=self.CHUNK_BYTES)
            self.f.drop_pages(self.infos[k])
        return out


class LayerStream:
    """The hooks that read ``model.layers[N]``'s weights when it runs and drop them after.

    Attributes:
        reads: how many times a layer has been read from the file (one per layer per forward
            pass; ``analyze`` in stream mode reads each layer once per chunk of texts).
        n_layers: the number of streamed layers.
    """

    def __init__(self, model: Any, family: Family, reader: TensorReader, source: str) -> None:
        layers = getattr(model, "layers", None)
        if not isinstance(layers, nn.ModuleList) or getattr(model.config, "kind", "") == "seq2seq":
            raise error(ModelLoadError, "errors.stream_no_layers", name=model.name, family=family.name)
        self.model, self.family, self.reader, self.source = model, family, reader, source
        self.layers: nn.ModuleList = layers
        self.n_layers = len(layers)
        self.reads = 0
        self.move: Optional[Callable[[Tensor], Tensor]] = None  # to the device and dtype asked for
        self.depth = [0] * self.n_layers
        self.stamps = {f: file_stamp(f) for f in reader.paths}  # the files as loaded
        metas = {k: torch.empty(s, device="meta") for k, s in reader.shapes.items()}  # (shape only)
        normal = normalise_keys(metas, family)
        self.raw = dict(zip(normal, reader.shapes)) if len(normal) == len(metas) else \
            {n: r for r in metas for n in normalise_keys({r: metas[r]}, family)}
        self.rules: list[list[WeightRule]] = [[] for _ in range(self.n_layers)]
        resident: list[WeightRule] = []
        params = model.state_dict()
        for rule in family.rules(model.config):
            i = layer_index(rule.target)
            (resident if i is None else self.rules[i]).append(rule)
            self._check(rule, normal, params)
        used = {s for r in family.rules(model.config) for s in r.sources} | {"lm_head.weight"}
        self.unused = sorted(k for k in normal if k not in used)
        for i in range(self.n_layers):
            self.release(i)
        keys = [s for r in resident for s in r.sources] + (["lm_head.weight"] if "lm_head.weight" in normal else [])
        # copies of views of the mapping, which the model keeps for its life: the file cut short after
        # loading killed the process (SIGBUS) at the embeddings, before check_files could say so
        tensors = [v.clone() if reader.mapped else v for v in self._read(keys)]
        map_weights(model, family, dict(zip(keys, tensors)), source, assign=True, only=lambda t: layer_index(t) is None)
        for i, layer in enumerate(layers):
            layer.register_forward_pre_hook(partial(self._enter, i), with_kwargs=True)
            layer.register_forward_hook(partial(self._leave, i), always_call=True)

    def _read(self, keys: Sequence[str]) -> list[Tensor]:
        got = self.reader.read([self.raw[k] for k in keys])
        return [got[self.raw[k]] for k in keys]

    def _check(self, rule: WeightRule, normal: dict, params: dict) -> None:
        """The checks :func:`.weights.map_weights` makes, on shapes alone, before anything is read."""
        for key in rule.sources:
            if key not in normal:
                raise error(ModelLoadError, "errors.models_weight_missing", source=self.source, field=repr(key),
                            target=rule.target, hint="")
        want = params[rule.target].shape
        try:
            got = rule.combine([normal[k] for k in rule.sources]).shape  # meta tensors: no data
        except RuntimeError:
            got = None
        if got != want:
            shapes = ", ".join(f"{k} {fmt_shape(normal[k].shape)}" for k in rule.sources)
            raise error(ModelLoadError, "errors.models_weight_shape", source=self.source, got=shapes,
                        target=rule.target, want=fmt_shape(want))

    # ------------------------------------------------------------------------------------------
    def materialise(self, i: int) -> None:
        """Read layer ``i``'s weights from the file into its parameters, one rule at a time (so
        that the peak is the layer plus one rule's source tensors and their combination)."""
        self.check_files()
        for rule in self.rules[i]:
            tensors = self._read(rule.sources)
            for key, t in zip(rule.sources, tensors):
                if not t.is_floating_point():  # map_weights' own check, worded the same
                    raise error(ModelLoadError, "errors.models_weight_dtype", source=self.source, field=repr(key),
                                dtype=t.dtype)
                if not torch.isfinite(t).all():  # map_weights' own check
                    raise error(ModelLoadError, "errors.gguf_non_finite", path=self.source, name=repr(key))
            value = rule.combine(tensors).contiguous()  # shapes checked when the model was loaded
            del tensors
            if self.move is not None:
                value = self.move(value)
            owner, _, name = rule.target.rpartition(".")
            setattr(self.model.get_submodule(owner), name, nn.Parameter(value, requires_grad=False))
        self.reads += 1

    def check_files(self) -> None:
        """ModelLoadError when a file the layers are read from is not the one loaded (its size,
        modification time or inode changed): a rewritten file would give other numbers silently,
        and reading a memory-mapped file cut short kills the process (SIGBUS)."""
        for f, stamp in self.stamps.items():
            if file_stamp(f) != stamp:
                raise error(ModelLoadError, "errors.stream_file_changed", path=f, name=self.model.name)

    def release(self, i: int) -> None:
        """Layer ``i``'s parameters back to storage-less ``meta`` tensors of the same shape and dtype."""
        for m in self.layers[i].modules():
            for n, p in list(m.named_parameters(recurse=False)):
                setattr(m, n, nn.Parameter(torch.empty(p.shape, dtype=p.dtype, device="meta"), requires_grad=False))

    @contextmanager
    def resident(self, i: int) -> Iterator[nn.Module]:
        """``with stream.resident(3) as layer:`` — layer 3's weights held for the block (and
        across the forward passes inside it)."""
        self._hold(i)
        try:
            yield self.layers[i]
        finally:
            self._drop(i)

    def _hold(self, i: int) -> None:
        if self.depth[i] == 0:
            self.materialise(i)
        self.depth[i] += 1

    def _drop(self, i: int) -> None:
        if self.depth[i] > 0:
            self.depth[i] -= 1
            if self.depth[i] == 0:
                self.release(i)

    def _enter(self, i: int, module: nn.Module, args: tuple, kwargs: dict) -> None:
        if kwargs.get("cache") is not None:
            raise error(InputError, "errors.stream_generation", name=self.model.name)
        if torch.is_grad_enabled() and any(isinstance(a, Tensor) and a.requires_grad
                                           for a in (*args, *kwargs.values())):
            raise error(InputError, "errors.stream_grad", name=self.model.name)
        self._hold(i)

    def _leave(self, i: int, module: nn.Module, args: tuple, output: Any) -> None:
        self._drop(i)


def file_stamp(f: Path) -> Optional[tuple[int, int, int]]:
    """(size, modification time in ns, inode) of ``f``; None when it is gone."""
    try:
        st = f.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns, st.st_ino


def layer_stream(model) -> Optional[LayerStream]:
    """The :class:`LayerStream` of a model loaded with ``stream_layers=True``, else None."""
    stream = getattr(model, "layer_stream", None)
    return stream if isinstance(stream, LayerStream) else None


def attach_stream(model: Any, family: Family, reader: TensorReader, source: str) -> list[str]:
    """Stream ``model``'s layers from ``reader`` (see the module docstring) and load the rest;
    return the checkpoint keys it does not use. The model must have been built without
    initialising its weights (:func:`.model_class.weights_not_initialised`): its layers' storage
    is then never written before it is dropped."""
    stream = LayerStream(model, family, reader, source)
    model.layer_stream = stream
    return_freed_blocks()
    return stream.unused


#: glibc's ``M_MMAP_THRESHOLD`` (malloc.h), and the size it is fixed at for a streamed model.
M_MMAP_THRESHOLD, MMAP_THRESHOLD = -3, 1 << 20


def return_freed_blocks() -> None:
    """Have glibc give blocks of 1 MB or more back to the system as soon as they are freed.

    By default glibc raises its mmap threshold to the size of each large block freed (up to 32 MB),
    so after the first layer is dropped the next layers' tensors come from its heap, whose pages it
    keeps: the peak of a SmolLM2 pass in stream mode varied from 18 to 249 MB between identical
    runs, and was 22–24 MB with the threshold fixed (benchmarks/streaming.py). Fixing the threshold
    (``mallopt``) stops that adjustment for the process. Nothing happens where there is no glibc.
    """
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    except (OSError, AttributeError):
        pass


def finish_streamed(model, device=None, dtype: Optional[torch.dtype] = None):
    """What :func:`.base.finish_loading` does for a streamed model: eval mode, and the resident
    tensors moved to ``device`` / ``dtype`` (floating ones only), each layer moved the same way when
    it is read."""
    model.eval()
    # inference only: no pass builds a graph that would keep every layer's weights (grad=True refuses)
    model.requires_grad_(False)
    if device is None and dtype is None:
        return model
    try:
        device = torch.device(device) if device is not None else None

        def move(t: Tensor) -> Tensor:
            if t.is_meta:
                return t
            return t.to(device=device, dtype=dtype if dtype is not None and t.is_floating_point() else None)

        model._apply(move)
        torch.empty(0).to(device=device, dtype=dtype)  # an unusable device or dtype fails here, not in a pass
    except (RuntimeError, TypeError) as e:
        raise error(ModelLoadError, "errors.models_cannot_move", device=device, dtype=dtype, why=str(e)) from None
    stream = layer_stream(model)
    assert stream is not None
    stream.move = move
    return model


def load_streamed_gguf(path, *, device=None, dtype: Optional[torch.dtype] = None, tokenizer: bool = True):
    """:func:`.gguf_model.load_gguf_model` with ``stream_layers=True``: the same model, its layers
    streamed from the file (kept open, memory-mapped)."""
    package, file = gguf_file_of(path)
    read_dtype = torch.float64 if dtype == torch.float64 else torch.float32
    f = GGUFFile(file)
    source = str(file)
    config_hf, defaults = read_gguf_config(f)
    reader = GGUFReader(f, config_hf, read_dtype)
    check_complete({k: torch.empty(s, device="meta") for k, s in reader.shapes.items()}, config_hf,
                   f.architecture, f.path)
    name = package.name if package is not None else (config_hf.get("_name_or_path") or file.stem)
    model, family = build_model(config_hf, file, str(name), file, empty=True)
    model.unused_weights = attach_stream(model, family, reader, source)
    model.to(read_dtype)  # after the layers became meta tensors: no uninitialised weight is converted
    model.gguf = {"architecture": f.architecture, "qtypes": {k: i.qtype.name for k, i in reader.infos.items()},
                  "defaults": defaults, "license": license_notice(package.name) if package is not None else None}
    if tokenizer:
        from .gguf_tokenizer import tokenizer_from_metadata
        attach_tokenizer(model, tokenizer_from_metadata(f.metadata, f.path), source)
    # the vocabulary's lists are the tokenizer's now; the open file needs only its tensor table
    f.metadata = {k: v for k, v in f.metadata.items() if not (isinstance(v, list) and len(v) > 64)}
    return finish_streamed(model, device, None if dtype == read_dtype else dtype)
