"""Built-in toy inputs from the articles.

``THREE_TOKENS`` is the hand-computed example of ``001_c8a750d69dadee2a.txt``: three 2-d token
vectors (我, 爱, 你) and the matrices W_Q, W_K, W_V. Row vectors, ``Q = X @ W_Q``.
The article's printed softmax rows 2 and 3 and outputs 2 and 3 are wrong; compute, never copy.
"""

from __future__ import annotations

THREE_TOKENS = {
    "name": "three-tokens",
    "tokens": ["我", "爱", "你"],
    "X": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
    "W_Q": [[1.0, 0.0], [1.0, 1.0]],
    "W_K": [[1.0, 2.0], [0.0, 1.0]],
    "W_V": [[2.0, 0.0], [0.0, 1.0]],
}

#: Multi-head attention by hand (the fourth article): the same three tokens in 4 dimensions, 2 heads of
#: 2, one fused W_QKV = [W_Q | W_K | W_V] (4 × 12, GPT-2's c_attn layout) and W_O. The numbers are
#: chosen so that the two heads attend differently; they come from no model.
MULTI_HEAD = {
    "name": "multi-head",
    "tokens": ["我", "爱", "你"],
    "X": [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]],
    "n_heads": 2,
    "W_QKV": [[1, 0, 0, 1, 0, 1, 1, 0, 1, 0, 0, 2],
              [0, 1, 1, 0, 1, 0, 0, 1, 0, 1, 1, 0],
              [1, 1, 0, 0.5, 0.5, 0, 1, 1, 1, 1, 0, 0],
              [0, 0.5, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1]],
    "W_O": [[1, 0, 0.5, 0], [0, 1, 0, 0.5], [0.5, 0, 1, 0], [0, 0.5, 0, 1]],
}

#: Grouped-query attention by hand: 4 query heads share 2 key/value heads (2 query heads each),
#: separate W_Q (4 × 8), W_K, W_V (4 × 4), W_O (8 × 4), causal as in a decoder.
GROUPED_QUERY = {
    "name": "grouped-query",
    "tokens": ["我", "爱", "你"],
    "X": [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]],
    "n_heads": 4,
    "n_kv_heads": 2,
    "causal": True,
    "W_Q": [[1, 0, 0, 1, 0.5, 0, 1, 1],
            [0, 1, 1, 0, 0, 1, -1, 0],
            [1, 1, 0, 0.5, 1, 0, 0, 1],
            [0, 0.5, 1, 1, 0, 1, 1, 0]],
    "W_K": [[0, 1, 1, 0], [1, 0, 0, 1], [0.5, 0, 1, 1], [1, 1, 0, 0]],
    "W_V": [[1, 0, 0, 2], [0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1]],
    "W_O": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1],
            [0.5, 0, 0, 0], [0, 0.5, 0, 0], [0, 0, 0.5, 0], [0, 0, 0, 0.5]],
}

EXAMPLES: dict[str, dict] = {"three-tokens": THREE_TOKENS, "multi-head": MULTI_HEAD, "grouped-query": GROUPED_QUERY}
