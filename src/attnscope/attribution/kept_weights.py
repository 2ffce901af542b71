"""Each layer's attention weights kept by a hook while the pass runs, written at once in the layout
GlobEnc's and ALTI's pair loop reads (:func:`.pair_norms.transpose_into`: ``(H, L_j, L_i)``), all
layers in one buffer that the kernel is asked to back with huge pages.

Why: recorded by the trace, each layer's weights ``(H, L, L)`` are made in fresh memory and held
to the end of the pass — at 510 tokens on MiniLM 75 MB in 4 KiB pages, about 19,000 page faults a
call, each paging in a zeroed page. Kept by the hook, a layer's softmax output is freed when the
layer ends (the next layer's reuses its memory), and its transpose lands in a buffer given 2 MiB
pages (``madvise(MADV_HUGEPAGE)``; Linux only, and only where transparent huge pages are not off —
elsewhere plain pages, the same numbers). The lanes then read each layer's columns in place
instead of transposing them. MiniLM at 510 tokens, 2 threads, one process, alternating rounds on
a loaded machine: ALTI / forward 2.91 → 2.75 (first touch of 75 MB, one thread: 32 ms in 4 KiB
pages, 15 ms in 2 MiB pages). A library advising on memory it allocated itself leaves the
process's allocator as it was.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Optional

import torch

from ..threads import map_lanes
from . import pair_norms as PN

Tensor = torch.Tensor

HUGE_PAGE = 2 << 20  # bytes: x86-64's and AArch64's (4 KiB granule) transparent huge page
MADV_HUGEPAGE = 14  # <sys/mman.h> on Linux


def advise_huge_pages(t: Tensor) -> bool:
    """Ask the kernel to back the whole huge pages inside ``t``'s memory with huge pages (Linux,
    CPU tensors; before they are first written, so that they are made so). True where it agreed."""
    if t.device.type != "cpu" or not sys.platform.startswith("linux"):
        return False
    start = (t.data_ptr() + HUGE_PAGE - 1) // HUGE_PAGE * HUGE_PAGE
    end = (t.data_ptr() + t.nbytes) // HUGE_PAGE * HUGE_PAGE
    if end <= start:
        return False
    madvise = getattr(ctypes.CDLL(None), "madvise", None)
    if madvise is None:
        return False
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return madvise(start, end - start, MADV_HUGEPAGE) == 0


class KeptWeights:
    """The hook ``{pattern: self.keep}`` for a trace of one text, and the trace it then reads
    (:meth:`trace`): the weights of every ``{prefix}.{i}.attn.weights`` as ``(1, H, L, L)`` views of
    a column-major buffer (:func:`.pair_norms.is_column_major`), the model's device and dtype."""

    def __init__(self, prefix: str, n_layers: int):
        self.prefix, self.n_layers = prefix, n_layers
        self.pattern = f"{prefix}.*.attn.weights"
        self.buffer: Optional[Tensor] = None  # (n_layers, H, L_j, L_i), made at the first layer
        self.kept: dict[str, Tensor] = {}  # trace name → (1, H, L_i, L_j), a view of the buffer

    def keep(self, w: Tensor, name: str) -> None:  # w (1, H, L, S) as the layer made it
        i = int(name[len(self.prefix) + 1:].split(".")[0])
        H, L, S = w.shape[1:]
        if self.buffer is None:
            self.buffer = w.new_empty(self.n_layers, H, S, L)
            advise_huge_pages(self.buffer)
        out, w0 = self.buffer[i], w[0].contiguous()  # (H, S, L), (H, L, S)
        # the heads in two halves side by side: the pass's other thread would wait anyway (1.6 ms a
        # layer on one thread at 510 tokens on MiniLM; torch's strided copy takes 3-8 ms on two)
        halves = [range(0, H // 2), range(H // 2, H)] if H > 1 else [range(H)]
        if not all(map_lanes(lambda h: PN.transpose_into(w0, out, h), halves, w.device)):
            out.copy_(w0.transpose(1, 2))  # another device or dtype, or no compiler
        self.kept[name] = out.transpose(1, 2).unsqueeze(0)  # (1, H, L, S)

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
