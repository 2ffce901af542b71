"""Independent references for the worked calculations: plain Python loops and math, no numpy
vectorisation and nothing from attnscope.explain."""

import math


def matmul(a, b):
    return [[sum(a[i][m] * b[m][j] for m in range(len(b))) for j in range(len(b[0]))] for i in range(len(a))]


def transpose(a):
    return [list(r) for r in zip(*a)]


def softmax(row):
    m = max(row)
    e = [math.exp(x - m) for x in row]
    s = sum(e)
    return [x / s for x in e]


def attention_by_hand(X, W_Q, W_K, W_V):
    """Every intermediate of softmax(QKᵀ/√d_k)V, row vectors, from the formula."""
    Q, K, V = matmul(X, W_Q), matmul(X, W_K), matmul(X, W_V)
    d_k = len(W_Q[0])
    S = matmul(Q, transpose(K))
    S2 = [[s / math.sqrt(d_k) for s in r] for r in S]
    E = [[math.exp(s) for s in r] for r in S2]
    sums = [sum(r) for r in E]
    A = [softmax(r) for r in S2]
    O = matmul(A, V)
    return {"Q": Q, "K": K, "V": V, "scores": S, "scaled": S2, "exp": E, "sums": sums, "weights": A, "output": O}


def half_up(x, d):
    """x rounded half-up at d decimals as text (what a learner writes)."""
    from decimal import ROUND_HALF_UP, Decimal
    s = f"{Decimal(repr(float(x))).quantize(Decimal(1).scaleb(-d), rounding=ROUND_HALF_UP):f}"
    return "0" + s[2:] if s.startswith("-0") and set(s[1:]) <= set("0.") else s


THREE = {"X": [[1, 0], [0, 1], [1, 1]], "W_Q": [[1, 0], [1, 1]], "W_K": [[1, 2], [0, 1]], "W_V": [[2, 0], [0, 1]]}
