"""The viewer's step view computes a row's exponentials in the page (util.rowSteps): they follow the
float64 reference's rule, shifted by the row maximum when it is beyond ±EXP_SHOW_LIMIT either way."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from attnscope import reference as R
from attnscope import viewer

STEPS = """([scaled, limit]) => {
  const s = Float64Array.from(scaled.map(x => x === null ? -Infinity : x));
  const st = window.attnscope.util.rowSteps(s, s, new Float64Array(s.length), 1, limit);
  return {shift: st.shift, exp: Array.from(st.exp), sum: st.sum, weights: Array.from(st.weights)};
}"""


@pytest.mark.parametrize("scaled", [[-1000.0, -1001.0], [60.0, 58.0, 1.0], [-50.0, -51.0], [3.0, None]])
def test_row_steps_in_the_page_follow_the_reference(page, scaled):
    # [-1000, -1001] showed e^s' = 0, 0 and Σ = 0 beside weights 0.73, 0.27 (e^-1000 underflows)
    assets = Path(viewer.__file__).parent / "assets"
    page.set_content("<!doctype html><html><body></body></html>")
    page.add_script_tag(content=(assets / "viewer_core.js").read_text(encoding="utf-8"))
    got = page.evaluate(STEPS, [scaled, R.EXP_SHOW_LIMIT])
    x = np.array([-np.inf if v is None else v for v in scaled])
    want = R.softmax_parts(x)
    assert got["shift"] == float(want["shift"][0])
    np.testing.assert_allclose(got["exp"], want["exp"], rtol=1e-15)
    assert got["sum"] == pytest.approx(float(want["sum"]), rel=1e-15)
    np.testing.assert_allclose(got["weights"], want["weights"], rtol=1e-14)
    if scaled == [-1000.0, -1001.0]:
        assert got["exp"] == [1.0, pytest.approx(math.exp(-1), rel=1e-15)]
