"""norm, globenc, alti and value_zeroing against the papers' definitions computed another way: a
float64 loop over heads and source tokens that reruns each layer's attention block from the
model's weights (W_V, W_O rows of the modules, the norms' γ/β/w), written here per recipe, with the
attention weights of the float64 forward (attnscope.reference_model); value zeroing reruns the whole
layer in float64 with v_j = 0. Models: MiniLM (post), a tiny Llama with grouped-query heads (pre),
a tiny Gemma 3 (sandwich, sliding windows), a tiny OLMo 2 (post_block) and a tiny DeBERTa-v3 (post,
relative terms), a tiny T5's encoder stack (pre, RMSNorm, relative bias), a tiny BLOOM (ALiBi), GPT-2,
Qwen3 (QK-norm) and a multi-query Llama."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnscope import reference_model as RM
from attnscope.attribution import attribute
from attnscope.attribution import decompose as DC
from attnscope.errors import InputError
from attnscope.reference_model_blocks import feed_forward
from attnscope.reference_model_seq2seq import forward_seq2seq

TEXT = "The quick brown fox jumps over the lazy dog, said the old man."
NAMES = ["minilm", "llama_gqa", "gemma3", "olmo2", "deberta_v3", "t5", "bloom", "gpt2", "qwen3", "llama_mqa"]


@pytest.fixture(scope="module")
def models(minilm, tiny):
    """The models by name (conftest's session fixtures: MiniLM and the tiny checkpoints)."""
    return {name: minilm if name == "minilm" else tiny(name) for name in NAMES}


def stack_of(model):
    return DC.stack_of(model, "the test")


def forward_f64(model) -> dict:
    """The float64 forward of TEXT, keyed as a single stack's (T5: its encoder's keys without
    ``encoder.``)."""
    if not hasattr(model, "target_batch"):
        return RM.forward(model, TEXT)
    f = forward_seq2seq(model, TEXT, "")
    return {k[len("encoder."):]: v for k, v in f.items() if k.startswith("encoder.")}


def f64(t) -> np.ndarray:
    return t.detach().double().cpu().numpy()


# ---- the attention block written out per recipe, in float64, one head at a time ------------------

def norm_np(z, norm, stats_from, frozen: bool):
    """A norm on ``z (L, d)``; ``frozen``: with the statistics of ``stats_from`` (the real input), an
    affine map of z, else the plain norm of z."""
    ref = stats_from if frozen else z
    if hasattr(norm, "offset"):
        return z / np.sqrt((ref ** 2).mean(-1, keepdims=True) + norm.eps) * (norm.offset + f64(norm.weight))
    y = (z - z.mean(-1, keepdims=True)) / np.sqrt(ref.var(-1, keepdims=True) + norm.eps) * f64(norm.weight)
    return y + f64(norm.bias)


def attention_np(a, attn, alpha, zero: int | None = None, bias: bool = True):
    """Σ_h α^h (a W_V^h + b_V^h) W_O^h (+ b_O), head by head; query head h reads k/v head h // group;
    ``zero``: token zero's value vectors set to 0 in every head."""
    H, Hkv, dh = attn.n_heads, attn.n_kv_heads, attn.d_head
    W, b = f64(attn.W_qkv.weight), attn.W_qkv.bias
    W_O = f64(attn.W_O.weight)
    out = np.zeros((alpha.shape[1], W_O.shape[0]))
    for h in range(H):
        g = h // (H // Hkv)
        rows = slice((H + Hkv) * dh + g * dh, (H + Hkv) * dh + (g + 1) * dh)
        v = a @ W[rows].T + (f64(b)[rows] if b is not None and bias else 0.0)  # (L, d_head)
        if zero is not None:
            v[zero] = 0.0
        out += alpha[h] @ v @ W_O[:, h * dh:(h + 1) * dh].T
    if bias and attn.W_O.bias is not None:
        out += f64(attn.W_O.bias)
    return out


def block_np(model, i, X, f, frozen: bool, bias: bool = True):
    """The attention block of layer ``i`` to its end on ``X (L, d)``, each recipe written out; with
    ``frozen`` every norm uses the statistics of the real forward ``f`` (then the block is affine in X)."""
    layer, p, alpha = stack_of(model).layers[i], f"layers.{i}", f[f"layers.{i}.attn.weights"]
    attn, kind = layer.attn, DC.recipe_of(stack_of(model), i).name
    x_real = RM.layer_input(f, i)
    if kind == "post":
        r = X + attention_np(X, attn, alpha, bias=bias)
        return norm_np(r, layer.ln1, f[f"{p}.attn_resid"], frozen)
    if kind == "pre":
        return X + attention_np(norm_np(X, layer.ln1, x_real, frozen), attn, alpha, bias=bias)
    if kind == "sandwich":
        o = attention_np(norm_np(X, layer.ln1, x_real, frozen), attn, alpha, bias=bias)
        return X + norm_np(o, layer.ln_attn_post, f[f"{p}.attn.out"], frozen)
    assert kind == "post_block"
    o = attention_np(X, attn, alpha, bias=bias)
    return X + norm_np(o, layer.ln_attn_post, f[f"{p}.attn.out"], frozen)


def parts_np(model, i, f):
    """T_i(x_j) (L, L, d) and y (L, d): the frozen block on token j's row alone, minus on zeros."""
    X = RM.layer_input(f, i)
    L = X.shape[0]
    base = block_np(model, i, np.zeros_like(X), f, True)
    T = np.zeros((L, L, X.shape[1]))
    for j in range(L):
        E = np.zeros_like(X)
        E[j] = X[j]
        T[:, j] = block_np(model, i, E, f, True) - base
    return T, block_np(model, i, X, f, True)


def layer_out_np(model, i, f, zero: int):
    """Layer ``i`` rerun in float64 with token ``zero``'s value vectors 0 (MLP included)."""
    layer, X, kind = stack_of(model).layers[i], RM.layer_input(f, i), DC.recipe_of(stack_of(model), i).name
    alpha, act = f[f"layers.{i}.attn.weights"], model.config.activation

    def mlp(z):
        return feed_forward(layer.ffn, act, z, "m")["m.out"]
    if kind == "post":
        r = norm_np(X + attention_np(X, layer.attn, alpha, zero), layer.ln1, None, False)
        return norm_np(r + mlp(r), layer.ln2, None, False)
    if kind == "pre":
        r = X + attention_np(norm_np(X, layer.ln1, None, False), layer.attn, alpha, zero)
        return r + mlp(norm_np(r, layer.ln2, None, False))
    a = norm_np(X, layer.ln1, None, False) if kind == "sandwich" else X
    r = X + norm_np(attention_np(a, layer.attn, alpha, zero), layer.ln_attn_post, None, False)
    m = mlp(norm_np(r, layer.ln2, None, False) if kind == "sandwich" else r)
    return r + norm_np(m, layer.ln_ffn_post, None, False)


def rows(m):
    s = m.sum(-1, keepdims=True)
    return m / np.where(s > 0, s, 1.0)


def rollout_np(mats, upto):
    acc = mats[0]
    for m in mats[1:upto + 1]:
        acc = m @ acc
    return acc


# ---- the tests --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_decomposition_sums_to_the_trace(models, name):
    model = models[name]
    stack = DC.stack_of(model, "test")
    tr = model.trace(TEXT, names=DC.trace_names(stack), **stack.trace_kw)
    worst = 0.0
    for i in range(stack.n_layers):
        recipe = DC.recipe_of(stack, i)
        D = DC.decompose_layer(stack, tr, i)
        assert DC.block_end(recipe) in D
        for step, parts in D.items():
            if step == "x":
                continue
            ref = DC.step_value(tr, f"{stack.prefix}.{i}", recipe, step)
            worst = max(worst, float((parts.sum(1) - ref).abs().max() / ref.abs().max().clamp(min=1)))
    assert worst < 1e-5, worst


@pytest.mark.parametrize("name", NAMES)
def test_globenc_and_alti_are_the_definitions(models, name):
    model = models[name]
    f = forward_f64(model)
    g, a = attribute(model, TEXT, "globenc"), attribute(model, TEXT, "alti", layer=1)
    G, A = [], []
    for i in range(stack_of(model).n_layers):
        T, y = parts_np(model, i, f)
        end = DC.block_end(DC.recipe_of(stack_of(model), i))
        real = f[f"layers.{i}.{end}"]
        assert np.abs(y - real).max() < 1e-9 * max(1.0, np.abs(real).max())  # the frozen block is the block
        G.append(rows(np.linalg.norm(T, axis=-1)))
        c = np.abs(y).sum(-1)[:, None] - np.abs(y[:, None] - T).sum(-1)
        A.append(rows(np.maximum(c, 0)))
    np.testing.assert_allclose(f64(g.per_layer), np.stack(G), atol=2e-5)
    np.testing.assert_allclose(f64(a.per_layer), np.stack(A), atol=2e-5)
    np.testing.assert_allclose(f64(g.scores), rollout_np(G, stack_of(model).n_layers - 1), atol=2e-5)
    np.testing.assert_allclose(f64(a.scores), rollout_np(A, 1), atol=2e-5)
    L = f["layers.0.out"].shape[0]
    assert len(g.tokens) == L and g.scores.shape == (L, L)


@pytest.mark.parametrize("name", NAMES)
def test_norm_is_kobayashi(models, name):
    model = models[name]
    f = forward_f64(model)
    got = attribute(model, TEXT, "norm", layer=0)
    for i in range(stack_of(model).n_layers):
        attn, alpha = stack_of(model).layers[i].attn, f[f"layers.{i}.attn.weights"]
        a = f[f"layers.{i}.attn_in"]
        H, Hkv, dh = attn.n_heads, attn.n_kv_heads, attn.d_head
        W, b, W_O = f64(attn.W_qkv.weight), attn.W_qkv.bias, f64(attn.W_O.weight)
        L = a.shape[0]
        heads, total = np.zeros((H, L, L)), np.zeros((L, L, W_O.shape[0]))
        for h in range(H):
            g = h // (H // Hkv)
            rows_v = slice((H + Hkv + g) * dh, (H + Hkv + g + 1) * dh)
            for j in range(L):
                fx = (a[j] @ W[rows_v].T + (f64(b)[rows_v] if b is not None else 0)) @ W_O[:, h * dh:(h + 1) * dh].T
                for q in range(L):
                    heads[h, q, j] = np.linalg.norm(alpha[h, q, j] * fx)
                    total[q, j] += alpha[h, q, j] * fx
        np.testing.assert_allclose(f64(got.details["heads"][i]), heads, atol=2e-5, rtol=1e-4)
        np.testing.assert_allclose(f64(got.per_layer[i]), np.linalg.norm(total, axis=-1), atol=2e-5, rtol=1e-4)
    np.testing.assert_allclose(f64(got.scores), f64(got.per_layer[0]))


@pytest.mark.parametrize("name", NAMES)
def test_value_zeroing_is_mohebbi(models, name):
    model = models[name]
    f = forward_f64(model)
    stack = stack_of(model)
    name = f"{stack.prefix}.{stack.n_layers - 1}.out"
    before = model.trace(TEXT, names=[name], **stack.trace_kw)[name]
    got = attribute(model, TEXT, "value_zeroing")
    # its passes stop at the layer by raising in a hook: no hook is left behind
    assert torch.equal(model.trace(TEXT, names=[name], **stack.trace_kw)[name], before)
    mats = []
    for i in range(stack_of(model).n_layers):
        out = f[f"layers.{i}.out"]
        L = out.shape[0]
        C = np.zeros((L, L))
        for j in range(L):
            new = layer_out_np(model, i, f, j)
            cos = (new * out).sum(-1) / np.linalg.norm(new, axis=-1) / np.linalg.norm(out, axis=-1)
            C[:, j] = 1 - cos
        mats.append(rows(np.maximum(C, 0)))
    np.testing.assert_allclose(f64(got.per_layer), np.stack(mats), atol=2e-5)
    np.testing.assert_allclose(f64(got.scores), rollout_np(mats, stack_of(model).n_layers - 1), atol=2e-5)


def test_the_compact_attention_path_is_the_full_one(models):
    """The block's input kept compact (own part, bias) gives what the written-out (L, L + 1, d) form
    gives through the general path (which a recipe mixing tokens before its attention would take)."""
    model = models["llama_gqa"]
    stack = stack_of(model)
    tr = model.trace(TEXT, names=DC.trace_names(stack))
    x = DC.layer_input(tr, stack, DC.recipe_of(stack, 1), 1)
    C = DC.norm_terms(DC.identity(x), stack.layers[1].ln1)  # (L, 2, d)
    D = DC.expand(C)  # (L, L + 1, d)
    assert torch.equal(D.sum(1), C.sum(1))
    w = DC.value(tr, "layers.1.attn.weights")
    with torch.no_grad():
        fast = DC.attention_terms(C, stack.layers[1].attn, w, compact=True)
        full = DC.attention_terms(D, stack.layers[1].attn, w, compact=False)
    assert (fast - full).abs().max() < 1e-5 and (fast.sum(1) - DC.value(tr, "layers.1.attn.out")).abs().max() < 1e-5


def test_bad_input_is_one_clear_error(models):
    model = models["llama_gqa"]
    with pytest.raises(InputError, match="out of range"):
        attribute(model, TEXT, "alti", layer=99)
    with pytest.raises(InputError, match="non-empty"):
        attribute(model, "   ", "norm")
    with pytest.raises(InputError, match="takes no target"):
        attribute(model, TEXT, "globenc", target=3)
