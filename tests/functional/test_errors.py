"""Bad input gives a ValueError that names the argument and the shapes, never a torch traceback."""

import pytest
import torch

from attnscope import ConfigError, ShapeError, attention

q = torch.randn(2, 5, 8)
k = torch.randn(2, 7, 8)
v = torch.randn(2, 7, 3)


@pytest.mark.parametrize("args, pattern", [
    ((torch.randn(8), k, v), r"q must have at least 2 dims.*\(8\)"),
    ((q, torch.randn(2, 7, 9), v), r"q and k must have the same last dim.*\(2, 5, 8\).*\(2, 7, 9\)"),
    ((q, k, torch.randn(2, 6, 3)), r"k and v must have the same length S.*\(2, 7, 8\).*\(2, 6, 3\)"),
    ((q.long(), k, v), r"q must be a floating-point tensor, got dtype torch.int64"),
    ((q, k.double(), v), r"share a dtype"),
    ((torch.randn(3, 5, 8), k, v), r"leading.*do not broadcast"),
    (([[1.0]], k, v), r"q must be a torch.Tensor, got list"),
])
def test_bad_qkv(args, pattern):
    with pytest.raises(ShapeError, match=pattern):
        attention(*args)


@pytest.mark.parametrize("mask, pattern", [
    (torch.ones(5, 6, dtype=torch.bool), r"mask of shape \(5, 6\) does not broadcast to the scores' shape \(2, 5, 7\)"),
    (torch.ones(3, 5, 7, dtype=torch.bool), r"mask of shape \(3, 5, 7\)"),
    (torch.ones(5, 7, dtype=torch.int64), r"mask must be boolean .* got dtype torch.int64"),
])
def test_bad_mask(mask, pattern):
    for return_weights in (False, True):
        with pytest.raises(ShapeError, match=pattern):
            attention(q, k, v, mask, return_weights=return_weights)


def test_unknown_scoring_lists_choices():
    with pytest.raises(ConfigError, match=r"unknown scoring 'sqrt'.*scaled, unscaled, inv_d, cosine, qknorm"):
        attention(q, k, v, scoring="sqrt")


def test_bad_dropout():
    with pytest.raises(ConfigError, match="dropout_p must be in"):
        attention(q, k, v, dropout_p=1.5)


def test_errors_are_value_errors():
    assert issubclass(ShapeError, ValueError) and issubclass(ConfigError, ValueError)


@pytest.mark.parametrize("shapes", [((2, 1, 3), (1, 4, 3)), ((5,), (2, 5)), ((), (3, 1)), ((2, 3), (3, 2)), ((0, 1), (1, 4))])
def test_broadcast_shapes_agrees_with_torch(shapes):
    from attnscope.functional import broadcast_shapes
    try:
        expected = torch.broadcast_shapes(*shapes)
    except RuntimeError:
        expected = None
    assert broadcast_shapes(*shapes) == expected


@pytest.mark.parametrize("causal", [1, "yes", None])
@pytest.mark.parametrize("weights", [False, True])
def test_causal_must_be_true_or_false(causal, weights):
    # it reached SDPA as is_causal=1 (a TypeError from torch) without weights, and was taken for
    # its truth value with them
    with pytest.raises(ConfigError, match=f"causal must be True or False, got {type(causal).__name__} "):
        attention(q, k, v, causal=causal, return_weights=weights)


def test_numpy_bool_causal_is_a_bool():
    np = pytest.importorskip("numpy")
    torch.testing.assert_close(attention(q, k, v, causal=np.bool_(True)), attention(q, k, v, causal=True),
                               rtol=0, atol=0)


@pytest.mark.parametrize("scoring", ["scaled", "unscaled", "inv_d", "qknorm"])
@pytest.mark.parametrize("weights", [False, True])
def test_a_temperature_for_a_scoring_without_one_is_refused(scoring, weights):
    # it was dropped without a word: the weights were those of no temperature at all
    with pytest.raises(ConfigError, match=f"temperature is τ of cosine scoring; scoring '{scoring}' has none"):
        attention(q, k, v, scoring=scoring, temperature=0.01, return_weights=weights)
    with pytest.raises(ConfigError, match="has none"):
        attention(q, k, v, scoring=scoring, temperature=torch.tensor(0.01), return_weights=weights)


@pytest.mark.parametrize("value", ["no", 0, 1, "False"])
def test_yes_no_arguments_must_be_true_or_false(value):
    # attention(return_weights="no") returned (out, weights) and check_finite="no" turned the
    # checks on: any truthy value was taken for True, as causal= was before
    from attnscope.blockwise import blockwise_attention
    from attnscope.functional import attention_steps
    with pytest.raises(ConfigError, match=f"return_weights must be True or False, got {type(value).__name__} "):
        attention(q, k, v, return_weights=value)
    for call in (attention, attention_steps):
        with pytest.raises(ConfigError, match=f"check_finite must be True or False, got {type(value).__name__} "):
            call(q, k, v, check_finite=value)
    with pytest.raises(ConfigError, match=f"return_lse must be True or False, got {type(value).__name__} "):
        blockwise_attention(q, k, v, return_lse=value)
    out = attention(q, k, v, check_finite=None)  # None: the context's setting
    torch.testing.assert_close(out, attention(q, k, v), rtol=0, atol=0)


@pytest.mark.parametrize("tau", [torch.tensor(-0.1), torch.tensor(0.0), torch.tensor(float("-inf")),
                                 torch.tensor([0.1, -0.1]).view(2, 1, 1)])
def test_a_tensor_temperature_must_be_positive(tau):
    # a float τ ≤ 0 was refused, the same τ as a tensor was not: τ = −0.1 gave the weight 0.994 to
    # the key that τ = 0.1 weighs 7.5e-5 (attention turned around), τ = 0 gave NaN weights
    from attnscope.blockwise import attention_weights, blockwise_attention
    from attnscope.functional import attention_steps
    qh, kh, vh = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 4)
    for call in (attention, attention_steps, blockwise_attention):
        with pytest.raises(ConfigError, match=r"temperature must be positive in every entry, got -?0?.*at index"):
            call(qh, kh, vh, scoring="cosine", temperature=tau)
    with pytest.raises(ConfigError, match=r"temperature must be positive in every entry"):
        attention_weights(qh, kh, scoring="cosine", temperature=tau)
    good = torch.tensor([0.5, 2.0]).view(2, 1, 1)  # a valid tensor τ: each head as its float τ
    out = attention(qh, kh, vh, scoring="cosine", temperature=good, return_weights=True)[0]
    for h, t in enumerate((0.5, 2.0)):
        torch.testing.assert_close(out[:, h], attention(qh[:, h], kh[:, h], vh[:, h], scoring="cosine", temperature=t))


@pytest.mark.parametrize("args, kwargs, pattern", [
    (("scaled", 64), {"temperature": 0.5}, r"temperature is τ of cosine scoring; scoring 'scaled' has none"),
    (("cosine", 64), {"temperature": -0.1}, r"temperature must be finite and positive, got -0.1"),
    (("scaled", 64), {"scale": float("nan")}, r"scale must be finite, got nan"),
    (("scaled", 64), {"scale": "x"}, r"scale must be a real number or None, got str 'x'"),
    (("scaled", 2.5), {}, r"d_k must be an integer, got float 2.5"),
    (("scaled", -4), {}, r"d_k must be 0 or more, got -4"),
    (("scaled", True), {}, r"d_k must be an integer, got bool True"),
])
def test_score_factor_checks_its_arguments(args, kwargs, pattern):
    # score_factor('scaled', 64, temperature=0.5) dropped τ (0.125), ('cosine', 64, temperature=-0.1)
    # gave −10, scale='x' came back as 'x', d_k = 2.5 gave 1/√2 and d_k = −4 gave 1
    from attnscope.functional import score_factor
    with pytest.raises(ConfigError, match=pattern):
        score_factor(*args, **kwargs)


def test_score_factor_values():
    from attnscope.functional import score_factor
    assert score_factor("scaled", 64) == 0.125 and score_factor("inv_d", 64) == 1 / 64
    assert score_factor("cosine", 8, temperature=0.5) == 2.0 and score_factor("inv_d", 64, scale=0.3) == 0.3
    assert score_factor("scaled", 0) == 1.0  # an empty dot product: any factor, 1 by convention


def test_the_step_functions_check_their_arguments():
    # prepare_qk(eps=nan) gave NaN everywhere and eps=-1 NaN for a zero row, eps='x' and an int q
    # were torch's TypeError/NotImplementedError; raw_scores with d_k 4 against 3 was torch's
    # "Expected size for first two dimensions of batch2"; combine_masks took an int mask to
    # torch.finfo's TypeError
    from attnscope.functional import combine_masks, prepare_qk, raw_scores
    qs, ks = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    for eps in (float("nan"), -1.0, 0.0, "x", True):
        with pytest.raises(ConfigError, match=r"eps must be a positive finite number, got"):
            prepare_qk(qs, ks, "cosine", eps=eps)
    with pytest.raises(ShapeError, match=r"q must be a floating-point tensor, got dtype torch.int64"):
        prepare_qk(qs.long(), ks.long(), "qknorm")
    with pytest.raises(ShapeError, match=r"q and k must have the same last dim d_k, got q \(2, 3, 4\) and k \(2, 5, 3\)"):
        raw_scores(qs, torch.randn(2, 5, 3))
    with pytest.raises(ShapeError, match=r"leading dims of q, k"):
        raw_scores(qs, torch.randn(3, 5, 4))
    with pytest.raises(ShapeError, match=r"k must be a torch.Tensor, got list"):
        raw_scores(qs, [[1.0]])
    with pytest.raises(ShapeError, match=r"mask must be boolean .* got dtype torch.int64"):
        combine_masks(torch.tensor([1, 0]), 1, 2, causal=False, dtype=torch.float32, device="cpu")
    with pytest.raises(ShapeError, match=r"mask of shape \(3\) does not broadcast"):
        combine_masks(torch.tensor([True, False, True]), 1, 2, causal=False, dtype=torch.float32, device="cpu")
    with pytest.raises(ConfigError, match=r"dtype must be a floating-point torch.dtype"):
        combine_masks(None, 2, 2, causal=True, dtype=torch.int64, device="cpu")
    with pytest.raises(ConfigError, match=r"causal must be True or False"):
        combine_masks(None, 2, 2, causal="yes", dtype=torch.float32, device="cpu")
    # the values: q @ kᵀ by hand, F.normalize, the causal mask written out
    torch.testing.assert_close(raw_scores(qs, ks), torch.einsum("bld,bsd->bls", qs, ks))
    torch.testing.assert_close(prepare_qk(qs, ks, "cosine")[0], torch.nn.functional.normalize(qs, dim=-1, eps=1e-6))
    inf = float("-inf")
    assert combine_masks(None, 2, 3, causal=True, dtype=torch.float32, device="cpu").tolist() == [[0, inf, inf], [0, 0, inf]]


@pytest.mark.parametrize("tau", [0.5, torch.tensor(0.5)])
def test_a_temperature_beside_a_scale_is_refused(tau):
    # scale replaces 1/τ: attention(scoring='cosine', temperature=0.5, scale=2.0) used 2.0 and
    # dropped τ without a word (the weights of τ = 0.5 and of τ = 0.05 were the same)
    from attnscope.blockwise import blockwise_attention
    from attnscope.functional import attention_steps, score_factor
    for call in (attention, attention_steps, blockwise_attention):
        with pytest.raises(ConfigError, match=r"scale replaces the factor 1/τ of 'cosine' scoring"):
            call(q, k, v, scoring="cosine", temperature=tau, scale=2.0)
    with pytest.raises(ConfigError, match=r"scale replaces the factor 1/τ"):
        score_factor("cosine", 8, scale=2.0, temperature=tau)
    # scale alone still replaces the default 1/τ: softmax(cos(q, k) · 2) by hand
    cos = torch.nn.functional.normalize(q.double(), dim=-1, eps=1e-6) @ \
        torch.nn.functional.normalize(k.double(), dim=-1, eps=1e-6).transpose(-1, -2)
    torch.testing.assert_close(attention(q, k, v, scoring="cosine", scale=2.0).double(),
                               torch.softmax(cos * 2.0, -1) @ v.double(), rtol=1e-5, atol=1e-6)
