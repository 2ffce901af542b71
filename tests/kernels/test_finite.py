"""Non-finite values: by default they flow through as the kernel makes them (as in torch);
with ``check_finite=True`` (or inside ``checking_finite()``) the first bad step raises
NonFiniteError naming it. ``scale`` must always be a finite number."""

import pytest
import torch

from attnscope import ConfigError, MultiHeadAttention, attention, attention_steps
from attnscope.errors import InputError, NonFiniteError
from attnscope.kernels import checking_finite

g = torch.Generator().manual_seed(1)
q, k, v = (torch.randn(1, 2, 5, 4, generator=g) for _ in range(3))


def with_value(t, value, at=(0, 1, 2, 3)):
    t = t.clone()
    t[at] = value
    return t


@pytest.mark.parametrize("name, args, pattern", [
    ("q", (with_value(q, float("nan")), k, v),
     r"^q has non-finite values \(NaN ×1\) in shape \(1, 2, 5, 4\), first at index \(0, 1, 2, 3\)"),
    ("k", (q, with_value(k, float("inf")), v), r"^k has non-finite values \(\+inf ×1\)"),
    ("v", (q, k, with_value(v, -float("inf"))), r"^v has non-finite values \(-inf ×1\)"),
])
@pytest.mark.parametrize("weights", [False, True])
def test_bad_inputs_are_named(name, args, pattern, weights):
    attention(*args, return_weights=weights)  # default: no check (NaN out, or a 0 row from SDPA's CPU kernel)
    with pytest.raises(NonFiniteError, match=pattern):
        attention(*args, return_weights=weights, check_finite=True)
    assert issubclass(NonFiniteError, InputError)


def test_nan_mask_is_named_but_minus_inf_is_a_mask():
    blocked = torch.zeros(5, 5).masked_fill(torch.eye(5, dtype=torch.bool), float("-inf"))
    attention(q, k, v, blocked, check_finite=True)  # −inf blocks a key: fine
    with pytest.raises(NonFiniteError, match=r"^mask has non-finite values \(NaN ×1\).*may hold -inf"):
        attention(q, k, v, with_value(blocked, float("nan"), (0, 1)), check_finite=True)


@pytest.mark.parametrize("weights", [False, True])
def test_overflow_of_q_dot_k_is_named(weights):
    big = torch.full((1, 1, 3, 4), 1e20)  # q·k = 4e40 > float32's 3.4e38
    with pytest.raises(NonFiniteError, match="overflow"):
        attention(big, big, torch.ones(1, 1, 3, 2), return_weights=weights, check_finite=True)
    with pytest.raises(NonFiniteError,
                       match=r"^scaled scores \(q·k × factor\) has non-finite values.*q·k overflowed torch.float32"):
        attention_steps(big, big, torch.ones(1, 1, 3, 2), check_finite=True)
    attention(big.double(), big.double(), torch.ones(1, 1, 3, 2, dtype=torch.float64), check_finite=True)  # fits float64


def test_context_manager_turns_checks_on_everywhere():
    bad = with_value(q, float("nan"))
    m = MultiHeadAttention(8, 2)
    x = torch.full((1, 3, 8), float("nan"))
    m(x)  # no check by default
    with checking_finite():
        with pytest.raises(NonFiniteError, match="^q has non-finite"):
            attention(bad, k, v)
        with pytest.raises(NonFiniteError, match="^q has non-finite"):
            m(x)  # the module's q, projected from the NaN input
        attention(bad, k, v, check_finite=False)  # the call's own setting wins
    attention(bad, k, v)  # off again after the block


@pytest.mark.parametrize("scale, pattern", [(float("nan"), "scale must be finite, got nan"),
                                            (float("inf"), "scale must be finite, got inf"),
                                            ("x", "scale must be a real number or None, got str 'x'"),
                                            (True, "scale must be a real number or None, got bool"),
                                            (torch.tensor(0.5), "scale must be a real number or None, got Tensor")])
def test_bad_scale_is_always_an_error(scale, pattern):
    for weights in (False, True):
        with pytest.raises(ConfigError, match=pattern):
            attention(q, k, v, scale=scale, return_weights=weights)


def test_bad_temperature():
    with pytest.raises(ConfigError, match="temperature must be finite and positive, got nan"):
        attention(q, k, v, scoring="cosine", temperature=float("nan"))
    with pytest.raises(NonFiniteError, match="^temperature has non-finite"):
        attention(q, k, v, scoring="cosine", temperature=torch.tensor([float("nan")]), check_finite=True)


@pytest.mark.parametrize("scoring", ["scaled", "unscaled"])
def test_half_overflow_of_the_scores_is_named_when_only_the_weights_are_wanted(scoring):
    # float16 scores beyond 65504: the explicit steps always name the overflow in half precision;
    # the lean path (weights only) returned NaN weights and a NaN output without a word.
    g16 = torch.Generator().manual_seed(5)
    qh, kh = ((torch.randn(1, 2, 4, 64, generator=g16) * 300).half() for _ in range(2))
    vh = torch.randn(1, 2, 4, 8, generator=g16).half()
    biggest = float((qh.double() @ kh.double().transpose(-1, -2)).abs().max()) / (8 if scoring == "scaled" else 1)
    assert biggest > torch.finfo(torch.float16).max  # float64: the scaled scores do not fit float16
    with pytest.raises(NonFiniteError, match=r"^scaled scores \(q·k × factor\) has non-finite.*overflowed torch.float16"):
        attention(qh, kh, vh, scoring=scoring, return_weights=True)
    m = MultiHeadAttention(8, 2, scoring=scoring).half()
    with torch.no_grad():
        m.W_qkv.weight.fill_(1.0)
        m.W_qkv.bias.zero_()
    x = torch.full((1, 3, 8), 600.0).half()  # every q and k feature 4,800: q·k = 4 · 4800² ≈ 9.2e7
    with pytest.raises(NonFiniteError, match="overflowed torch.float16"):
        m(x, need_weights=True)
