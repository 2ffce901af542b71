"""A layer in float64, read from a loaded model's modules: the float64 function of each op of its
recipe (:mod:`attnscope.recipe`: ``same``, ``norm``, ``attention``, ``cross_attention``, ``mlp``,
``add``) and :func:`run_layer`, which walks the recipe's steps — BERT's post-LN, GPT-2's and
Llama's pre-norm, Gemma's sandwich, OLMo 2's post-block norms and T5's and BART's decoder layers
alike. :mod:`.reference_model` (single-stack families; DeBERTa with its own scores) and
:mod:`.reference_model_seq2seq` run it; each formula is in :mod:`attnscope.reference`. Arrays are
float64 ``(L, ·)``; per head ``(H, L, ·)``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from . import reference as R
from .errors import InputError
from .i18n import error
from .positions import layer_inv_freq
from .recipe import INPUT, LayerRecipe, Step, get_layer_recipe

Array = np.ndarray


def activation(name: str, x) -> Array:
    """The activation a config names ("gelu", "gelu_tanh", "relu", "silu": x·σ(x), SwiGLU's gate) applied
    to ``x``, float64."""
    fns = {"gelu": R.gelu, "gelu_tanh": lambda v: R.gelu(v, "tanh"), "relu": R.relu, "silu": lambda v: v / (1.0 + np.exp(-v))}
    if name not in fns:
        raise error(InputError, "errors.core_ref_activation", name=repr(name), names=", ".join(fns))
    with np.errstate(over="ignore"):  # silu: e^(−x) overflows to inf for x ≪ 0, and x / inf is the −0 it tends to
        return fns[name](R.as_f64(x))


def linear_of(x: Array, lin) -> Array:
    """``x Wᵀ + b`` of an ``nn.Linear`` in float64."""
    return R.linear(x, lin.weight, lin.bias)


def norm_of(x: Array, norm) -> Array:
    """A norm module in float64 by its kind: attnscope's RMSNorm (w, ε and its ``offset``: Gemma's
    1 + w) or an ``nn.LayerNorm`` (γ, β, ε)."""
    if hasattr(norm, "offset"):
        return R.rms_norm(x, norm.weight, float(norm.eps), float(norm.offset))
    return R.layer_norm(x, norm.weight, norm.bias, float(norm.eps))


def attention(q: Array, k: Array, v: Array, allowed: Array, factor: float, prefix: str,
              bias: Optional[Array] = None) -> dict:
    """Every head's scores, scaled, masked, weights and z; query head h reads k/v head h // group.
    ``q (H, L, d)``, ``k, v (H_kv, S, d)``, ``allowed (L, S)``; ``bias (H, L, S)``: an additive
    score term (T5's position bias, DeBERTa's scaled c2p + p2c), added after the scaling, before
    the mask, as the kernels do (``masked = scores · factor + bias``)."""
    group = q.shape[0] // k.shape[0]
    kk, vv = np.repeat(k, group, axis=0), np.repeat(v, group, axis=0)  # (H, S, d)
    scores = R.raw_scores(q, kk)  # (H, L, S)
    scaled = scores * factor
    biased = scaled if bias is None else scaled + bias
    masked = np.where(allowed[None], biased, -np.inf)
    weights = R.softmax(masked)
    z = R.weighted_sum(weights, vv)  # (H, L, d_v)
    out = {f"{prefix}.scores": scores, f"{prefix}.scaled": scaled, f"{prefix}.masked": masked,
           f"{prefix}.weights": weights, f"{prefix}.z": z, f"{prefix}.merged": R.merge_heads(z),
           f"{prefix}.allowed": allowed}
    if bias is not None:
        out[f"{prefix}.bias"] = bias
    return out


def qkv(a_in: Array, attn, context: Optional[Array] = None) -> tuple[Array, Array, Array]:
    """x W_Q + b, x W_K + b, x W_V + b from the fused projection: (H, L, d), (H_kv, L, d) × 2; with a
    ``context (S, d_model)`` (cross-attention) k and v are its rows' instead: (H_kv, S, d) × 2."""
    H, Hkv, d = attn.n_heads, attn.n_kv_heads, attn.d_head
    cols = [slice(0, H * d), slice(H * d, (H + Hkv) * d), slice((H + Hkv) * d, (H + 2 * Hkv) * d)]
    if context is None:
        y = linear_of(a_in, attn.W_qkv)  # (L, (H + 2 H_kv)·d): one product, then its columns
        q, k, v = (y[:, c] for c in cols)
    else:  # each operand from its own input, by its rows of W_qkv
        W, b = attn.W_qkv.weight, attn.W_qkv.bias
        q, k, v = (R.linear(x, W[c], None if b is None else b[c]) for x, c in zip((a_in, context, context), cols))
    return R.split_heads(q, H), R.split_heads(k, Hkv), R.split_heads(v, Hkv)


def feed_forward(ffn, act: str, f_in: Array, p: str) -> dict:
    """``{p}.*`` of a feed-forward module ``p`` (``layers.3.ffn``) on ``f_in (L, d)``: ``pre`` → act →
    ``hidden`` → ``out``; gated (Llama, T5 v1.1: ``W_1`` = [W_gate; W_up], twice the rows ``W_2``
    has columns): ``gate_pre``, ``up``, ``gate`` = act(gate_pre), ``hidden`` = gate ⊙ up."""
    f: dict = {}
    d_ff = ffn.W_2.weight.shape[1]
    if ffn.W_1.weight.shape[0] == 2 * d_ff:
        gu = linear_of(f_in, ffn.W_1)  # (L, 2·d_ff): [W_gate; W_up]
        f[f"{p}.gate_pre"], f[f"{p}.up"] = gu[:, :d_ff], gu[:, d_ff:]
        f[f"{p}.gate"] = activation(act, f[f"{p}.gate_pre"])
        f[f"{p}.hidden"] = f[f"{p}.gate"] * f[f"{p}.up"]
    else:
        f[f"{p}.pre"] = linear_of(f_in, ffn.W_1)
        f[f"{p}.hidden"] = activation(act, f[f"{p}.pre"])
    f[f"{p}.out"] = linear_of(f[f"{p}.hidden"], ffn.W_2)
    return f


# ----------------------------------------------------------------------------------------------
# a layer: its recipe's steps, each by the float64 step function of its op
# ----------------------------------------------------------------------------------------------

@dataclass
class LayerRun:
    """What one layer's step functions read besides their inputs: the model, the layer's index and
    torch module (its norms and blocks under the recipe's names), the prefix of its keys
    (``layers.3``, ``encoder.layers.0``), the mask ``allowed (L, S)``, the positions (L,) of a
    q/k transform (rotary; None: none), an additive score term ``bias (H, L, S)`` (T5), the
    cross-attention's keys' and values' source ``context (S, d)``, and ``attend(q, k, v, prefix)
    → dict``: a kind's own scores (DeBERTa's three terms) in place of :func:`attention`."""

    model: Any
    index: int
    layer: Any
    prefix: str
    allowed: Array
    positions: Optional[Array] = None
    bias: Optional[Array] = None
    context: Optional[Array] = None
    attend: Optional[Callable[..., dict]] = None


#: A step function: ``(run, step, *inputs) → (value, keys)``; ``keys`` are the step's own values
#: by trace name (a block's sub-steps, its ``out`` included).
StepFn = Callable[..., "tuple[Array, dict]"]


def qk_norm(x: Array, norm, span: str) -> Array:
    """QK-norm of ``x (H, L, d_head)``: RMSNorm of each head over d_head (``span`` "head": Gemma 3,
    Qwen3) or over all heads' features H·d_head, as before the head split (``"all"``: OLMo 2)."""
    if span == "all":
        return R.split_heads(norm_of(R.merge_heads(x), norm), x.shape[0])  # (H, L, d_head)
    return norm_of(x, norm)


def attention_step(run: LayerRun, step: Step, a_in: Array) -> tuple[Array, dict]:
    """The attention block ``step.name`` on ``a_in (L, d)``: q, k, v (H|H_kv, L, d_head) from the
    fused projection (cross-attention: k, v from ``run.context``, every key allowed, no bias); with
    rotary positions first ``q_proj``/``k_proj``, QK-norm (``q_normed``, ``k_normed``) and the
    rotation; then :func:`attention`'s scores … ``merged`` (or ``run.attend``'s) and ``out`` = merged W_O."""
    attn, c, p = getattr(run.layer, step.name), run.model.config, f"{run.prefix}.{step.name}"
    cross = step.op == "cross_attention"
    q, k, v = qkv(a_in, attn, run.context if cross else None)
    f: dict = {}
    if run.positions is not None:
        f[f"{p}.q_proj"], f[f"{p}.k_proj"] = q, k
        if getattr(attn, "q_norm", None) is not None:
            span = getattr(c, "qk_norm_span", "head")
            q = f[f"{p}.q_normed"] = qk_norm(q, attn.q_norm, span)
            k = f[f"{p}.k_normed"] = qk_norm(k, attn.k_norm, span)
        inv, _, _ = layer_inv_freq(c, run.index, a_in.shape[0])
        q, k = R.rotate(q, run.positions, inv, "half"), R.rotate(k, run.positions, inv, "half")  # (H|H_kv, L, d)
    f.update({f"{p}.q": q, f"{p}.k": k, f"{p}.v": v})
    if run.attend is not None:
        f.update(run.attend(q, k, v, p))
    else:
        factor = float(R.score_factor(c.scoring, attn.d_head, attn.scale))  # a float: no tensor τ here
        allowed = np.ones((q.shape[1], k.shape[1]), dtype=bool) if cross else run.allowed
        f.update(attention(q, k, v, allowed, factor, p, bias=None if cross else run.bias))
    out = f[f"{p}.out"] = linear_of(f[f"{p}.merged"], attn.W_O)  # (L, d)
    return out, f


def mlp_step(run: LayerRun, step: Step, f_in: Array) -> tuple[Array, dict]:
    """The feed-forward block ``step.name`` on ``f_in (L, d)`` (:func:`feed_forward`)."""
    p = f"{run.prefix}.{step.name}"
    f = feed_forward(getattr(run.layer, step.name), run.model.config.activation, f_in, p)
    return f[f"{p}.out"], f


#: The float64 step function of each op of :mod:`attnscope.recipe`.
STEP_FUNCTIONS: dict[str, StepFn] = {
    "same": lambda run, step, a: (a, {}),
    "add": lambda run, step, a, b: (a + b, {}),
    "norm": lambda run, step, a: (norm_of(a, getattr(run.layer, str(step.module))), {}),
    "attention": attention_step,
    "cross_attention": attention_step,
    "mlp": mlp_step,
}


def layer_recipe(layer, config) -> LayerRecipe:
    """The recipe a torch layer runs: its own (a :class:`~attnscope.modules.layer.RecipeLayer`), else
    the one ``config.norm`` names."""
    recipe = getattr(layer, "recipe", None)
    return recipe if isinstance(recipe, LayerRecipe) else get_layer_recipe(config.norm)


def run_layer(recipe: LayerRecipe, run: LayerRun, x: Array) -> dict:
    """Every step of ``recipe`` on the layer's input ``x (L, d)``, each by its op's function in
    :data:`STEP_FUNCTIONS`. Returns the values by trace name: ``{prefix}.{step}`` for every step
    that is not a block, and each block's keys (``{prefix}.attn.weights``, ``{prefix}.ffn.out``, …)."""
    values, f = {INPUT: x}, {}
    blocks = recipe.blocks
    for step in recipe.steps:
        y, keys = STEP_FUNCTIONS[step.op](run, step, *(values[a] for a in step.args))
        f.update(keys)
        if step.name not in blocks:
            f[f"{run.prefix}.{step.name}"] = y
        values[step.name] = y
    return f
