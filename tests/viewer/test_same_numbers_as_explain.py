"""The viewer's step numbers are attnscope explain's, bit for bit, when each text is traced alone
(as attnscope view and the server do)."""

import numpy as np
import pytest

from attnscope import reference as R
from attnscope.explain.row import model_row_data, row_values
from attnscope.viewer.run import trace_each
from tests.viewer.fixtures import OTHER, TEXT


@pytest.mark.parametrize("text, layer, head, query", [(TEXT, 0, 0, 2), (TEXT, 5, 11, 13), (OTHER, 3, 4, 6)])
def test_step_numbers_equal_explain(minilm, text, layer, head, query):
    (tr,) = trace_each(minilm, [text])
    ours = R.trace_row(tr, layer, head, query)
    d = model_row_data(text, minilm, layer, head, position=query, operands="trace")
    ref = row_values(d["raw"], d["factor"], d["allowed"], d["V"])
    assert ours["tokens"] == d["tokens"]
    for a, b in (("raw", "scores"), ("scaled", "scaled"), ("exp", "exp"), ("weights", "weights"), ("out", "output")):
        assert np.array_equal(ours[a], ref[b]), a
    assert ours["sum"] == ref["sum"] and ours["shift"] == ref["shift"]
