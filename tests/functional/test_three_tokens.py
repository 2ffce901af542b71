"""The three-token example of 001_c8a750d69dadee2a.txt, with values computed by hand in float64.

The article prints softmax rows 2 and 3 and output rows 2 and 3 wrongly:
it gives [0.289, 0.075, 0.636] and [0.288, 0.057, 0.655]. These tests pin the true values and that
the article's numbers are NOT what attention produces.
"""

import math

import numpy as np
import torch

from attnscope import attention, attention_steps
from attnscope.examples import THREE_TOKENS


def by_hand():
    X = np.array(THREE_TOKENS["X"])
    Q, K, V = (X @ np.array(THREE_TOKENS[w]) for w in ("W_Q", "W_K", "W_V"))
    rows = []
    for i in range(3):
        s = [sum(Q[i, c] * K[j, c] for c in range(2)) / math.sqrt(2) for j in range(3)]
        e = [math.exp(x) for x in s]
        rows.append([x / sum(e) for x in e])
    W = np.array(rows)
    return Q, K, V, W, W @ V


def steps():
    t = lambda name: torch.tensor(THREE_TOKENS[name], dtype=torch.float64)
    X = t("X")
    return attention_steps(X @ t("W_Q"), X @ t("W_K"), X @ t("W_V"))


def test_intermediates_as_in_the_article():
    Q, K, V, _, _ = by_hand()
    np.testing.assert_array_equal(Q, [[1, 0], [1, 1], [2, 1]])
    np.testing.assert_array_equal(K, [[1, 2], [0, 1], [1, 3]])
    np.testing.assert_array_equal(V, [[2, 0], [0, 1], [2, 1]])
    s = steps()
    np.testing.assert_array_equal(s["scores"].numpy(), [[1, 0, 1], [3, 1, 4], [4, 1, 5]])
    # The article's scaled scores, rounded to 2 decimals, are right.
    np.testing.assert_array_equal(np.round(s["scaled"].numpy(), 2), [[0.71, 0, 0.71], [2.12, 0.71, 2.83], [2.83, 0.71, 3.54]])


def test_weights_and_output_equal_hand_computation():
    _, _, V, W, out = by_hand()
    s = steps()
    np.testing.assert_allclose(s["weights"].numpy(), W, rtol=1e-15, atol=1e-16)
    np.testing.assert_allclose(s["out"].numpy(), out, rtol=1e-15, atol=1e-15)
    X = torch.tensor(THREE_TOKENS["X"], dtype=torch.float64)
    np.testing.assert_allclose(attention(X @ torch.tensor(THREE_TOKENS["W_Q"], dtype=torch.float64),
                                         X @ torch.tensor(THREE_TOKENS["W_K"], dtype=torch.float64),
                                         torch.from_numpy(V)).numpy(), out, rtol=1e-15, atol=1e-15)


def test_true_values_to_four_decimals():
    s = steps()
    np.testing.assert_array_equal(np.round(s["weights"].numpy(), 4),
                                  [[0.4011, 0.1978, 0.4011], [0.3057, 0.0743, 0.6200], [0.3177, 0.0381, 0.6443]])
    np.testing.assert_array_equal(np.round(s["out"].numpy(), 4),
                                  [[1.6044, 0.5989], [1.8514, 0.6943], [1.9238, 0.6823]])


def test_article_row_one_is_right_and_rows_two_three_are_wrong():
    w = np.round(steps()["weights"].numpy(), 3)
    assert list(w[0]) == [0.401, 0.198, 0.401]
    assert list(w[1]) != [0.289, 0.075, 0.636]
    assert list(w[2]) != [0.288, 0.057, 0.655]
    out = np.round(steps()["out"].numpy(), 3)
    assert list(out[1]) != [1.85, 0.711] and list(out[2]) != [1.886, 0.712]
