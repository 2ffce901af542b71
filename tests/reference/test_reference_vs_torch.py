"""attnscope.reference, the float64 NumPy twin of every step, against torch float64 (torch's own
ops, not attnscope's kernels): the one test that lets every application trust it."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnscope import reference as R
from attnscope.errors import NonFiniteError
from attnscope.positions import sinusoidal_positions, sinusoidal_table_np

g = torch.Generator().manual_seed(7)
q, k, v = (torch.randn(2, 3, 6, 8, generator=g, dtype=torch.float64) for _ in range(3))
k, v = k[..., :5, :], v[..., :5, :4]  # S = 5, d_v = 4
mask = torch.rand(2, 1, 6, 5, generator=g) > 0.3
mask[0, 0, 2] = False  # a query that sees nothing


def torch_steps(q, k, v, mask, causal, scoring, temperature=0.1):
    if scoring == "cosine":
        q, k, f = F.normalize(q, dim=-1, eps=1e-6), F.normalize(k, dim=-1, eps=1e-6), 1 / temperature
    elif scoring == "qknorm":
        q, k, f = F.layer_norm(q, (8,), eps=1e-6), F.layer_norm(k, (8,), eps=1e-6), 8 ** -0.5
    else:
        f = {"scaled": 8 ** -0.5, "unscaled": 1.0, "inv_d": 1 / 8}[scoring]
    scores = q @ k.transpose(-1, -2)
    scaled = scores * f
    allowed = mask if not causal else mask & torch.ones(6, 5, dtype=torch.bool).tril()
    masked = scaled.masked_fill(~allowed, float("-inf"))
    alive = allowed.any(-1, keepdim=True)
    weights = torch.softmax(masked.masked_fill(~alive, 0.0), -1) * alive
    lse = torch.logsumexp(masked, -1)
    return {"q": q, "k": k, "scores": scores, "scaled": scaled, "masked": masked, "weights": weights,
            "out": weights @ v, "lse": lse}


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("scoring", ["scaled", "unscaled", "inv_d", "cosine", "qknorm"])
def test_attention_steps(scoring, causal):
    got = R.attention_steps(q, k, v, mask.numpy(), causal=causal, scoring=scoring)
    want = torch_steps(q, k, v, mask, causal, scoring)
    for name, t in want.items():
        np.testing.assert_allclose(got[name], t.numpy(), rtol=1e-12, atol=1e-12, err_msg=name)


def test_softmax_log_softmax_logsumexp():
    x = torch.randn(4, 7, generator=g, dtype=torch.float64) * 30
    x[1] = float("-inf")
    x[2, :3] = float("-inf")
    w = R.softmax(x)
    np.testing.assert_allclose(w[[0, 2, 3]], torch.softmax(x[[0, 2, 3]], -1).numpy(), rtol=1e-13, atol=0)
    assert np.array_equal(w[1], np.zeros(7))
    np.testing.assert_allclose(R.log_softmax(x)[[0, 2, 3]], torch.log_softmax(x[[0, 2, 3]], -1).numpy(), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(R.logsumexp(x), torch.logsumexp(x, -1).numpy(), rtol=1e-13)
    np.testing.assert_allclose(R.softmax(np.array([1000.0, 1001.0])), [1 / (1 + np.e), np.e / (1 + np.e)], rtol=1e-15)


def test_layer_norm_linear_gelu_relu():
    x = torch.randn(3, 8, generator=g, dtype=torch.float64)
    w, b = torch.randn(8, generator=g, dtype=torch.float64), torch.randn(8, generator=g, dtype=torch.float64)
    want = F.layer_norm(x, (8,), w, b, eps=1e-12).numpy()
    np.testing.assert_allclose(R.layer_norm(x, w, b, eps=1e-12), want, rtol=1e-12, atol=1e-13)
    W, c = torch.randn(5, 8, generator=g, dtype=torch.float64), torch.randn(5, generator=g, dtype=torch.float64)
    np.testing.assert_allclose(R.linear(x, W, c), F.linear(x, W, c).numpy(), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(R.gelu(x), F.gelu(x).numpy(), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(R.gelu(x, "tanh"), F.gelu(x, approximate="tanh").numpy(), rtol=1e-13, atol=1e-15)
    np.testing.assert_array_equal(R.relu(x), F.relu(x).numpy())


def test_heads_and_positions():
    x = torch.randn(2, 6, 12, generator=g, dtype=torch.float64)
    heads = x.view(2, 6, 3, 4).transpose(1, 2)  # (B, H, L, d_head), as MultiHeadAttention.split_heads
    np.testing.assert_array_equal(R.split_heads(x, 3), heads.numpy())
    np.testing.assert_array_equal(R.merge_heads(heads), x.numpy())
    np.testing.assert_allclose(sinusoidal_table_np(50, 16), sinusoidal_positions(50, 16, dtype=torch.float64).numpy(),
                               rtol=0, atol=1e-15)


def test_factor_and_check_finite():
    assert R.score_factor("scaled", 64) == 0.125 and R.score_factor("cosine", 64, temperature=0.5) == 2.0
    assert R.score_factor("inv_d", 64, scale=0.3) == 0.3
    np.testing.assert_allclose(R.score_factor("cosine", 8, temperature=np.array([0.5, 0.25])), [2.0, 4.0])
    R.check_finite("masked", np.array([0.0, -np.inf]), allow_neg_inf=True)
    with pytest.raises(NonFiniteError, match=r"^scaled has non-finite values \(\+inf ×1\) in shape \(2\), first at index \(1,\)"):
        R.check_finite("scaled", [1.0, np.inf])


# ----------------------------------------------------------------------------------------------
# the steps the applications show (explain, check, the viewer's step view, the server), and a
# trace's attention recomputed from its q and k
# ----------------------------------------------------------------------------------------------

def test_softmax_parts_and_the_shown_exp():
    x = torch.randn(5, 6, generator=g, dtype=torch.float64) * 40
    x[0] = torch.tensor([80.0, 55.0, 10.0, -3.0, 0.0, 51.0], dtype=torch.float64)  # max > 50: shifted
    x[1, 2:] = float("-inf")
    x[2] = float("-inf")  # sees nothing
    x[3] = torch.tensor([50.0, 49.0, 1.0, 2.0, 3.0, 4.0], dtype=torch.float64)  # max = 50: as is
    got = R.softmax_parts(x.numpy())
    finite_max = torch.where(x.isfinite(), x, torch.tensor(float("-inf"), dtype=torch.float64)).amax(-1, keepdim=True)
    shift = torch.where(finite_max > 50, finite_max, torch.zeros_like(finite_max))
    e = torch.exp(x - shift)
    np.testing.assert_array_equal(got["shift"][:, 0], [80.0, 0.0, 0.0, 0.0, shift[4, 0].item()])
    np.testing.assert_allclose(got["exp"], e.numpy(), rtol=1e-14, atol=0)
    np.testing.assert_allclose(got["sum"], e.sum(-1).numpy(), rtol=1e-14, atol=0)
    alive = [0, 1, 3, 4]
    np.testing.assert_allclose(got["weights"][alive], torch.softmax(x[alive], -1).numpy(), rtol=1e-13, atol=1e-300)
    assert np.array_equal(got["weights"][2], np.zeros(6)) and got["sum"][2] == 0.0
    np.testing.assert_allclose(R.divide_by_sum(got["exp"], got["sum"][:, None])[alive], got["weights"][alive], rtol=1e-13)
    assert np.array_equal(R.divide_by_sum(got["exp"], got["sum"][:, None])[2], np.zeros(6))
    np.testing.assert_array_equal(R.shifted_exp(x.numpy(), got["shift"]), got["exp"])
    assert R.EXP_SHOW_LIMIT == 50.0


def test_row_steps_against_torch():
    q1, k1, v1 = q[0, 1, 3], k[0, 1], v[0, 1]  # (8,), (5, 8), (5, 4)
    allowed = np.array([True, False, True, True, False])
    got = R.row_steps(R.raw_scores(q1, k1), 8 ** -0.5, allowed, v1)
    raw = k1 @ q1
    scaled = raw * 8 ** -0.5
    masked = scaled.masked_fill(~torch.from_numpy(allowed), float("-inf"))
    w = torch.softmax(masked, -1)
    for name, want in (("scores", raw), ("scaled", scaled), ("masked", masked), ("weights", w), ("output", w @ v1),
                       ("exp", torch.exp(masked))):
        np.testing.assert_allclose(got[name], want.numpy(), rtol=1e-13, atol=1e-15, err_msg=name)
    assert got["shift"] == 0.0 and got["sum"] == pytest.approx(torch.exp(masked).sum().item(), rel=1e-14)
    assert isinstance(got["shift"], float) and isinstance(got["sum"], float)
    big = R.row_steps(np.array([60.0, 58.0, 1.0]), 1.0)
    assert big["shift"] == 60.0
    np.testing.assert_allclose(big["exp"], np.exp(np.array([0.0, -2.0, -59.0])), rtol=1e-15)
    nothing = R.row_steps(np.array([1.0, 2.0]), 1.0, np.array([False, False]))
    assert np.array_equal(nothing["weights"], [0.0, 0.0]) and nothing["sum"] == 0.0
    np.testing.assert_allclose(R.raw_scores(q[0, 1], k[0, 1])[3], R.raw_scores(q1, k1), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_weights_of_prepared_operands(causal):
    got = R.attention_weights(q, k, 0.3, causal=causal, mask=mask.numpy())
    allowed = mask if not causal else mask & torch.ones(6, 5, dtype=torch.bool).tril()
    masked = (q @ k.transpose(-1, -2) * 0.3).masked_fill(~allowed, float("-inf"))
    alive = allowed.any(-1, keepdim=True)
    want = torch.softmax(masked.masked_fill(~alive, 0.0), -1) * alive
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-12, atol=1e-15)


def test_operand_factor_and_a_models_prepared_q_k():
    from attnscope import MultiHeadAttention, name_hook_points
    from attnscope.errors import ConfigError
    assert R.operand_factor("scaled", 64) == 0.125 and R.operand_factor("inv_d", 8) == 0.125
    assert R.operand_factor("qknorm", 16) == 0.25 and R.operand_factor("unscaled", 5) == 1.0
    with pytest.raises(ConfigError, match="cosine scoring divides by the model's learned temperature"):
        R.operand_factor("cosine", 8)
    # what a model's hook points q and k hold are the prepared operands: qknorm's q, k after its
    # LayerNorms, so that softmax(q·kᵀ/√d) of them is the model's own weights
    m = MultiHeadAttention(16, 2, scoring="qknorm").double()
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(generator=g)
    points = name_hook_points(m)
    seen = {}
    for name in ("q", "k", "weights"):
        points[name].add_hook(lambda t, n: seen.__setitem__(n, t.detach()))
    m(torch.randn(2, 7, 16, generator=g, dtype=torch.float64), need_weights=True)
    np.testing.assert_allclose(R.attention_weights(seen["q"], seen["k"], R.operand_factor("qknorm", 8)),
                               seen["weights"].numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kw", [dict(scale=float("nan")), dict(scale="x"), dict(scoring="cosine", temperature=0.0),
                                dict(scoring="cosine", temperature=-1.0), dict(scoring="cosine", temperature=np.array([-0.1])),
                                dict(scoring="cosine", temperature=0.1, scale=0.5), dict(temperature=0.1)])
def test_reference_refuses_the_arguments_the_torch_attention_refuses(kw):
    """The float64 reference took a NaN scale (weights 0/0 → zeros), a τ of 0 (ZeroDivisionError)
    or below, and a τ beside a scale or for a scoring without one (dropped without a word)."""
    from attnscope import ConfigError, attention
    q = np.random.default_rng(0).standard_normal((3, 4))
    with pytest.raises(ConfigError) as torch_error:
        t = torch.from_numpy(q)
        attention(t, t, t, **{k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()})
    with pytest.raises(ConfigError) as ours:
        R.attention(q, q, q, **kw)
    assert str(ours.value) == str(torch_error.value)
