"""How much memory a trace will take, before it runs: :func:`estimate_trace_memory` and ``max_memory``.

    >>> attnscope.trace.estimate_trace_memory(model, 2048)            # bytes, every name, one text
    >>> model.trace(text, max_memory="2GB")    # InputError with the estimate if it would not fit

What a trace keeps is found by tracing the same names on three tiny inputs (4, 8 and 12 tokens of
one repeated id, the same batch size) and fitting ``a·L² + b·L + c`` to the bytes each holds
(:attr:`Trace.nbytes`: every stored tensor is (B, …, L[, L]) or constant, so the fit is exact; steps
kept as their recipe count as the tensors they are computed from). The estimate of the peak above
the loaded model is then

    1.2 × what the trace keeps  +  1.5 × one layer's own steps  +  1 L×S matrix of one layer
                                                                   (only where a layer forms its
                                                                   scores, scaled or masked)

The factor stands for the allocator: the temporaries that each layer frees (the fused q/k/v and
the MLP's first product) leave holes between the kept tensors that the next layers do not fill.
One layer's own steps (the bytes one replayed layer of a trace of every name gives: q, k, v, the
FFN's hidden, … — linear in L) are what the layer running at the peak holds besides. A layer
forms an L×S matrix besides the kept ones only on the explicit path
(:func:`attnscope.kernels.dense.steps`), which recording (or hooking) ``scores``, ``scaled`` or
``masked`` asks for; the fused kernel and the weights-only path hold none beyond what is kept.

A trace of every name keeps its layers as replays (:mod:`attnscope.trace.replay`): what it keeps
is then mostly the L×S scores and the residual stream, and the holes scale with the steps each
layer computes and frees rather than with what is kept. Its estimate is

    what the trace keeps  +  1 L×S matrix  +  0.2 × layers × the bytes of one layer's other steps

(the bytes one replayed layer gives, fitted from the same probes; the one matrix is ``scaled``,
over which such a trace writes ``masked`` and ``weights``: :func:`attnscope.kernels.dense.steps`).
The 0.2 is measured, not derived: peak resident memory in a fresh process above the loaded model,
after one plain forward of the same length (the matrix kernels' work space, about 2-6 MiB kept for
the process's life, belongs to the model, not to the trace), the median of three runs:
SmolLM2 at 128/256/512 tokens 47.4/152.9/402.9 MiB (estimate +11/−9/+4 %), MiniLM at
200/256/384/512 23.3/34.2/65.8/108.0 MiB (−4/−3/0/+1 %); a single run moves by up to ±10 %
(glibc's heap keeps the holes a trace leaves). tests/trace/test_memory.py holds this formula to 20 %,
or 10 MiB on small traces: SmolLM2 at 128 tokens once peaked at 43.5 MiB (estimate +20.3 %).

The first formula against the peak, estimate ÷ peak measured the same way (MiniLM the median of
three runs, SmolLM2 two), float32 — before the layer's own steps were counted and the matrices
made to depend on the path, the same cases ranged 0.47–2.18:

    names                  MiniLM 256 / 512 tokens    SmolLM2 256 / 1024 tokens (two runs)
    layers.*.attn.scores   1.14 / 1.12                0.75–1.10 / 1.10–1.15
    layers.*.attn.weights  1.05 / 1.15                0.83–0.86 / 1.09–1.11
    layers.*.out           0.99 / 1.00                0.78–0.82 / 0.56–0.58 (1.16 in a third)
    three single names     0.81 / 1.00                0.74–0.75 / 0.80–0.89

It is low where one layer's temporaries and the holes of 30 layers' small kept tensors outweigh
what is kept (SmolLM2 at 256 tokens: by 5 to 20 MiB).

A single peak of these traces moves by up to ±30 % between runs, more than for a trace of every
name (SmolLM2's layers.*.out at 1024 tokens: 267 to 548 MB with the same code). The test holds
MiniLM's medians to 30 %.

In float16 and bfloat16 a trace of every name holds more: its steps are not written over each
other (:func:`attnscope.kernels.dense.writable`) and the softmax works in float32 (a float32 copy of
its input and its float32 result), so a layer holds besides what is kept 2 more L×S matrices of the
dtype and 2 of float32: MiniLM in float16 at 256/512 tokens 22.2/87.4 MiB (estimate +15/+3 % with
them, −25/−38 % without), in bfloat16 at 512 80.5 MiB (+12 %), single runs.
"""

from __future__ import annotations

import re
from typing import Optional, Union

import torch

from ..errors import InputError
from ..i18n import Msg, error
from ..kernels.backend import MATRIX_STEPS
from ..kernels.dense import LOW_PRECISION
from ..tokenizer import Batch

#: The lengths of the probe traces.
PROBES = (4, 8, 12)
#: What the allocator adds to the kept bytes (see the module docstring).
ALLOCATOR = 1.2
#: The L×S matrices one layer's explicit path holds besides what the trace keeps.
TRANSIENT_MATRICES = 1
#: How many times one layer's own steps the running layer holds besides what the trace keeps.
LAYER_STEPS = 1.5
#: The steps that make a layer take the explicit path, which forms the L×S matrices.
EXPLICIT_STEPS = frozenset(MATRIX_STEPS) - {"weights"}
#: The same for a trace of every name (replayed): ``scaled`` only, masked and weights written over it.
TRANSIENT_IN_PLACE = 1
#: What half precision adds (see the module docstring): L×S matrices of the dtype, and of float32.
HALF_MATRICES, HALF_FLOAT32_MATRICES = 2, 2
#: The share of a replayed layer's other steps (q, k, v, the FFN's hidden, …) that each layer of
#: a replayed trace leaves as holes (see the module docstring).
HOLES = 0.2

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "k": 2**10, "m": 2**20, "g": 2**30}


def parse_memory(value: Union[int, float, str]) -> int:
    """Bytes from ``value``: a number of bytes, or text like ``"2GB"``, ``"1.5 GiB"``, ``"500MB"``
    (kB/MB/GB/TB decimal, KiB/MiB/GiB/TiB and K/M/G binary)."""
    if isinstance(value, bool):
        raise error(InputError, "errors.trace_memory_type", value=repr(value))
    if isinstance(value, (int, float)):
        n = float(value)
    elif isinstance(value, str):
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", value)
        if not m or m.group(2).lower() not in _UNITS:
            raise error(InputError, "errors.trace_memory_size", value=repr(value))
        n = float(m.group(1)) * _UNITS[m.group(2).lower()]
    else:
        raise error(InputError, "errors.trace_memory_type", value=type(value).__name__)
    if not n > 0 or n != n or n == float("inf"):
        raise error(InputError, "errors.trace_memory_positive", value=repr(value))
    return int(n)


def fmt_bytes(n: float) -> str:
    """``1.23 GB`` / ``456 MB`` / ``12 kB`` (decimal units)."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} bytes"


def _probe_batch(model, B: int, L: int) -> Batch:
    ids = torch.full((B, L), min(5, int(model.config.vocab_size) - 1), dtype=torch.long)
    return Batch(ids, torch.ones_like(ids), torch.zeros_like(ids), [[""] * L] * B, [""] * B)


def _probes(model, names, batch: int, hooks: Optional[dict]) -> tuple[list[float], list[float], bool]:
    """For each probe length: the bytes the trace keeps, and the bytes of the steps one layer
    gives when it is replayed (0 when nothing is replayed: :mod:`attnscope.trace.replay`); and
    whether a layer takes the explicit path (a step of EXPLICIT_STEPS recorded or hooked)."""
    idle = {n: (lambda t, name: None) for n in (hooks or {})}
    kept, layer = [], []
    explicit = any(_step(p) in EXPLICIT_STEPS for p in idle)
    for n in PROBES:
        tr = model.trace(_probe_batch(model, batch, n), names=names, hooks=idle)
        kept.append(float(tr.nbytes))
        replays = {id(r): r for r in tr.replays}
        layer.append(max((float(sum(tr[s].numel() * tr[s].element_size() for s in r.steps)) for r in replays.values()),
                         default=0.0))
        explicit = explicit or any(_step(name) in EXPLICIT_STEPS for name in tr.names)
        del tr
    return kept, layer, explicit


def _step(name: str) -> str:
    """``scores`` of ``layers.3.attn.scores[2]`` (a name or a pattern)."""
    return name.rsplit(".", 1)[-1].split("[", 1)[0]


def _at(sizes: list[float], L: int) -> int:
    """The quadratic through the probes' three points (Newton's divided differences), at L."""
    (x0, x1, x2), (y0, y1, y2) = PROBES, sizes
    d1, d2 = (y1 - y0) / (x1 - x0), (y2 - y1) / (x2 - x1)
    a = (d2 - d1) / (x2 - x0)
    return max(0, int(round(y0 + d1 * (L - x0) + a * (L - x0) * (L - x1))))


def kept_bytes(model, L: int, names=None, *, batch: int = 1, hooks: Optional[dict] = None) -> int:
    """The bytes a trace of ``batch`` texts of ``L`` tokens keeps (:attr:`Trace.nbytes`), from three
    probe traces (see the module docstring). ``hooks`` are attached as no-ops to the same names (a
    hooked attention block keeps its steps as tensors)."""
    return _at(_probes(model, names, batch, hooks)[0], L)


def estimate_trace_memory(model, L: int, names=None, *, batch: int = 1, hooks: Optional[dict] = None) -> int:
    """Bytes of memory that ``model.trace`` of ``batch`` texts of ``L`` tokens recording ``names``
    (None: all) is estimated to take at its peak, above the loaded model; see the module docstring."""
    if isinstance(L, bool) or not isinstance(L, int) or L < 1:
        raise error(InputError, "errors.trace_L", value=repr(L))
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise error(InputError, "errors.trace_batch", value=repr(batch))
    kept_sizes, layer_sizes, explicit = _probes(model, names, batch, hooks)
    kept, layer = _at(kept_sizes, L), _at(layer_sizes, L)
    c = model.config
    dtype = next(model.parameters()).dtype
    matrix = batch * int(c.n_heads) * L * L * dtype.itemsize  # one layer's (B, H, L, L)
    half = HALF_MATRICES * matrix + HALF_FLOAT32_MATRICES * (matrix // dtype.itemsize) * 4 \
        if dtype in LOW_PRECISION else 0
    if layer:  # replayed: the layers' temporaries, not the kept tensors, leave the holes
        return int(kept + TRANSIENT_IN_PLACE * matrix + HOLES * int(c.n_layers) * layer + half)
    own = _at(_probes(model, None, batch, None)[1], L)  # one layer's steps (0 where nothing can be replayed)
    return int(ALLOCATOR * kept + LAYER_STEPS * own + (TRANSIENT_MATRICES * matrix if explicit else 0))


def check_fits(model, batch: Batch, names, hooks, max_memory) -> None:
    """InputError (one sentence with the estimate) when the trace would not fit in ``max_memory``."""
    limit = parse_memory(max_memory)
    B, L = batch.input_ids.shape
    need = estimate_trace_memory(model, int(L), names, batch=int(B), hooks=hooks)
    if need > limit:
        what = Msg("errors.trace_every_name" if names is None else "errors.trace_these_names")
        raise error(InputError, "errors.trace_too_big" if B > 1 else "errors.trace_too_big_one", B=B, L=L, what=what,
                    need=fmt_bytes(need), limit=fmt_bytes(limit))
