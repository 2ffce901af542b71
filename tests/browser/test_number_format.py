"""The page formats numbers exactly as attnscope explain does (half-up on the shortest decimal
form, integers without decimals, tiny and huge values as mantissa e exponent)."""

import math

import numpy as np
import pytest

from attnscope.explain.numbers import fmt
from tests.browser.conftest import wait_ready

pytestmark = pytest.mark.browser

TRICKY = [0.0, -0.0, 1.0, -3.0, 0.5, 0.0825, 0.00045, 0.99995, 9.99996e-7, -4e-5, 2.5e-7, 1e-12, 1e-300,
          999999.5, 1e6, 123456789.123, 1.7976931348623157e308, 22.7 / 8, 15.3 / 8, 0.125, 0.0625,
          1 / 3, -2 / 3, 2.675, 1.005, 0.045, 1e21, 1.5e-7, 6.77, 42.73, math.pi, -math.e, math.inf,
          -math.inf, math.nan, 0.1 + 0.2, 12345.678949999, 7.00005, -0.00005, 0.00004999,
          # mantissa ties (0 decimals: -3.5e-5; 3: 5.9345e-10, 7.0495e21; 8: 2.233690875e-9) the page
          # rounded the wrong way from x / 10^e in float64, and a subnormal it wrote as NaN digits
          -3.5e-05, 5.9345e-10, 7.0495e21, 2.233690875e-09, 5e-324]


def test_js_show_equals_python_fmt(page, exported):
    page.goto(exported.as_uri())
    wait_ready(page)
    rng = np.random.default_rng(0)
    rand = (rng.standard_normal(600) * 10.0 ** rng.integers(-9, 9, 600)).tolist()
    rand += [float(np.float32(x)) for x in rng.standard_normal(200)]  # float32 values seen as float64
    values = TRICKY + rand
    for dec in (0, 1, 2, 3, 4, 6, 8):
        got = page.evaluate("([xs, d]) => xs.map(x => attnscope.show(x, d))", [values, dec])
        want = [fmt(x, dec) for x in values]
        bad = [(x, g, w) for x, g, w in zip(values, got, want) if g != w]
        assert bad == [], f"decimals={dec}: {bad[:5]}"
