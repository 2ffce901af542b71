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
