"""Each layer's attention weights kept by a hook while the pass runs, written at once in the layout
GlobEnc's and ALTI's pair loop reads (:func:`.pair_norms.transpose_into`: ``(H, L_j, L_i)``), all
layers in one buffer that the next call reuses.

Why: recorded by the trace, each layer's weights ``(H, L, L)`` are made in fresh memory and held to
the end of the pass — at 510 tokens on MiniLM 75 MB, about 18,000 page faults a call, each paging
in a zeroed page — and the lanes then transpose each layer into fresh memory again. Kept by the
hook, a layer's softmax output is freed when the layer ends (the next layer's reuses its memory),
its transpose lands in the buffer, and the lanes read each layer's columns in place. The buffer is
handed on to the next call (CPU, at most :data:`SPARE_BYTES`; :func:`release` frees it), so a
second call pays no first touch. MiniLM at 510 tokens, 2 threads, one process, alternating rounds,
quiet machine: ALTI / forward 3.19 with the weights recorded, 2.86 kept. Asking for huge pages
(``madvise(MADV_HUGEPAGE)``) for the buffer was tried: no difference once it is reused, and a first
call that may wait on the kernel compacting memory.
"""

from __future__ import annotations

import math
import threading
from typing import Optional

import torch

from ..threads import map_lanes
from . import pair_norms as PN

Tensor = torch.Tensor

#: The largest CPU buffer kept between calls (:func:`take_buffer`, :func:`release`).
SPARE_BYTES = 256 << 20
SPARE: dict[torch.dtype, Tensor] = {}  # dtype → the flat CPU buffer the last call gave back
SPARE_LOCK = threading.Lock()


def take_buffer(n: int, like: Tensor) -> Tensor:
    """A flat buffer of at least ``n`` elements on ``like``'s device and dtype: on the CPU the one
    the last call gave back (:meth:`KeptWeights.give_back`) where that is large enough, else a fresh
    one. A fresh buffer costs its first touch again: at 510 tokens on MiniLM 75 MB, about 18,000
    page faults, 20–30 ms of a 240 ms call."""
    flat = None
    if like.device.type == "cpu":
        with SPARE_LOCK:
            flat = SPARE.pop(like.dtype, None)  # taken: two calls at once never share it
    if flat is None or flat.numel() < n:
        # a plain tensor even under torch.inference_mode(): an inference tensor, handed on, could
        # not be written in place by a later call outside that mode (RuntimeError in out.copy_)
        with torch.inference_mode(False):
            flat = like.new_empty(n)
    return flat


def release() -> None:
    """Free the buffers kept between calls (at most :data:`SPARE_BYTES` of CPU memory per dtype)."""
    with SPARE_LOCK:
        SPARE.clear()


class KeptWeights:
    """The hook ``{pattern: self.keep}`` for a trace of one text, and the trace it then reads
    (:meth:`trace`): the weights of every ``{prefix}.{i}.attn.weights`` as ``(1, H, L, L)`` views of
    a column-major buffer (:func:`.pair_norms.is_column_major`), the model's device and dtype."""

    def __init__(self, prefix: str, n_layers: int):
        self.prefix, self.n_layers = prefix, n_layers
        self.pattern = f"{prefix}.*.attn.weights"
        self.flat: Optional[Tensor] = None  # the memory of the buffer (take_buffer), taken at the first layer
        self.buffer: Optional[Tensor] = None  # (n_layers, H, L_j, L_i), its start
        self.kept: dict[str, Tensor] = {}  # trace name → (1, H, L_i, L_j), a view of the buffer

    def keep(self, w: Tensor, name: str) -> None:  # w (1, H, L, S) as the layer made it
        i = int(name[len(self.prefix) + 1:].split(".")[0])
        H, L, S = w.shape[1:]
        if self.buffer is None:
            shape = (self.n_layers, H, S, L)
            self.flat = take_buffer(math.prod(shape), w)
            self.buffer = self.flat[:math.prod(shape)].view(shape)
        out, w0 = self.buffer[i], w[0].contiguous()  # (H, S, L), (H, L, S)
        # the heads in two halves side by side: the pass's other thread would wait anyway (1.6-3 ms a
        # layer on one thread at 510 tokens on MiniLM; torch's strided copy takes 3-8 ms on two)
        halves = [range(0, H // 2), range(H // 2, H)] if H > 1 else [range(H)]
        if not all(map_lanes(lambda h: PN.transpose_into(w0, out, h), halves, w.device)):
            out.copy_(w0.transpose(1, 2))  # another device or dtype, or no compiler
        self.kept[name] = out.transpose(1, 2).unsqueeze(0)  # (1, H, L, S)

    def give_back(self) -> None:
        """Hand the buffer on to the next call (CPU, at most :data:`SPARE_BYTES`); the views
        :meth:`trace` served must not be used after."""
        flat, self.flat, self.buffer, self.kept = self.flat, None, None, {}
        if flat is not None and flat.device.type == "cpu" and flat.nbytes <= SPARE_BYTES:
            with SPARE_LOCK:
                old = SPARE.get(flat.dtype)
                if old is None or old.numel() < flat.numel():
                    SPARE[flat.dtype] = flat

    def trace(self, tr) -> "WithKept":
        return WithKept(tr, self.kept)


class WithKept:
    """A trace with the weights a :class:`KeptWeights` hook kept: ``tr[name]`` serves them as the
    trace serves its own recorded names; everything else is the trace's."""

    def __init__(self, tr, kept: dict[str, Tensor]):
        self.tr, self.kept = tr, kept

    def __getitem__(self, name: str) -> Tensor:
        return self.kept[name] if name in self.kept else self.tr[name]

    def __getattr__(self, attr: str):
        return getattr(self.tr, attr)
