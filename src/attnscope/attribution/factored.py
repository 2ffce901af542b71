"""GlobEnc's and ALTI's per-layer matrices without writing ``(L, L, d)`` out: the attention block's
end kept as factors, its norms and L1 distances read in chunks of columns.

:mod:`.decompose` writes every step of a layer's attention block as ``D (L, L + 1, d)`` (token j's
part of token i's value, then the bias term). GlobEnc and ALTI read only two numbers per pair from
the block's end: ``‖T_i(x_j)‖₂`` and ``‖y_i − T_i(x_j)‖₁``. When the attention reads a per-token
value (the layer's input x or a norm of it — every registered recipe), every step of the walk has
the form (a :class:`Factored`)::

    v_{i←j} = δ_ij own_i + Σ_g W[g, i, j] · G[g, j]        v_{i←bias} = bias_i

``own, bias (L, d)``, ``W (K, L, L)``, ``G (K, L, d)``; K terms, one per query head of each
attention block summed in. A step whose value a later step reads (:func:`values_read`: the block's
end, a norm's input) also carries that ``value`` (the parts summed): the step as the model computed
it, read from the trace, not recomputed from the parts; a norm's statistics are read from its input's. The steps keep that form:

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

GlobEnc's and ALTI's numbers are read off a walked block by :mod:`.pairs`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

import torch

from ..errors import InputError
from ..i18n import error
from ..recipe import INPUT
from . import decompose as DC

Tensor = torch.Tensor

@dataclass(frozen=True)
class Factored:
    """One step as ``δ_ij own_i + Σ_g W[g, i, j] G[g, j]`` plus ``bias_i`` (module docstring), and its
    ``value``: the parts summed — the step as the model computed it, read from the trace.

    Two factors are kept apart until :func:`.pairs.block_matrices` writes them in the layout it reads (so
    a norm costs O(L + K·r·d), not another pass over ``(K, L, L)`` and ``(K, L, d)``): ``rows``, a
    scale of every W's row i (a norm's 1/σ_i), and ``O``: with it, ``G[g, j]`` is ``G[g, j] @ O[g]``
    (the attention's value vectors through its W_O^h, with a later norm's centring and γ in O)."""

    own: Tensor    # (L, d)
    bias: Tensor   # (L, d)
    W: Tensor      # (K, L, L)
    G: Tensor      # (K, L, d), or (K, L, r) with O
    value: Optional[Tensor]  # (L, d); None where no later step reads it (values_read)
    rows: Optional[Tensor] = None  # (L,): W[g, i, j] is W[g, i, j]·rows[i]
    O: Optional[Tensor] = None     # (K, r, d)

    def total(self) -> Tensor:
        """The step's value, every part summed: (L, d)."""
        if self.value is None:
            raise ValueError("this step's value was not read from the trace (factored.values_read)")
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
    through the same two calls as a :class:`Factored` by :func:`.pairs.block_matrices`."""

    D: Tensor  # (L, L + 1, d)

    def total(self) -> Tensor:
        return self.D.sum(1)  # (L, d)


Block = Union[Factored, Written]


def values_read(recipe, first_layer: bool) -> set[str]:
    """The steps whose traced value :func:`walk` reads, up to :func:`.decompose.block_end`: the
    block's end (the output the shares are measured against) and the input of each norm (its
    statistics), each passed back through ``same`` steps to the step that made it; in the first
    layer also the operands of the sum that reads ``x``, by their own names
    (:func:`.decompose.layer_input`). No other step's value is read: a sum's or an attention's
    output is rebuilt from its parts, never compared with them."""
    end = DC.block_end(recipe)
    steps = {}
    for s in recipe.steps:
        steps[s.name] = s
        if s.name == end:
            break

    def made_by(name: str) -> str:  # through "same" steps to the one that computed the value
        while name in steps and steps[name].op == "same":
            name = steps[name].args[0]
        return name
    read = {made_by(end)} | {made_by(s.args[0]) for s in steps.values() if s.op == "norm"}
    if first_layer:
        read |= {a for s in steps.values() if s.op == "add" and INPUT in s.args for a in s.args}
    return read - {INPUT}


def trace_names(stack: DC.Stack) -> list[str]:
    """What :func:`walk` reads from a trace: every layer's weights and output (the next layer's
    input) and the values of :func:`values_read`. Each recorded (L, d) value costs 2–8 % of a
    forward (MiniLM at 510 tokens, 2 threads: the weights alone 1.30×, with one such name
    1.34–1.38×, with five 1.41×). A step every layer reads is one pattern ``prefix.*.step``: the
    trace matches each pattern against every name, so 26 names (MiniLM) cost more than 6."""
    p = stack.prefix
    steps: list[set[str]] = []
    for i in range(stack.n_layers):
        recipe = DC.recipe_of(stack, i)
        steps.append({f"{s}.out" if s in recipe.blocks else s for s in values_read(recipe, i == 0)})
    every = set.intersection(*steps) if steps else set()
    names = {f"{p}.*.attn.weights", f"{p}.*.out"} | {f"{p}.*.{s}" for s in every}
    names |= {f"{p}.{i}.{s}" for i, mine in enumerate(steps) for s in mine - every}
    return sorted(names)


def no_terms(x: Tensor) -> tuple[Tensor, Tensor]:
    """An empty ``W (0, L, L)`` and ``G (0, L, d)``: a step with its own part and bias only."""
    L, d = x.shape
    return x.new_zeros(0, L, L), x.new_zeros(0, L, d)


def add(a: Factored, b: Factored, value: Optional[Tensor]) -> Factored:
    """Two steps summed (``value`` their traced sum): own and bias add, the terms of both kept (K_a + K_b)."""
    own, bias = a.own + b.own, a.bias + b.bias
    if not a.W.shape[0]:
        return Factored(own, bias, b.W, b.G, value, b.rows, b.O)
    if not b.W.shape[0]:
        return Factored(own, bias, a.W, a.G, value, a.rows, a.O)
    W = torch.cat([a.weights(), b.weights()])  # (K_a + K_b, L, L)
    return Factored(own, bias, W, torch.cat([a.vectors(), b.vectors()]), value)  # G (K_a + K_b, L, d)


def norm(a: Factored, module, value: Optional[Tensor]) -> Factored:
    """``module`` linearised with each row's statistics of its input ``a.value`` (module docstring);
    ``value`` its traced output. The row scale joins ``rows`` and the per-vector map joins ``O``
    (or G without one): ``(v O − mean(v O)) ⊙ γ = v ((O − mean O) ⊙ γ)``, each row of O a vector."""
    s = a.total()  # (L, d): the norm's input
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


def attention(a: Factored, attn, weights: Tensor, value: Optional[Tensor]) -> Factored:
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
    read = values_read(recipe, index == 0)
    for s in recipe.steps:
        a = V[s.args[0]]
        if s.op not in ("same", "add", "norm", "attention"):
            raise error(InputError, "errors.attribution_recipe_mlp_first", recipe=repr(recipe.name), op=s.op,
                        step_name=repr(s.name), end=repr(end))
        # the step as the model computed it, (L, d): the value every part sums to, where a later step reads it
        value = DC.step_value(tr, prefix, recipe, s.name) if s.op != "same" and s.name in read else None
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
