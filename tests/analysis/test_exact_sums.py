"""Exact sums (analysis/exact.py): the correctly rounded sum of the numbers, whatever their order.

The reference is independent: ``math.fsum`` (Shewchuk's algorithm, correctly rounded) and
``fractions.Fraction`` arithmetic; plain float64 addition of the same numbers in another order
differs, which is why the sums are kept exact.
"""

import math
import random
from fractions import Fraction

import numpy as np
import torch

from attnscope.analysis.accumulate import StatsAccumulator
from attnscope.analysis.exact import ExactArray, decode, encode, to_scaled_int


def numbers(seed, n=400):
    r = random.Random(seed)
    xs = [r.uniform(-1, 1) * 10 ** r.randint(-20, 20) for _ in range(n)]
    return xs + [5e-324, -5e-324, 1.7976931348623157e308, -1.7976931348623157e308, 0.0, -0.0]


def test_any_order_gives_the_correctly_rounded_sum():
    xs = numbers(1)
    want = math.fsum(xs)
    assert want == float(sum(Fraction(x) for x in xs))  # the two references agree
    r = random.Random(2)
    seen_float = set()
    for _ in range(5):
        r.shuffle(xs)
        a = ExactArray(1)
        for x in xs:
            a.add(0, [x])
        assert a.values()[0] == want
        seen_float.add(float(np.sum(np.array(xs))))
        # split into parts, merged in any grouping
        parts = [ExactArray(1) for _ in range(3)]
        for k, x in enumerate(xs):
            parts[k % 3].add(0, [x])
        assert parts[2].merge(parts[0]).merge(parts[1]).values()[0] == want
    assert len(seen_float) > 1  # plain float64 sums of the same numbers do differ by order


def test_scaled_ints_round_trip_and_specials():
    for x in numbers(3):
        n = to_scaled_int(x)
        assert Fraction(n, 2**1074) == Fraction(x)
        assert decode(encode(n)) == n
    a = ExactArray(4)
    a.add(0, [1.0, math.inf, math.nan, math.inf])
    a.add(0, [2.0, 1.0, 1.0, -math.inf])
    v = a.values()
    assert v[0] == 3.0 and v[1] == math.inf and np.isnan(v[2]) and np.isnan(v[3])
    back = ExactArray.from_list(a.to_list())
    np.testing.assert_array_equal(back.values(), v)


def test_accumulator_state_is_exact():
    acc = StatsAccumulator(1, 2, ("x",))
    for x in numbers(4, 50):
        acc.add(0, {"x": (torch.tensor([x, 0.1], dtype=torch.float64), torch.tensor([1.0, 1.0]))})
    back = StatsAccumulator.from_state_dict(acc.state_dict())
    assert back.exact_sums.ints == acc.exact_sums.ints
    assert acc.sums[0, 0, 0].item() == math.fsum(numbers(4, 50))
    assert acc.sums[0, 0, 1].item() == math.fsum([0.1] * 56)


def test_a_finite_sum_past_the_largest_float_reads_as_inf():
    """Finite addends whose exact sum rounds past the largest float64 read as ±inf (the module's
    promise; ``math.fsum`` raises OverflowError there, float addition and Fraction say inf), not an
    OverflowError; and merging inf into −inf makes NaN without a RuntimeWarning, as add does."""
    import warnings

    big = 1.7976931348623157e308
    for sign in (1, -1):
        xs = [sign * big, sign * big, sign * 1e300]
        want = float(sign * big) + float(sign * big)
        assert want == sign * math.inf
        a = ExactArray(1)
        for x in xs:
            a.add(0, [x])
        assert a.values()[0] == want
    a = ExactArray(1)
    for x in (big, big, -big):  # exact: back under the largest float
        a.add(0, [x])
    assert a.values()[0] == big == float(Fraction(big) * 2 - Fraction(big))
    a, b = ExactArray(1), ExactArray(1)
    a.add(0, [math.inf])
    b.add(0, [-math.inf])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(a.merge(b).values()[0])
