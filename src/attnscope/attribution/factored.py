"""GlobEnc's and ALTI's per-layer matrices without writing ``(L, L, d)`` out: the attention block's
end kept as factors, its norms and L1 distances read in chunks of columns.

:mod:`.decompose` writes every step of a layer's attention block as ``D (L, L + 1, d)`` (token j's
part of token i's value, then the bias term). GlobEnc and ALTI read only two numbers per pair from
the block's end: ``‖T_i(x_j)‖₂`` and ``‖y_i − T_i(x_j)‖₁``. When the attention reads a per-token
value (the layer's input x or a norm of it — every registered recipe), every step of the walk has
the form (a :class:`Factored`)::

    v_{i←j} = δ_ij own_i + Σ_g W[g, i, j] · G[g, j]        v_{i←bias} = bias_i

``own, bias (L, d)``, ``W (K, L, L)``, ``G (K, L, d)``; K terms, one per query head of each
attention block summed in. Each step also carries its ``value`` (the parts summed): the step as
the model computed it, read from the trace, not recomputed from the parts; a norm's statistics are
read from its input's. The steps keep that form:

* ``x``: own = x, bias = 0, K = 0 (what :func:`.decompose.identity` keeps compact);
* ``same``: itself; ``add``: own and bias add, the terms stand side by side (K₁ + K₂);
* a norm, linearised with row i's own statistics as in :func:`.decompose.norm_terms` — LayerNorm
  ``v ↦ γ ⊙ (v − mean v) / σ_i``, RMSNorm ``v ↦ (offset + w) ⊙ v / rms_i``: the centring and γ act
  on each vector alone (own, bias and every ``G[g, j]`` — through its factor ``O`` when it has
  one), and ``1/σ_i`` is one number for row i, which joins the rows' scale of W; β joins the bias;
* attention with the traced weights α on a K = 0 input (own a, bias b): ``W = α`` and
  ``G[h, j] = (a_j W_V^h) W_O^h`` (query head h reads k/v head h // group); ``Σ_h α^h (b W_V^h +
  b_V^h) W_O^h + b_O`` joins the bias (a bias the same in every row — zero, or a LayerNorm's β —
  as ``(Σ_k α^h_ik)·(b W_V^h + b_V^h) W_O^h``) — :func:`.decompose.attention_terms`' compact path,
  the ``(L, L, d)`` product left unwritten.

Attention on a value that already mixes tokens (no registered recipe has one) is not of this form:
that layer is walked in full by :func:`.decompose.decompose_layer` (:class:`Written`).

:func:`block_matrices` then writes W and G once in the layout its products read (the factors
applied: :func:`column_major`) and takes ``T`` a chunk of columns (source tokens j) by a block of
rows at a time (about :data:`CHUNK_ELEMENTS` floats): one batched product over the rows that can be nonzero — the chunk's
own tokens and the rows whose W reaches them (a causal or windowed layer's other tokens give
``T_i(x_j) = 0`` exactly, so GlobEnc's norm and ALTI's ``‖y_i‖₁ − ‖y_i − 0‖₁`` are 0 there) — and
both norms are read while the chunk is in cache; the residual's own part (the diagonal) is added
once a layer after the chunks. Memory O(K·L² + K·L·d + CHUNK_ELEMENTS) instead of O(L²·d); float32 as the
trace, the same formulas as :mod:`.decompose` (the tests compare both with a float64 loop).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

import torch

from ..errors import InputError
from ..i18n import error
from ..recipe import INPUT
from ..threads import map_lanes
from . import decompose as DC
from .base import Attribution, AttributionMethod, register_method
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


@dataclass(frozen=True)
class Factored:
    """One step as ``δ_ij own_i + Σ_g W[g, i, j] G[g, j]`` plus ``bias_i`` (module docstring), and its
    ``value``: the parts summed — the step as the model computed it, read from the trace.

    Two factors are kept apart until :func:`block_matrices` writes them in the layout it reads (so
    a norm costs O(L + K·r·d), not another pass over ``(K, L, L)`` and ``(K, L, d)``): ``rows``, a
    scale of every W's row i (a norm's 1/σ_i), and ``O``: with it, ``G[g, j]`` is ``G[g, j] @ O[g]``
    (the attention's value vectors through its W_O^h, with a later norm's centring and γ in O)."""

    own: Tensor    # (L, d)
    bias: Tensor   # (L, d)
    W: Tensor      # (K, L, L)
    G: Tensor      # (K, L, d), or (K, L, r) with O
    value: Tensor  # (L, d)
    rows: Optional[Tensor] = None  # (L,): W[g, i, j] is W[g, i, j]·rows[i]
    O: Optional[Tensor] = None     # (K, r, d)

    def total(self) -> Tensor:
        """The step's value, every part summed: (L, d)."""
        return self.value

    def weights(self) -> Tensor:
        """W with its rows' scale: (K, L, L)."""
        return self.W if self.rows is None else self.W * self.rows[None, :, None]

    def vectors(self) -> Tensor:
        """G with O applied: (K, L, d)."""
        return self.G if self.O is None else torch.bmm(self.G, self.O)

    def written(self) -> Tensor:
        """The same step as :mod:`.decompose` writes it: (L, L + 1, d)."""
        L, d = self.own.shape
        D = self.own.new_zeros(L, L + 1, d)
        D[:, :L] = torch.einsum("gij,gjd->ijd", self.weights(), self.vectors())  # (L, L, d)
        idx = torch.arange(L, device=D.device)
        D[idx, idx] += self.own
        D[:, L] = self.bias
        return D


@dataclass(frozen=True)
class Written:
    """A block's end written in full, ``D (L, L + 1, d)`` (:func:`.decompose.decompose_layer`), read
    through the same two calls as a :class:`Factored` by :func:`block_matrices`."""

    D: Tensor  # (L, L + 1, d)

    def total(self) -> Tensor:
        return self.D.sum(1)  # (L, d)


Block = Union[Factored, Written]


def trace_names(stack: DC.Stack) -> list[str]:
    """What :func:`walk` reads from a trace: every layer's weights and output (the next layer's
    input) and the value of each step up to the block's end (layer 0's input is read from two of
    them: :func:`.decompose.layer_input`). A step every layer reads is one pattern ``prefix.*.step``:
    the trace matches each pattern against every name, so 26 names (MiniLM) cost more than 6."""
    p = stack.prefix
    steps: list[set[str]] = []
    for i in range(stack.n_layers):
        recipe = DC.recipe_of(stack, i)
        end = DC.block_end(recipe)
        mine = set()
        for s in recipe.steps:
            mine.add(f"{s.name}.out" if s.name in recipe.blocks else s.name)
            if s.name == end:
                break
        steps.append(mine)
    every = set.intersection(*steps) if steps else set()
    names = {f"{p}.*.attn.weights", f"{p}.*.out"} | {f"{p}.*.{s}" for s in every}
    names |= {f"{p}.{i}.{s}" for i, mine in enumerate(steps) for s in mine - every}
    return sorted(names)


def no_terms(x: Tensor) -> tuple[Tensor, Tensor]:
    """An empty ``W (0, L, L)`` and ``G (0, L, d)``: a step with its own part and bias only."""
    L, d = x.shape
    return x.new_zeros(0, L, L), x.new_zeros(0, L, d)


def add(a: Factored, b: Factored, value: Tensor) -> Factored:
    """Two steps summed (``value`` their traced sum): own and bias add, the terms of both kept (K_a + K_b)."""
    own, bias = a.own + b.own, a.bias + b.bias
    if not a.W.shape[0]:
        return Factored(own, bias, b.W, b.G, value, b.rows, b.O)
    if not b.W.shape[0]:
        return Factored(own, bias, a.W, a.G, value, a.rows, a.O)
    W = torch.cat([a.weights(), b.weights()])  # (K_a + K_b, L, L)
    return Factored(own, bias, W, torch.cat([a.vectors(), b.vectors()]), value)  # G (K_a + K_b, L, d)


def norm(a: Factored, module, value: Tensor) -> Factored:
    """``module`` linearised with each row's statistics of its input ``a.value`` (module docstring);
    ``value`` its traced output. The row scale joins ``rows`` and the per-vector map joins ``O``
    (or G without one): ``(v O − mean(v O)) ⊙ γ = v ((O − mean O) ⊙ γ)``, each row of O a vector."""
    s = a.value  # (L, d): the norm's input
    dt = s.dtype
    if hasattr(module, "offset"):  # attnscope's RMSNorm: v / rms(s_i) · (offset + w)
        g = module.offset + module.weight.to(dt)  # (d,)
        r = torch.rsqrt(s.pow(2).mean(-1) + module.eps)  # (L,): 1 / rms_i
        row = g * r[:, None]  # (L, d)
        G, O = (a.G * g, None) if a.O is None else (a.G, a.O * g)
        return Factored(a.own * row, a.bias * row, a.W, G, value, r if a.rows is None else a.rows * r, O)
    if not isinstance(module, torch.nn.LayerNorm):
        raise error(InputError, "errors.attribution_norm_kind", norm=type(module).__name__)
    # (L,): 1 / σ_i; the variance in two passes (torch.var's kernel is ~8× slower on a (L, d) row block here)
    r = torch.rsqrt((s - s.mean(-1, keepdim=True)).pow_(2).mean(-1) + module.eps)
    g = None if module.weight is None else module.weight.to(dt)  # (d,) γ

    def centred(v: Tensor) -> Tensor:  # (…, d): each vector minus its mean, times γ
        v = v - v.mean(-1, keepdim=True)
        return v if g is None else v.mul_(g)
    bias = centred(a.bias).mul_(r[:, None])  # (L, d)
    if module.bias is not None:
        bias += module.bias.to(dt)
    G, O = (centred(a.G), None) if a.O is None else (a.G, centred(a.O))
    return Factored(centred(a.own).mul_(r[:, None]), bias, a.W, G, value, r if a.rows is None else a.rows * r, O)


def attention(a: Factored, attn, weights: Tensor, value: Tensor) -> Factored:
    """The attention block with fixed ``weights (H, L, L)`` on a K = 0 step ``a`` (module docstring);
    ``value`` its traced output."""
    H, Hkv, dh = attn.n_heads, attn.n_kv_heads, attn.d_head
    L, dt, group = a.own.shape[0], a.own.dtype, attn.n_heads // attn.n_kv_heads
    W_V, b_V = DC.value_weights(attn)
    W_V = W_V.to(dt)  # (H_kv·d_head, d)
    # O[h] = W_O^h (H, d_head, d), written contiguous: ops on the strided view of W_O (a permute of
    # (d, H·d_head)) ran ~10× slower than on the copy (MiniLM/128: 6 ms a layer for a (12, 1, 32)·(12, 32, 384) bmm)
    O = attn.W_O.weight.detach().to(dt).T.contiguous().view(H, dh, -1)
    w = weights.to(dt)  # (H, L, L)

    def heads(v: Tensor) -> Tensor:  # (N, H_kv·d_head) → (N, H, d_head): query head h reads k/v head h // group
        v = v.reshape(v.shape[0], Hkv, dh)
        return v if group == 1 else v.repeat_interleave(group, dim=1)
    G = heads(a.own @ W_V.T).transpose(0, 1)  # (H, L, d_head): G[h, j] @ O[h] = (a_j W_V^h) W_O^h
    b = a.bias[:1]  # (1, d)
    if bool((a.bias == b).all()):  # one bias for every row (0, or a LayerNorm's β): Σ_k α_ik b = (Σ_k α_ik) b
        vb = b @ W_V.T if b_V is None else b @ W_V.T + b_V.to(dt)  # (1, H_kv·d_head)
        per_head = torch.bmm(heads(vb)[0][:, None], O)[:, 0]  # (H, d): (b W_V^h + b_V^h) W_O^h
        bias = w.sum(-1).T @ per_head  # (L, d)
    else:
        vb = a.bias @ W_V.T if b_V is None else a.bias @ W_V.T + b_V.to(dt)  # (L, H_kv·d_head)
        z = torch.einsum("hik,khc->ihc", w, heads(vb))  # (L, H, d_head): Σ_k α^h_ik (b_k W_V^h + b_V^h)
        bias = z.reshape(L, H * dh) @ attn.W_O.weight.to(dt).T  # (L, d)
    if attn.W_O.bias is not None:
        bias = bias + attn.W_O.bias.to(dt)
    return Factored(torch.zeros_like(a.own), bias, w, G, value, None, O)


@torch.no_grad()
def walk(stack: DC.Stack, tr, index: int) -> Block:
    """Layer ``index``'s attention block, up to :func:`.decompose.block_end`, from a trace recorded
    with :func:`trace_names` (or more): a :class:`Factored`, or :class:`Written` for a recipe whose
    attention reads a value that mixes tokens. ``.total()`` is the block's output either way."""
    recipe = DC.recipe_of(stack, index)
    layer, prefix, end = stack.layers[index], f"{stack.prefix}.{index}", DC.block_end(recipe)
    x = DC.layer_input(tr, stack, recipe, index)  # (L, d)
    V = {INPUT: Factored(x, torch.zeros_like(x), *no_terms(x), x)}
    for s in recipe.steps:
        a = V[s.args[0]]
        if s.op not in ("same", "add", "norm", "attention"):
            raise error(InputError, "errors.attribution_recipe_mlp_first", recipe=repr(recipe.name), op=s.op,
                        step_name=repr(s.name), end=repr(end))
        # the step as the model computed it, (L, d): the value every part sums to
        value = a.value if s.op == "same" else DC.step_value(tr, prefix, recipe, s.name)
        if s.op == "same":
            V[s.name] = a
        elif s.op == "add":
            V[s.name] = add(a, V[s.args[1]], value)
        elif s.op == "norm":
            V[s.name] = norm(a, getattr(layer, str(s.module)), value)
        elif a.W.shape[0]:  # an attention whose input mixes tokens already: the full walk
            return Written(DC.decompose_layer(stack, tr, index)[end])
        else:
            V[s.name] = attention(a, getattr(layer, s.name), DC.value(tr, f"{prefix}.{s.name}.weights"), value)
        if s.name == end:
            return V[end]
    raise error(InputError, "errors.attribution_recipe_end", recipe=repr(recipe.name), end=repr(end))


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


@torch.no_grad()
def block_matrices(block: Block, methods: tuple[str, ...], elements: Optional[int] = None,
                   rows: int = ROW_BLOCK) -> dict[str, Tensor]:
    """``{"globenc": ‖T_i(x_j)‖₂, "alti": max(0, ‖y_i‖₁ − ‖y_i − T_i(x_j)‖₁)}`` (those in ``methods``),
    (L, L) each, rows not normalised; y = ``block.total()`` (bias included). ``T`` is made a chunk at
    a time in one buffer, reused (a fresh one a chunk costs its pages again): ``rows`` rows i (default
    :data:`ROW_BLOCK`) by as many columns j as fit in about ``elements`` floats (default
    :data:`CHUNK_ELEMENTS` per torch thread — each core has its own L2 — at least one column), and only
    the rows those columns reach. Columns, not rows, batch the product: each column's ``G[:, j]`` is
    read by one small matrix product (rows × K)·(K × d), and the chunk's results land in whole rows of
    the column-major results; a block of rows keeps the ``y`` each chunk subtracts small."""
    y = block.total()  # (L, d)
    L, d = y.shape
    y1 = y.abs().sum(-1)  # (L,) ‖y_i‖₁, summed as ‖y_i − T‖₁ is below: T = 0 gives 0, not rounding noise
    # column-major [j, i]; a pair no chunk reaches has T_i(x_j) = 0: norm 0, L1 distance ‖y_i‖₁
    norms = y.new_zeros(L, L) if "globenc" in methods else None
    dist = y1.expand(L, L).clone() if "alti" in methods else None
    if elements is None:  # fewer, larger chunks with more threads: each small op wakes them all
        elements = CHUNK_ELEMENTS * torch.get_num_threads()
    n = max(1, min(rows, L))
    cols = max(1, elements // (n * d))
    buf = y.new_empty(cols * n * d)
    if isinstance(block, Written):
        first, stop = [0] * L, [L] * L
        At = Gt = Wd = buf
    else:
        Wc, Gt = column_major(block)
        first, stop = reach(Wc)  # per column j, the rows i it reaches
        At = Wc.permute(1, 2, 0)  # (L_j, L_i, K)
        Wd = Wc.diagonal(dim1=1, dim2=2).T.unsqueeze(1)  # (L, 1, K): the diagonal's weights Wc[:, i, i]
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
    if isinstance(block, Factored):  # the diagonal with the residual's own part: T_i(x_i), (L, d)
        Td = torch.bmm(Wd, Gt)[:, 0] + block.own  # (L, 1, K)·(L, K, d): one batched product
        idx = torch.arange(L, device=y.device)
        if norms is not None:
            norms[idx, idx] = torch.linalg.vector_norm(Td, 2, dim=-1)
        if dist is not None:
            dist[idx, idx] = (Td - y).abs().sum(-1)
    out = {}
    if norms is not None:
        out["globenc"] = norms.T.contiguous()  # (L, L), row = i
    if dist is not None:
        out["alti"] = (y1[:, None] - dist.T).clamp_(min=0)  # (L, L), row = i
    return out


# ---- the two methods ----------------------------------------------------------------------------

def block_method(name: str, meaning: str):
    """``globenc`` or ``alti`` (:func:`block_matrices`) of every layer, rows normalised, accumulated by
    rollout up to ``layer`` (:func:`.decompose.rollout`)."""
    def compute(model, text: str, *, layer=None, target=None, stack: Optional[str] = None,
                **options) -> Attribution:
        DC.check_options(name, options)
        st = DC.stack_of(model, name, target, stack)
        tr = trace_one(model, st, text, trace_names(st))

        def layer_matrix(i: int) -> Tensor:  # (L, L)
            return normalise_rows(block_matrices(walk(st, tr, i), (name,))[name])
        # the layers side by side, one core each: their ops are small, and split over threads each
        # waits on a barrier (MiniLM at 510 tokens: slower at 2 threads than at 1)
        per_layer = torch.stack(map_lanes(layer_matrix, range(st.n_layers), tr[f"{st.prefix}.0.out"].device))
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
