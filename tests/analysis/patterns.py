"""Hand-made attention patterns over right-padded batches, and a naive float64 reference.

``batch(lengths)`` gives the attention mask and the token kinds of texts laid out as
``[CLS] w w ... w [SEP]`` followed by padding; each pattern fills the real rows of a weight tensor
(B, H, L, L) with a known attention pattern. Padding rows hold garbage (NaN), which the statistics
must ignore.
"""

import math

import numpy as np
import torch


def batch(lengths, punct_at=()):
    """attention_mask and kinds for texts of the given real lengths, padded to max(lengths)."""
    B, L = len(lengths), max(lengths)
    am = torch.zeros(B, L, dtype=torch.bool)
    cls = torch.zeros(B, L, dtype=torch.bool)
    sep = torch.zeros(B, L, dtype=torch.bool)
    punct = torch.zeros(B, L, dtype=torch.bool)
    for b, n in enumerate(lengths):
        am[b, :n] = True
        cls[b, 0] = True
        sep[b, n - 1] = True
        for p in punct_at:
            if 0 < p < n - 1:
                punct[b, p] = True
    return am, {"cls": cls, "sep": sep, "punct": punct}


def fill(lengths, row_fn, H=2):
    """weights (B, H, L, L): row i of text b (real length n) = row_fn(i, n) over its n keys.

    Padding rows are NaN and padding keys 0, as a softmax with a key-padding mask leaves them.
    """
    B, L = len(lengths), max(lengths)
    w = torch.full((B, H, L, L), float("nan"), dtype=torch.float64)
    for b, n in enumerate(lengths):
        w[b, :, :n, :] = 0.0
        for i in range(n):
            w[b, :, i, :n] = torch.as_tensor(row_fn(i, n), dtype=torch.float64)
    return w


def onehot(j, n):
    r = np.zeros(n)
    r[j] = 1.0
    return r


identity = lambda i, n: onehot(i, n)
previous = lambda i, n: onehot(max(i - 1, 0), n)        # row 0 has no previous: itself
following = lambda i, n: onehot(min(i + 1, n - 1), n)    # the last row has no next: itself
uniform = lambda i, n: np.full(n, 1.0 / n)
to_first = lambda i, n: onehot(0, n)
to_last = lambda i, n: onehot(n - 1, n)


def reference(w, am, kinds, **options):
    """Per-head means of every statistic (NaN where nothing counts); see :func:`reference_sums`."""
    return {n: np.array([s / c if c > 0 else np.nan for s, c in v]) for n, v in reference_sums(w, am, kinds, **options).items()}


def reference_sums(w, am, kinds, *, special_queries=True, window=3, causal=False):
    """Per-head [sum, count] of every statistic, by explicit loops over texts, heads and queries
    (float64). Written from the definitions in attnscope.analysis.stats' docstring, independently
    of its code."""
    w = w.double().numpy()
    am = am.numpy().astype(bool)
    k = {n: t.numpy().astype(bool) for n, t in kinds.items()}
    special = k.get("special", k["cls"] | k["sep"]) & am
    B, H, L, _ = w.shape
    sums = {}

    def add(name, h, v, c=1.0):
        s = sums.setdefault(name, [[0.0, 0.0] for _ in range(H)])
        s[h][0] += v
        s[h][1] += c

    for b in range(B):
        idx = [j for j in range(L) if am[b, j]]
        for h in range(H):
            for name in ("entropy", "entropy_norm", "distance", "to_cls", "to_sep", "to_punct", "to_self",
                         "to_prev", "to_next", "argmax_prev", "argmax_next", "to_local", "distance_content"):
                add(name, h, 0.0, 0.0)  # make sure every statistic exists
            for i in idx:
                if special[b, i] and not special_queries:
                    continue
                keys = [j for j in idx if (j <= i or not causal)]
                row = {j: w[b, h, i, j] for j in keys}
                ent = -sum(p * math.log(p) for p in row.values() if p > 0)
                add("entropy", h, ent)
                if len(keys) >= 2:
                    add("entropy_norm", h, ent / math.log(len(keys)))
                add("distance", h, sum(p * abs(i - j) for j, p in row.items()))
                if k["cls"][b].any():
                    add("to_cls", h, sum(p for j, p in row.items() if k["cls"][b, j]))
                if k["sep"][b].any():
                    add("to_sep", h, sum(p for j, p in row.items() if k["sep"][b, j]))
                add("to_punct", h, sum(p for j, p in row.items() if k["punct"][b, j]))
                add("to_self", h, row[i])
                add("to_local", h, sum(p for j, p in row.items() if abs(i - j) <= window))
                best = max(row.values())
                unique_best = [j for j, p in row.items() if p == best]
                if i - 1 in row:
                    add("to_prev", h, row[i - 1])
                    add("argmax_prev", h, float(unique_best == [i - 1]))
                if i + 1 in row:
                    add("to_next", h, row[i + 1])
                    add("argmax_next", h, float(unique_best == [i + 1]))
                content = {j: p for j, p in row.items() if not special[b, j]}
                add("distance_content", h, sum(p * abs(i - j) for j, p in content.items()), sum(content.values()))
    return sums
