"""Every recorded step equals its formula, recomputed in float64 from the model's weights and the
previous step: embeddings, q/k/v, scores, scaling, mask, softmax, weighted sum, W_O, residuals,
LayerNorms, FFN — for post-LN BERT (MiniLM) and pre-LN causal GPT-2, on a padded batch."""

import math

import pytest
import torch
import torch.nn.functional as F

TEXTS = ["The cat sat on the mat.", "Attention, please!"]


def _d(t):
    return t.double()


def _lin(x, layer):
    return _d(x) @ _d(layer.weight).T + _d(layer.bias)


def _ln(x, ln):
    x = _d(x)
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + ln.eps) * _d(ln.weight) + _d(ln.bias)


def _close(a, b, tol=2e-5):
    err = (_d(a) - _d(b)).abs().max().item()
    assert err <= tol * max(1.0, _d(b).abs().max().item()), err


@pytest.mark.parametrize("which", ["minilm", "gpt2"])
def test_each_step_is_its_formula(which, minilm, tiny_models):
    model = minilm if which == "minilm" else tiny_models["gpt2"]
    c = model.config
    tr = model.trace(TEXTS)
    ids, mask = tr.input_ids, tr.attention_mask
    B, L = ids.shape
    H, dh = c.n_heads, c.d_head
    e = model.embed

    # embeddings
    _close(tr["embed.tokens"], e.token_embedding.weight[ids])
    _close(tr["embed.positions"], e.position_embedding.weight[torch.arange(L)].expand(B, L, -1))
    total = _d(tr["embed.tokens"]) + _d(tr["embed.positions"])
    if e.segment_embedding is not None:
        _close(tr["embed.segments"], e.segment_embedding.weight[torch.zeros_like(ids)])
        total = total + _d(tr["embed.segments"])
    _close(tr["embed.out"], _ln(total, e.norm) if e.norm is not None else total)

    keep = mask.bool()[:, None, None, :]  # (B, 1, 1, S)
    if c.causal:
        keep = keep & torch.ones(L, L, dtype=torch.bool).tril()
    prev = tr["embed.out"]
    for i, layer in enumerate(model.layers):
        p = f"layers.{i}."
        x = _d(prev)
        a_in = _ln(x, layer.ln1) if c.norm == "pre" else x
        _close(tr[p + "attn_in"], a_in)
        qkv = _lin(tr[p + "attn_in"], layer.attn.W_qkv)  # (B, L, 3d)
        heads = [t.view(B, L, H, dh).transpose(1, 2) for t in qkv.split(c.d_model, -1)]
        for name, t in zip("qkv", heads):
            _close(tr[p + "attn." + name], t)
        scores = _d(tr[p + "attn.q"]) @ _d(tr[p + "attn.k"]).transpose(-1, -2)
        _close(tr[p + "attn.scores"], scores)
        scaled = _d(tr[p + "attn.scores"]) / math.sqrt(dh)
        _close(tr[p + "attn.scaled"], scaled)
        masked = tr[p + "attn.masked"]
        assert torch.isneginf(masked[~keep.expand(B, H, L, L)]).all()
        _close(masked.masked_fill(~keep, 0), scaled.masked_fill(~keep, 0))
        w = torch.softmax(_d(masked), -1)
        _close(tr[p + "attn.weights"], w)
        _close(tr[p + "attn.z"], _d(tr[p + "attn.weights"]) @ _d(tr[p + "attn.v"]))
        _close(tr[p + "attn.merged"], _d(tr[p + "attn.z"]).transpose(1, 2).reshape(B, L, c.d_model))
        _close(tr[p + "attn.out"], _lin(tr[p + "attn.merged"], layer.attn.W_O))
        _close(tr[p + "attn_resid"], x + _d(tr[p + "attn.out"]))
        ln_ffn = layer.ln2 if c.norm == "pre" else layer.ln1
        _close(tr[p + "ffn_in"], _ln(tr[p + "attn_resid"], ln_ffn))
        pre_act = _lin(tr[p + "ffn_in"], layer.ffn.W_1)
        act = F.gelu(pre_act, approximate="tanh" if c.activation == "gelu_tanh" else "none")
        _close(tr[p + "ffn.hidden"], act)
        _close(tr[p + "ffn.out"], _lin(tr[p + "ffn.hidden"], layer.ffn.W_2))
        base = tr[p + "attn_resid"] if c.norm == "pre" else tr[p + "ffn_in"]
        _close(tr[p + "ffn_resid"], _d(base) + _d(tr[p + "ffn.out"]))
        out = _d(tr[p + "ffn_resid"]) if c.norm == "pre" else _ln(tr[p + "ffn_resid"], layer.ln2)
        _close(tr[p + "out"], out)
        prev = tr[p + "out"]
    if c.final_norm:
        _close(tr["final_norm"], _ln(prev, model.ln_f))
        _close(tr.output, tr["final_norm"])
    else:
        _close(tr.output, prev)
