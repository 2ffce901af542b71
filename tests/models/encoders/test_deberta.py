"""DeBERTa's three score terms, each under its own trace name, checked against a float64 NumPy
reference written from the paper's definitions (loops over query/key pairs, DeBERTa's log buckets
re-derived here), and against transformers' own ``disentangled_attention_bias``."""

import math

import numpy as np
import pytest
import torch

from attnscope.errors import InputError

TEXT = ["Relative positions tell a head how far apart two tokens are, said the quick brown fox."]


def buckets_np(rel: int, bucket_size: int, max_position: int) -> int:
    """DeBERTa's log bucket of one relative distance (He et al., appendix; transformers' formula)."""
    if bucket_size <= 0:
        return rel
    mid = bucket_size // 2
    if -mid < rel < mid:
        return rel
    a = abs(rel)
    if a <= mid:
        return rel
    log_pos = math.ceil(math.log(a / mid) / math.log((max_position - 1) / mid) * (mid - 1)) + mid
    return int(math.copysign(log_pos, rel))


def terms_np(tr, model, layer, b=0):
    """c2c, c2p, p2c (H, n, n) in float64 from the traced q, k, pos_q, pos_k."""
    c = model.config
    n = tr.lengths[b]
    q = tr[f"layers.{layer}.attn.q"][b, :, :n].double().numpy()
    k = tr[f"layers.{layer}.attn.k"][b, :, :n].double().numpy()
    span = c.span
    H = q.shape[0]
    c2c, c2p, p2c = (np.zeros((H, n, n)) for _ in range(3))
    pos_k = tr[f"layers.{layer}.attn.pos_k"][0].double().numpy() if "c2p" in c.pos_att_type else None
    pos_q = tr[f"layers.{layer}.attn.pos_q"][0].double().numpy() if "p2c" in c.pos_att_type else None
    for i in range(n):
        for j in range(n):
            c2c[:, i, j] = (q[:, i] * k[:, j]).sum(-1)
            if pos_k is not None:
                r = min(max(buckets_np(i - j, c.position_buckets, c.max_relative_positions) + span, 0), 2 * span - 1)
                c2p[:, i, j] = (q[:, i] * pos_k[:, r]).sum(-1)
            if pos_q is not None:  # the key's position seen from the query: δ(j, i), negated
                r = min(max(-buckets_np(j - i, c.position_buckets, c.max_relative_positions) + span, 0), 2 * span - 1)
                p2c[:, i, j] = (k[:, j] * pos_q[:, r]).sum(-1)
    return c2c, c2p, p2c


@pytest.mark.parametrize("name", ["deberta_v3", "deberta_v2", "deberta_c2p"])
def test_score_terms_are_the_definitions(name, encoders):
    model = encoders[name]
    c = model.config
    tr = model.trace(TEXT, names="layers.*.attn.*")
    n = tr.lengths[0]
    assert n > 2 * c.span or name == "deberta_v3", "the text should reach past the relative span"
    for layer in range(c.n_layers):
        c2c, c2p, p2c = terms_np(tr, model, layer)
        at = lambda s, layer=layer: tr[f"layers.{layer}.attn.{s}"][0, :, :n, :n].double().numpy()
        np.testing.assert_allclose(at("scores_c2c"), c2c, atol=2e-5)
        assert torch.equal(tr[f"layers.{layer}.attn.scores_c2c"], tr[f"layers.{layer}.attn.scores"])
        if "c2p" in c.pos_att_type:
            np.testing.assert_allclose(at("scores_c2p"), c2p, atol=2e-5)
        if "p2c" in c.pos_att_type:
            np.testing.assert_allclose(at("scores_p2c"), p2c, atol=2e-5)
        scale = 1 / math.sqrt(c.d_head * (1 + len(c.pos_att_type)))
        np.testing.assert_allclose(at("bias"), (c2p + p2c) * scale, atol=1e-5)
        # summed and scaled: the softmax input is (c2c + c2p + p2c) / √(d·n)
        np.testing.assert_allclose(at("masked"), (c2c + c2p + p2c) * scale, atol=1e-5)


@pytest.mark.parametrize("name", ["deberta_v3", "deberta_v2", "deberta_c2p"])
def test_relative_term_equals_transformers(name, encoders, hf_encoders):
    """Our ``bias`` is transformers' ``rel_att`` (c2p/√(dn) + p2c/√(dn)) of the same layer input."""
    model, hf = encoders[name], hf_encoders(name)
    tr = model.trace(TEXT, names=["layers.1.attn_in", "layers.1.attn.bias"])
    x = tr["layers.1.attn_in"]
    att = hf.encoder.layer[1].attention.self
    with torch.no_grad():
        q = att.transpose_for_scores(att.query_proj(x), att.num_attention_heads)
        k = att.transpose_for_scores(att.key_proj(x), att.num_attention_heads)
        rel_pos = hf.encoder.get_rel_pos(x)
        sf = 1 + len(att.pos_att_type)
        theirs = att.disentangled_attention_bias(q, k, rel_pos, hf.encoder.get_rel_embedding(), sf)
    ours = tr["layers.1.attn.bias"][0]
    assert (ours - theirs.view_as(ours)).abs().max().item() <= 1e-5


def test_a_replaced_term_flows_into_the_output(encoders):
    model = encoders["deberta_v3"]
    base = model.trace(TEXT, names=["layers.0.attn.masked", "layers.0.attn.scores_c2p", "layers.1.out"])
    zero = lambda t, name: torch.zeros_like(t)  # noqa: E731
    hooked = model.trace(TEXT, names=["layers.0.attn.masked", "layers.1.out"],
                         hooks={"layers.0.attn.scores_c2p[2]": zero, "layers.0.attn.scores_c2c[1]": zero})
    scale = model.config.query_scale
    want = base["layers.0.attn.masked"].clone()
    want[:, 2] -= base["layers.0.attn.scores_c2p"][:, 2] * scale
    c2c = model.trace(TEXT, names=["layers.0.attn.scores_c2c"])["layers.0.attn.scores_c2c"]
    want[:, 1] -= c2c[:, 1] * scale
    assert (hooked["layers.0.attn.masked"] - want).abs().max().item() <= 1e-5
    assert (hooked["layers.1.out"] - base["layers.1.out"]).abs().max().item() > 1e-3


def test_weights_on_demand_include_the_relative_terms(encoders):
    """``trace.weights`` computed from the recorded q, k and bias equals the traced weights."""
    model = encoders["deberta_v2"]
    texts = ["我喜欢人工智能", "北京是中国的首都。我爱北京！"]
    full = model.trace(texts, names=["layers.1.attn.weights"])
    lean = model.trace(texts, names=["layers.1.attn.q", "layers.1.attn.k", "layers.1.attn.bias"])
    for b in range(len(texts)):
        want = full.weights(1, text=b)
        assert (lean.weights(1, text=b) - want).abs().max().item() <= 1e-6
        assert (lean.weights(1, heads=3, queries=[0, 2], text=b) - want[3, [0, 2]]).abs().max().item() <= 1e-6
    assert (lean.weights(1) - full.weights(1)).masked_select(full.mask(1).expand(-1, 4, -1, -1)).abs().max() <= 1e-6
    no_bias = model.trace(texts, names=["layers.1.attn.q", "layers.1.attn.k"])
    with pytest.raises(InputError, match=r"layers\.1\.attn\.bias"):
        no_bias.weights(1)
