"""GlobEnc's and ALTI's two numbers per token pair, read off a walked attention block
(:func:`.factored.walk`), and the two methods.

:func:`block_matrices` writes W and G once in the layout its products read (the factors
applied: :func:`column_major`) and takes ``T`` a chunk of columns (source tokens j) by a block of
rows at a time (about :data:`CHUNK_ELEMENTS` floats): one batched product over the rows that can be nonzero — the chunk's
own tokens and the rows whose W reaches them (a causal or windowed layer's other tokens give
``T_i(x_j) = 0`` exactly, so GlobEnc's norm and ALTI's ``‖y_i‖₁ − ‖y_i − 0‖₁`` are 0 there) — and
both norms are read while the chunk is in cache; the residual's own part (the diagonal) is added
once a layer after the chunks. Memory O(K·L² + K·L·d + CHUNK_ELEMENTS) instead of O(L²·d); float32 as the
trace, the same formulas as :mod:`.decompose` (the tests compare both with a float64 loop).

On a CPU in float32 the pairs of a :class:`~.factored.Factored` block are read by the compiled loop
of :mod:`.pair_norms` instead (each pair's vector made and reduced in registers); the torch path
above remains for other devices and dtypes, for a written-out block, and where no C compiler is.
"""

from __future__ import annotations

from typing import Optional

import torch

from ..threads import map_lanes
from . import decompose as DC
from . import pair_norms as PN
from .base import Attribution, AttributionMethod, register_method
from .factored import Block, Factored, Written, trace_names, walk
from .kept_weights import KeptWeights
from .norm_methods import last, normalise_rows, trace_one

Tensor = torch.Tensor

#: floats of ``T`` per chunk of columns and torch thread (1 MiB in float32: a thread's share stays in
#: its core's L2 cache, 2.5 MiB on the project's machine, while both norms read it); MiniLM at 128
#: tokens, one thread, ALTI's six layers (CPU time, min of 7, loaded machine): 2^15 66 ms, 2^16 66, 2^17 56,
#: 2^18 56 (half the ops of 2^17), 2^19 63.
CHUNK_ELEMENTS = 1 << 18

#: rows i per chunk: the ``y[rows]`` a chunk subtracts stays small beside ``T`` (MiniLM at 510
#: tokens, one thread: ``T − y`` over a whole column 29 ms a layer, over 128-row blocks 17 ms).
ROW_BLOCK = 128


def reach(W: Tensor) -> tuple[list[int], list[int]]:
    """Per row i, the first and one past the last column j with any ``W[g, i, j] ≠ 0`` or j = i (per
    column j the rows: ``reach(W.transpose(-1, -2))``)."""
    L = W.shape[-1]
    nz = W.abs().amax(0) != 0  # (L, L): a reduction over the outer axis, vectorised along the rows
    if bool(nz.all()):  # every pair (a bidirectional encoder): no search
        return [0] * L, [L] * L
    nz.fill_diagonal_(True)
    first = nz.int().argmax(-1)  # (L,)
    stop = L - nz.flip(-1).int().argmax(-1)  # (L,)
    return first.tolist(), stop.tolist()


def column_major(block: Factored) -> tuple[Tensor, Tensor]:
    """W and G in the layout each column j's product reads, the rows' scale and O applied on the way:
    ``Wc (K, L_j, L_i)`` (its ``permute(1, 2, 0)[j]`` is column j's (L_i × K) matrix, strides (1, L²):
    a transposed operand BLAS reads as it is) and ``Gt (L_j, K, d)``, a view of G (K, L, d) (column
    j's (K × d) matrix with row stride L·d, read as it is too). One pass over each: transposing W
    whole (a 2-D transpose per head) costs about half of moving K innermost."""
    K, L, _ = block.W.shape
    Wc = block.W.new_empty(K, L, L)
    if block.rows is None:
        Wc.copy_(block.W.transpose(1, 2))
    else:
        torch.mul(block.W.transpose(1, 2), block.rows, out=Wc)  # [g, j, i] = W[g, i, j]·rows[i]
    return Wc, block.vectors().transpose(0, 1)  # vectors(): one bmm (K, L, r)·(K, r, d) with O


def own_share(block: Factored) -> Tensor:
    """``T_i(x_i)`` (L, d): the diagonal's share with the residual's own part, from W's diagonal
    (the rows' scale applied), G and O — the same for both paths. With O, one product
    ``(L, K·r)·(K·r, d)`` of the scaled G and the stacked O, no ``(K, L, d)`` temporary: MiniLM at
    510 tokens, one thread, one process, 2.1–2.5 ms against 2.7–2.9 ms for scaling ``vectors()``
    and summing over K."""
    Wd = block.W.diagonal(dim1=1, dim2=2)  # (K, L): W[g, i, i]
    if block.rows is not None:
        Wd = Wd * block.rows
    scaled = Wd.unsqueeze(-1) * block.G  # (K, L, r)
    if block.O is None:
        return scaled.sum(0) + block.own  # (L, d)
    K, L, r = scaled.shape
    return scaled.transpose(0, 1).reshape(L, K * r) @ block.O.reshape(K * r, -1) + block.own  # (L, d)


def write_diagonal(Td: Tensor, y: Tensor, norms: Optional[Tensor], dist: Optional[Tensor]) -> None:
    """``T_i(x_i) (L, d)``'s norm and L1 distance to ``y_i`` on the diagonals of ``norms``, ``dist``."""
    idx = torch.arange(y.shape[0], device=y.device)
    if norms is not None:
        norms[idx, idx] = torch.linalg.vector_norm(Td, 2, dim=-1)
    if dist is not None:
        dist[idx, idx] = (Td - y).abs().sum(-1)


def compiled_pairs(block: Factored, y: Tensor, norms: Optional[Tensor], dist: Optional[Tensor]) -> bool:
    """Both results by the compiled loops (:mod:`.pair_norms`: W's columns — read in place when the
    hook of :mod:`.kept_weights` already wrote them so, else transposed — with each column's reach,
    then the pairs), the diagonal included; False (nothing trusted) where they are not available.
    The rows' scale is applied inside the pair loop, so W is at most transposed."""
    cols = PN.columns(block.W)
    if cols is None:
        return False
    Wc, first, stop = cols  # (K, L_j, L_i), (L_j,), (L_j,)
    V = block.vectors()  # (K, L_j, d)
    for out, l1 in ((norms, False), (dist, True)):
        if out is not None and not PN.pair_norms(Wc, V, y, block.rows, first, stop, l1, out):
            return False
    write_diagonal(own_share(block), y, norms, dist)
    return True


@torch.no_grad()
def block_matrices(block: Block, methods: tuple[str, ...], elements: Optional[int] = None,
                   rows: int = ROW_BLOCK, compiled: bool = True) -> dict[str, Tensor]:
    """``{"globenc": ‖T_i(x_j)‖₂, "alti": max(0, ‖y_i‖₁ − ‖y_i − T_i(x_j)‖₁)}`` (those in ``methods``),
    (L, L) each, rows not normalised; y = ``block.total()`` (bias included).

    On a CPU in float32 a :class:`Factored` block is read by the compiled loop of :mod:`.pair_norms`
    (``compiled=False``, no compiler or ``ATTNSCOPE_COMPILED=0``: not). Otherwise with torch ops:
    ``T`` is made a chunk at a time in one buffer, reused (a fresh one a chunk costs its pages
    again): ``rows`` rows i (default :data:`ROW_BLOCK`) by as many columns j as fit in about
    ``elements`` floats (default :data:`CHUNK_ELEMENTS` per torch thread — each core has its own L2
    — at least one column), and only the rows those columns reach. Columns, not rows, batch the
    product: each column's ``G[:, j]`` is read by one small matrix product (rows × K)·(K × d), and
    the chunk's results land in whole rows of the column-major results; a block of rows keeps the
    ``y`` each chunk subtracts small."""
    y = block.total()  # (L, d)
    L, d = y.shape
    y1 = y.abs().sum(-1)  # (L,) ‖y_i‖₁, summed as ‖y_i − T‖₁ is below: T = 0 gives 0, not rounding noise
    # column-major [j, i]; a pair no chunk reaches has T_i(x_j) = 0: norm 0, L1 distance ‖y_i‖₁
    norms = y.new_zeros(L, L) if "globenc" in methods else None
    dist = y1.expand(L, L).clone() if "alti" in methods else None
    if not (compiled and isinstance(block, Factored) and compiled_pairs(block, y, norms, dist)):
        torch_pairs(block, y, norms, dist, elements, rows)
    out = {}
    if norms is not None:
        out["globenc"] = norms.T.contiguous()  # (L, L), row = i
    if dist is not None:
        out["alti"] = (y1[:, None] - dist.T).clamp_(min=0)  # (L, L), row = i
    return out


def torch_pairs(block: Block, y: Tensor, norms: Optional[Tensor], dist: Optional[Tensor], elements: Optional[int],
                rows: int) -> None:
    """:func:`block_matrices`' torch path: ``norms`` and ``dist`` (column-major) filled chunk by chunk."""
    L, d = y.shape
    if elements is None:  # fewer, larger chunks with more threads: each small op wakes them all
        elements = CHUNK_ELEMENTS * torch.get_num_threads()
    n = max(1, min(rows, L))
    cols = max(1, elements // (n * d))
    buf = y.new_empty(cols * n * d)
    if isinstance(block, Written):
        first, stop = [0] * L, [L] * L
        At = Gt = buf
    else:
        Wc, Gt = column_major(block)
        first, stop = reach(Wc)  # per column j, the rows i it reaches
        At = Wc.permute(1, 2, 0)  # (L_j, L_i, K)
    for r0 in range(0, L, n):
        r1 = min(L, r0 + n)
        for a in range(0, L, cols):
            b = min(L, a + cols)
            lo, hi = max(r0, min(first[a:b] + [a])), min(r1, max(stop[a:b] + [b]))
            if lo >= hi:
                continue
            T = buf[:(b - a) * (hi - lo) * d].view(b - a, hi - lo, d)  # (c, m, d): [j - a, i - lo] = T_i(x_j)
            if isinstance(block, Written):
                T.copy_(block.D[lo:hi, a:b].transpose(0, 1))
            else:  # the residual's own part (j = i) is left out here: the diagonal is made below
                torch.bmm(At[a:b, lo:hi], Gt[a:b], out=T)
            if norms is not None:
                torch.linalg.vector_norm(T, 2, dim=-1, out=norms[a:b, lo:hi])  # (c, m)
            if dist is not None:  # ‖y_i − T_i(x_j)‖₁ (the sign flipped: the same)
                torch.sum(T.sub_(y[lo:hi]).abs_(), -1, out=dist[a:b, lo:hi])  # (c, m)
    if isinstance(block, Factored):  # the residual's own part is on the diagonal: made apart
        write_diagonal(own_share(block), y, norms, dist)


# ---- the two methods ----------------------------------------------------------------------------

def block_method(name: str, meaning: str):
    """``globenc`` or ``alti`` (:func:`block_matrices`) of every layer, rows normalised, accumulated by
    rollout up to ``layer`` (:func:`.decompose.rollout`)."""
    def compute(model, text: str, *, layer=None, target=None, stack: Optional[str] = None,
                **options) -> Attribution:
        DC.check_options(name, options)
        st = DC.stack_of(model, name, target, stack)
        kept = KeptWeights(st.prefix, st.n_layers)  # the weights, by a hook: freed layer by layer, kept transposed
        tr = kept.trace(trace_one(model, st, text, [n for n in trace_names(st) if n != kept.pattern],
                                  hooks={kept.pattern: kept.keep}))

        def layer_matrix(i: int) -> Tensor:  # (L, L)
            return normalise_rows(block_matrices(walk(st, tr, i), (name,))[name])
        # the layers side by side, one core each: their ops are small, and split over threads each
        # waits on a barrier (MiniLM at 510 tokens: slower at 2 threads than at 1)
        per_layer = torch.stack(map_lanes(layer_matrix, range(st.n_layers), tr[f"{st.prefix}.0.out"].device))
        kept.give_back()  # the blocks that read it are gone
        lay = last(layer, st)
        return Attribution(name, "tokens", tr.text_tokens(0), DC.rollout(per_layer, lay), meaning,
                           per_layer=per_layer, layer=lay)
    return compute


register_method(AttributionMethod(
    "globenc", "tokens", block_method(
        "globenc", "the norm of token j's share of position i's output of the attention block "
        "(residual and norm included), rows summing to 1, accumulated over layers by rollout; larger = more"),
    "norms of the attention block's per-token parts (residual and LayerNorm included), rolled out over layers",
    "Modarressi et al. 2022, GlobEnc"))
register_method(AttributionMethod(
    "alti", "tokens", block_method(
        "alti", "how close token j's share brings position i's block output (max(0, ‖y‖₁ − ‖y − "
        "T(x_j)‖₁)), rows summing to 1, accumulated over layers by rollout; larger = more"),
    "ALTI: the L1 proximity of each token's share to the block's output, rolled out over layers",
    "Ferrando et al. 2022, Measuring the Mixing of Contextual Information in the Transformer"))
