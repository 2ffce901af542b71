"""The scaling lesson softmaxes score vectors and differentiates the first: given none, it says so
(an empty list used to end in a TypeError unpacking None at the Jacobian step)."""

import math

import pytest

from attnscope.errors import InputError
from attnscope.explain import explain
from attnscope.explain.scaling import explain_scaling


def test_an_empty_list_of_vectors_is_a_clear_error():
    with pytest.raises(InputError, match=r"give at least one score vector"):
        explain(lesson="scaling", scores=[], samples=100)
    with pytest.raises(InputError, match=r"give at least one score vector"):
        explain_scaling(vectors=[], samples=100)


def test_one_vector_alone_is_still_taken_as_a_list_of_one():
    worked = explain_scaling(d_k=4, samples=100, vectors=[1.0, 2.0])
    text = worked.render("markdown", "en", 4)
    top = 1.0 / (1.0 + math.exp(-1.0))  # softmax([1, 2])[1], unscaled
    top_scaled = 1.0 / (1.0 + math.exp(-0.5))  # softmax([1, 2] / √4)[1]
    assert f"{top:.4f}" in text and f"{top_scaled:.4f}" in text
