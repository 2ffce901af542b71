"""Adding a scoring is one register_scoring() call: a new one (scale = 1/d_k^0.75) then works in
attention (fused and explicit), attention_steps, the blockwise kernels, MultiHeadAttention,
TransformerConfig, the float64 reference, explain, check and the viewer's data, without touching
any other file."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnscope import SCORINGS, ConfigError, MultiHeadAttention, TransformerConfig, attention, attention_steps
from attnscope import reference as R
from attnscope.blockwise import attention_weights, blockwise_attention
from attnscope.functional import score_factor
from attnscope.scorings import Scoring, get_scoring, register_scoring, unregister_scoring


@pytest.fixture
def pow075():
    sc = register_scoring(Scoring(
        name="pow075", factor=lambda d_k, tau=None: d_k ** -0.75, title="q·k / d_k^0.75",
        latex=r"\frac{q \cdot k}{d_k^{0.75}}",
        words={"en": "Scoring: the dot product divided by $d_k^{0.75}$.", "zh": "打分方式：点积除以 $d_k^{0.75}$。"}))
    yield sc
    unregister_scoring("pow075")
    assert "pow075" not in SCORINGS


def test_a_new_scoring_works_everywhere(pow075):
    assert "pow075" in SCORINGS and SCORINGS[-1] == "pow075" and get_scoring("pow075") is pow075
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 4, 9, 16, generator=g, dtype=torch.float64) for _ in range(3))
    mask = torch.rand(2, 1, 9, 9, generator=g) > 0.2
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=16 ** -0.75)
    assert score_factor("pow075", 16) == 16 ** -0.75
    torch.testing.assert_close(attention(q, k, v, mask, scoring="pow075"), expected)
    out, w = attention(q, k, v, mask, scoring="pow075", return_weights=True)
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(attention_steps(q, k, v, mask, scoring="pow075")["scaled"], q @ k.transpose(-1, -2) * 16 ** -0.75)
    torch.testing.assert_close(blockwise_attention(q, k, v, mask, scoring="pow075", block_size=4), expected)
    torch.testing.assert_close(attention_weights(q, k, mask, scoring="pow075", heads=2), w[:, 2])
    ref_out, ref_w = R.attention(q, k, v, mask.numpy(), scoring="pow075")
    np.testing.assert_allclose(ref_out, expected.numpy(), rtol=0, atol=1e-12)

    m = MultiHeadAttention(16, 2, scoring="pow075").double()
    x = torch.randn(2, 7, 16, generator=g, dtype=torch.float64)
    y, mw = m(x, need_weights=True)
    qm, km, vm = (m.split_heads(t) for t in m.project(x))
    torch.testing.assert_close(mw, torch.softmax(qm @ km.transpose(-1, -2) * 8 ** -0.75, -1))
    torch.testing.assert_close(m(x), y)  # the fused path gives the weights path's output
    assert TransformerConfig(d_model=16, n_heads=2, n_layers=1, d_ff=32, vocab_size=10, scoring="pow075").scoring == "pow075"


def test_registry_errors():
    with pytest.raises(ConfigError, match="scoring 'scaled' is already registered"):
        register_scoring(Scoring(name="scaled", factor=lambda d, t=None: 1.0))
    with pytest.raises(ConfigError, match="built in and cannot be removed"):
        unregister_scoring("cosine")
    with pytest.raises(ConfigError, match=r"unknown scoring 'nope'; choose one of scaled, unscaled, inv_d, cosine, qknorm"):
        get_scoring("nope")
    with pytest.raises(ConfigError, match="identifier"):
        register_scoring(Scoring(name="a b", factor=lambda d, t=None: 1.0))


def test_every_builtin_carries_its_words():
    for name in ("scaled", "unscaled", "inv_d", "cosine", "qknorm"):
        sc = get_scoring(name)
        assert sc.title and sc.latex and set(sc.words) == {"en", "zh"}


def _np_attention(Q, K, V, factor):
    """softmax(factor · Q Kᵀ) V written out independently in float64 NumPy."""
    s = Q @ K.T
    z = s * factor
    e = np.exp(z - z.max(1, keepdims=True))
    w = e / e.sum(1, keepdims=True)
    return s, z, w, w @ V


def test_a_new_scoring_works_in_explain_check_and_the_viewer(pow075):
    from attnscope.check import check
    from attnscope.explain import explain
    from attnscope.trace import Trace
    from attnscope.viewer import data

    # explain: a toy input with scoring pow075 shows its factor, its own sentence and the numbers
    X = np.array([[1.0, 0.0, 2.0, 1.0], [0.0, 1.0, 1.0, 0.0], [1.0, 1.0, 0.0, 2.0]])
    W = [np.eye(4)[[1, 0, 3, 2]] * 0.5 + 0.25, np.eye(4) - 0.5, np.eye(4)[:, ::-1]]
    prob = {"X": X.tolist(), "W_Q": W[0].tolist(), "W_K": W[1].tolist(), "W_V": W[2].tolist(), "scoring": "pow075"}
    w = explain(**prob)
    S, Z, A, O = _np_attention(X @ W[0], X @ W[1], X @ W[2], 4 ** -0.75)
    assert w.meta["scoring"] == "pow075" and w.meta["factor"] == 4 ** -0.75
    for name, want in (("scores", S), ("scaled", Z), ("weights", A), ("output", O)):
        np.testing.assert_allclose(w.values[name], want, rtol=1e-13, atol=1e-15, err_msg=name)
    md, zh = w.render("markdown"), w.render("markdown", lang="zh")
    assert "Scoring: the dot product divided by d_k^0.75." in md and "打分方式：点积除以 d_k^0.75。" in zh
    assert "S' = S · c" in md and f"c = {4 ** -0.75:.4f}" in md and "S' = S / √d_k" not in md
    assert '"scoring": "pow075"' in w.render("json")

    # check: the same problem, a learner's numbers judged right, and one wrong weight found
    ans = {"scaled": np.round(Z, 4).tolist(), "weights": np.round(A, 4).tolist()}
    assert check({"problem": prob, "answers": ans}).ok
    ans["weights"][1][2] = round(float(A[1, 2]) + 0.01, 4)
    r = check({"problem": prob, "answers": ans})
    assert not r.ok and r.first_wrong[0] == "weights" and [(e.row, e.col) for e in r.by_verdict("wrong")] == [(1, 2)]

    # the viewer's data: a trace of a pow075 model carries its factor, and the step view's numbers
    # (softmax(q·kᵀ / d_k^0.75) from the traced q, k, v) are the independent ones
    g = torch.Generator().manual_seed(3)
    cfg = TransformerConfig(d_model=32, n_heads=2, n_layers=1, d_ff=64, vocab_size=10, scoring="pow075")
    q, k, v = (torch.randn(1, 2, 5, 16, generator=g) for _ in range(3))
    weights = torch.softmax(q.double() @ k.double().transpose(-1, -2) * 16 ** -0.75, -1).float()
    tr = Trace({"layers.0.attn.q": q, "layers.0.attn.k": k, "layers.0.attn.v": v, "layers.0.attn.weights": weights},
               tokens=[list("abcde")], input_ids=torch.arange(5)[None], attention_mask=torch.ones(1, 5, dtype=torch.long),
               model_name="pow075-model", family="bert", config=cfg)
    d = data.build(tr)  # also checks its recomputation against the traced weights
    assert d["config"]["scoring"] == "pow075" and d["config"]["factor"] == 16 ** -0.75
    row = R.trace_row(tr, 0, 1, 3)
    S, Z, A, O = _np_attention(q[0, 1].double().numpy(), k[0, 1].double().numpy(), v[0, 1].double().numpy(), 16 ** -0.75)
    for name, want in (("raw", S[3]), ("scaled", Z[3]), ("weights", A[3]), ("out", O[3])):
        np.testing.assert_allclose(row[name], want, rtol=1e-13, atol=1e-15, err_msg=name)
    np.testing.assert_allclose(R.trace_weights(tr, 0, recorded=False), weights.double().numpy()[0], atol=1e-6)
