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

EXAMPLES = {"three-tokens": THREE_TOKENS}
