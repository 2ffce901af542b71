"""Display of values far below the shown decimals, down to the smallest subnormal float.

Like every displayed number, the mantissa is rounded from the value's shortest decimal form.
"""

import math

import pytest

from attnscope.explain.numbers import show


@pytest.mark.parametrize("x, digits, exp", [
    (5e-324, "5.0000", -324),
    (math.exp(-745.0), "5.0000", -324),  # an exp() that used to crash the display
    (1e-320, "1.0000", -320),
    (2.5e-7, "2.5000", -7),
    (-9.99996e-9, "-1.0000", -8),  # rounds up to the next power of ten
    (123456789.0, "1.2346", 8),
])
def test_tiny_and_huge_values_show_mantissa_and_exponent(x, digits, exp):
    s = show(x, 4)
    assert (s.digits, s.exp) == (digits, exp)


@pytest.mark.parametrize("x, decimals, plain", [
    (1.0746e-4, 4, "1.0746e-4"),  # RoPE's slowest pair: 0.0001 would keep one digit, 7 % off
    (-3.2e-4, 4, "-3.2000e-4"),
    (9.4e-4, 4, "9.4000e-4"),
    (9.99e-4, 4, "0.0010"),       # two digits at the places: as in a table
    (0.0123, 4, "0.0123"),
    (0.04, 2, "4.00e-2"),
    (0.0, 4, "0"),
])
def test_a_number_alone_in_a_sentence_keeps_more_than_one_digit(x, decimals, plain):
    assert show(x, decimals, alone=True).plain() == plain
    assert show(1.0746e-4, 4).plain() == "0.0001"  # in a table it stands among numbers at the places


def test_a_sentence_gives_the_slowest_rotation_with_its_digits():
    from attnscope.explain.blocks import T
    from attnscope.explain.render.base import Ctx

    theta = 10000.0 ** (-62 / 64)  # the last of 32 pairs of a 64-wide head, base 10000
    for lang in ("en", "zh"):
        text = Ctx(lang).text(T("rope.freq", {"base": 10000, "d": 64, "last": theta, "n": 32}))
        assert "1.3335e-4" in text and "0.0001" not in text, text
