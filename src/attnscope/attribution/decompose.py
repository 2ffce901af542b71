"""A layer's attention block as a sum over source tokens, walked over the layer's recipe.

Every value the recipe computes before its MLP is written, at each token i, as a sum of one vector
per source token j plus a bias term::

    v_i = Σ_j v_{i←j} + b_i          stored as D (L, L + 1, d): D[i, j] = v_{i←j}, D[i, L] = b_i

and carried through the steps of :mod:`attnscope.recipe` (the layer's own ``layer.recipe``):

* ``x`` (the layer's input): ``x_{i←j} = δ_ij x_i`` — each token is its own source;
* ``same``: the same decomposition; ``add``: the two decompositions summed term by term;
* ``norm``: linearised with the token's own statistics, as Kobayashi et al. 2021, GlobEnc and ALTI
  do — LayerNorm: ``(v_{i←j} − mean(v_{i←j})) / σ(v_i) ⊙ γ`` and ``β`` joins the bias term;
  RMSNorm: ``v_{i←j} / rms(v_i) ⊙ (offset + w)`` (Gemma's 1 + w);
* ``attention``: exactly linear once the weights α are fixed (read from the trace):
  ``attn_{i←j} = Σ_h Σ_k α^h_ik (a_{k←j} W_V^h) W_O^h``; the value bias b_V and W_O's bias join the
  bias term. Query head h reads the values of its k/v head h // (H / H_kv) (grouped-query and
  multi-query heads). Rotary positions act on q and k only, and windows, ALiBi, T5/DeBERTa
  relative terms change α only: all of them are in the traced α, so nothing here depends on them;
* ``mlp``: not linear — the walk stops before it (:func:`block_end`). The MLP mixes within a token
  only, so the methods here (GlobEnc, ALTI) measure the attention block with its residual and its
  norm(s) and aggregate layers by rollout, as their papers do.

Covered: single-stack models (encoders, DeBERTa, decoders) and an encoder–decoder's encoder stack
(T5, BART: the source text, :func:`stack_of`); the decoder's self- and cross-attention are not
decomposed, and asking for them (a ``target``) is refused in one sentence. Arrays follow the trace's
device and dtype (float32).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import torch

from ..errors import InputError
from ..i18n import error
from ..recipe import INPUT, LayerRecipe, get_layer_recipe

Tensor = torch.Tensor


@dataclass(frozen=True)
class Stack:
    """The layers a method decomposes: ``layers`` (the modules), ``prefix`` of their trace names
    (``layers``; ``encoder.layers`` in an encoder–decoder), the model's ``config`` and what
    ``model.trace`` needs besides the text (``trace_kw``: the encoder–decoder's empty target)."""

    layers: Any
    prefix: str
    config: Any
    trace_kw: dict = field(default_factory=dict)

    @property
    def n_layers(self) -> int:
        return len(self.layers)


def stack_of(model, method: str, target=None, stack: Optional[str] = None) -> Stack:
    """The stack ``method`` decomposes: the model's layers, or an encoder–decoder's encoder
    (``stack`` None or ``"encoder"``); its decoder — self- and cross-attention — is refused in one
    sentence, whether a ``stack`` or a ``target`` asks for it."""
    if hasattr(model, "target_batch"):  # an encoder–decoder model (T5, BART)
        if target is not None or stack not in (None, "encoder"):
            raise error(InputError, "errors.attribution_encoder_only", method=method, model=model.name)
        return Stack(model.encoder.layers, "encoder.layers", model.config, {"target": ""})
    if stack is not None:
        raise error(InputError, "errors.attribution_one_stack", stack=repr(stack), model=model.name)
    if target is not None:
        raise error(InputError, "errors.attribution_no_target", method=method)
    return Stack(model.layers, "layers", model.config)


def check_options(method: str, options: dict) -> None:
    """InputError naming an option ``method`` does not take."""
    if options:
        raise error(InputError, "errors.attribution_no_option", method=method, options=", ".join(map(repr, options)))


def recipe_of(stack: Stack, index: int) -> LayerRecipe:
    """The recipe layer ``index`` runs (its own, else the one ``config.norm`` names)."""
    recipe = getattr(stack.layers[index], "recipe", None)
    return recipe if isinstance(recipe, LayerRecipe) else get_layer_recipe(stack.config.norm)


def block_end(recipe: LayerRecipe) -> str:
    """The step the attention block ends in: the residual stream the MLP's residual sum adds to
    (``attn_resid`` for pre, sandwich and post_block; ``ffn_in`` = LN(attn_resid) for post)."""
    mlp = next(s.name for s in recipe.steps if s.op == "mlp")
    after = {mlp}
    for s in recipe.steps:
        if any(a in after for a in s.args):
            if s.op == "add":
                return next(a for a in s.args if a not in after)
            after.add(s.name)
    raise error(InputError, "errors.attribution_recipe_no_mlp_sum", recipe=repr(recipe.name))


def trace_names(stack: Stack) -> list[str]:
    """What a trace must record for :func:`decompose_layer` on every layer of ``stack``."""
    p = stack.prefix
    names = [f"{p}.*.attn.weights", f"{p}.*.attn.v", f"{p}.*.attn.out", f"{p}.*.out"]
    for i in range(stack.n_layers):
        names += [f"{p}.*.{s.name}" for s in recipe_of(stack, i).steps if s.op not in ("attention", "mlp")]
    return sorted(set(names))


def value(tr, name: str) -> Tensor:
    """Text 0's value of ``name`` in the trace, without the batch axis and padding; a half-precision
    trace (float16, bfloat16) read as float32, so that the methods' sums run in float32: in float16,
    ALTI's ‖y_i‖₁ − ‖y_i − T_i(x_j)‖₁ over d features loses every digit of a small share (SmolLM2 in
    float16: ALTI 0.11 and GlobEnc 0.30 off the same trace read in float32, on rows summing to 1)."""
    n = tr.lengths[0]
    t = tr[name][0]
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.float()
    return t[..., :n, :n] if name.endswith(".weights") else t[..., :n, :]


def step_value(tr, prefix: str, recipe: LayerRecipe, name: str) -> Tensor:
    """The traced value of step ``name`` of the layer at ``prefix`` (a block: its ``out``), (L, d)."""
    block = name in recipe.blocks
    return value(tr, f"{prefix}.{name}.out" if block else f"{prefix}.{name}")


def layer_input(tr, stack: Stack, recipe: LayerRecipe, index: int) -> Tensor:
    """What enters layer ``index``, (L, d): layer index − 1's output, or for layer 0 the residual sum
    that reads ``x`` minus its other operand (the embedding is not one trace name in every family)."""
    if index > 0:
        return value(tr, f"{stack.prefix}.{index - 1}.out")
    p = f"{stack.prefix}.0"
    add = next(s for s in recipe.steps if s.op == "add" and INPUT in s.args)
    other = next(a for a in add.args if a != INPUT)
    return step_value(tr, p, recipe, add.name) - step_value(tr, p, recipe, other)


def identity(x: Tensor) -> Tensor:
    """The decomposition of the layer's input, compact: ``[x_{i←i}, b_i] = [x_i, 0]``, (L, 2, d).

    A step whose token i holds only its own part and the bias (x and per-token ops of it: a norm,
    a sum of two such) is kept compact ``(L, 2, d)`` — its full form is zero off the diagonal —
    and expanded (:func:`expand`) only where it meets a full one ``(L, L + 1, d)``."""
    return torch.stack([x, torch.zeros_like(x)], dim=1)  # (L, 2, d)


def expand(C: Tensor) -> Tensor:
    """A compact decomposition ``(L, 2, d)`` written out: ``(L, L + 1, d)``."""
    L, _, d = C.shape
    D = C.new_zeros(L, L + 1, d)
    idx = torch.arange(L, device=C.device)
    D[idx, idx] = C[:, 0]
    D[:, -1] = C[:, 1]
    return D


def add_terms(a: Tensor, a_compact: bool, b: Tensor, b_compact: bool) -> Tensor:
    """The sum of two decompositions, compact if both are, else full (L, L + 1, d)."""
    if a_compact == b_compact:
        return a + b
    full, c = (b, a) if a_compact else (a, b)
    out = full.clone()  # (L, L + 1, d)
    idx = torch.arange(c.shape[0], device=c.device)
    out[idx, idx] += c[:, 0]
    out[:, -1] += c[:, 1]
    return out


def norm_terms(D: Tensor, norm) -> Tensor:
    """A norm module linearised with each token's own statistics (module docstring), on a full
    ``(L, L + 1, d)`` or compact ``(L, 2, d)`` decomposition (the same shape back)."""
    s = D.sum(1)  # (L, d): the norm's input
    if hasattr(norm, "offset"):  # attnscope's RMSNorm: x / rms(x) · (offset + w)
        rms = torch.sqrt(s.pow(2).mean(-1) + norm.eps)  # (L,)
        return D * ((norm.offset + norm.weight.to(D.dtype)) / rms[:, None])[:, None, :]
    if not isinstance(norm, torch.nn.LayerNorm):
        raise error(InputError, "errors.attribution_norm_kind", norm=type(norm).__name__)
    sigma = torch.sqrt(s.var(-1, unbiased=False) + norm.eps)  # (L,)
    scale = 1.0 / sigma[:, None] if norm.weight is None else norm.weight.to(D.dtype) / sigma[:, None]  # (L, d)
    out = (D - D.mean(-1, keepdim=True)).mul_(scale[:, None, :])  # (L, ·, d): one pass for γ / σ
    if norm.bias is not None:
        out[:, -1] += norm.bias.to(D.dtype)
    return out


def value_weights(attn) -> tuple[Tensor, Optional[Tensor]]:
    """W_V ``(H_kv·d_head, d)`` and b_V (or None): the value rows of the fused projection."""
    H, Hkv, dh = attn.n_heads, attn.n_kv_heads, attn.d_head
    rows = slice((H + Hkv) * dh, (H + 2 * Hkv) * dh)
    b = attn.W_qkv.bias
    return attn.W_qkv.weight[rows], None if b is None else b[rows]


def attention_terms(D: Tensor, attn, weights: Tensor, compact: bool = False) -> Tensor:
    """The attention block on a decomposition ``D (L, L + 1, d)`` with fixed ``weights (H, L, L)``:
    ``Σ_h Σ_k α^h_ik (a_{k←j} W_V^h) W_O^h`` per source j; b_V and W_O's bias in the bias term.
    Returns (L, L + 1, d).

    ``compact``: D is ``(L, 2, d)`` (:func:`identity`; the block's input is the layer's input or a
    per-token norm of it, as in every registered recipe): then token j's part is ``Σ_h α^h_ij F^h_j``
    with ``F^h_j = (a_{j←j} W_V^h) W_O^h`` — O(L·d² + H·L²·d) instead of O(L²·d²)."""
    H, Hkv, dh = attn.n_heads, attn.n_kv_heads, attn.d_head
    L, group = D.shape[0], H // Hkv
    W_V, b_V = value_weights(attn)
    W_V = W_V.to(D.dtype)
    W_O = attn.W_O.weight.to(D.dtype).reshape(-1, H, dh)  # (d, H, d_head)
    w = weights.to(D.dtype)  # (H, L, L)
    if compact:
        parts = [D[:, 0], D[:, 1]]  # (L, d) each: the own parts a_{j←j}, the bias term
        Vs = [(p @ W_V.T).reshape(L, Hkv, dh).repeat_interleave(group, dim=1) for p in parts]  # (L, H, d_head)
        if b_V is not None:
            Vs[1] = Vs[1] + b_V.to(D.dtype).reshape(Hkv, dh).repeat_interleave(group, dim=0)
        F_own, F_bias = (torch.einsum("jhd,ehd->hje", v, W_O) for v in Vs)  # (H, L, d)
        out = torch.cat([torch.einsum("hij,hje->ije", w, F_own),  # (L, L, d)
                         torch.einsum("hik,hke->ie", w, F_bias)[:, None]], dim=1)  # (L, L + 1, d)
    else:
        V = D @ W_V.T  # (L, L + 1, H_kv·d_head)
        if b_V is not None:
            V[:, -1] = V[:, -1] + b_V.to(D.dtype)
        V = V.reshape(L, L + 1, Hkv, dh).repeat_interleave(group, dim=2)  # (L_k, L + 1, H, d_head)
        Z = torch.einsum("hik,kjhd->ijhd", w, V)  # (L, L + 1, H, d_head)
        out = torch.einsum("ijhd,ehd->ije", Z, W_O)  # (L, L + 1, d)
    if attn.W_O.bias is not None:
        out[:, -1] = out[:, -1] + attn.W_O.bias.to(D.dtype)
    return out


@torch.no_grad()
def decompose_layer(stack: Stack, tr, index: int) -> dict[str, Tensor]:
    """Every step of layer ``index`` up to :func:`block_end` as a decomposition over the layer's input
    tokens (module docstring), keyed by step name (``x`` included), from the float32 trace ``tr``
    (recorded with :func:`trace_names`): ``(L, L + 1, d)``, or compact ``(L, 2, d)`` for x and the
    per-token steps before the attention (:func:`identity`); the block's end is always full.
    ``D[name].sum(1)`` is the step's value either way."""
    recipe = recipe_of(stack, index)
    layer, prefix, end = stack.layers[index], f"{stack.prefix}.{index}", block_end(recipe)
    x = layer_input(tr, stack, recipe, index)  # (L, d)
    D: dict[str, Tensor] = {INPUT: identity(x)}
    compact = {INPUT}  # the steps kept compact (L, 2, d): x and per-token ops of it
    for s in recipe.steps:
        a = D[s.args[0]]
        if s.op in ("same", "norm", "add") and all(arg in compact for arg in s.args):
            compact.add(s.name)
        if s.op == "same":
            D[s.name] = a
        elif s.op == "add":
            D[s.name] = add_terms(a, s.args[0] in compact, D[s.args[1]], s.args[1] in compact)
        elif s.op == "norm":
            D[s.name] = norm_terms(a, getattr(layer, str(s.module)))
        elif s.op == "attention":
            D[s.name] = attention_terms(a, getattr(layer, s.name), value(tr, f"{prefix}.{s.name}.weights"),
                                        compact=s.args[0] in compact)
        else:
            raise error(InputError, "errors.attribution_recipe_mlp_first", recipe=repr(recipe.name), op=s.op,
                        step_name=repr(s.name), end=repr(end))
        if s.name == end:
            if end in compact:  # only a recipe without attention before its MLP: written out
                D[end] = expand(D[end])
            return D
    raise error(InputError, "errors.attribution_recipe_end", recipe=repr(recipe.name), end=repr(end))


def rollout(per_layer: Tensor, upto: int) -> Tensor:
    """Per-layer matrices ``(n_layers, L, L)`` multiplied from the first layer up to ``upto``:
    ``M_upto · … · M_0`` (row i: output position, column j: the first layer's input token)."""
    acc = per_layer[0]
    for m in per_layer[1:upto + 1]:
        acc = m @ acc  # (L, L)
    return acc
