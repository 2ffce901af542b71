"""Decoder head scores on hand-made attention patterns, against a NumPy computation that finds the
earlier occurrence of each token by searching the ids (not by the diagonal arithmetic)."""

import numpy as np
import pytest
import torch

from attnscope.analysis.classify import Thresholds
from attnscope.analysis.decoder_heads import DECODER_STATS, candidate_ids, decoder_roles, repeat_sums, repeated_tokens, sink_sums
from attnscope.analysis.stats import StatOptions, batch_context
from attnscope.errors import ConfigError, ShapeError

from .patterns import batch


def reference_repeat(w, ids):
    """prev_token, duplicate, induction (sum, count) per head, from the ids: for a query i whose
    token occurred before at j (the only earlier occurrence), duplicate reads w[i, j] and induction
    w[i, j + 1]; prev_token reads w[i, i - 1] for every i ≥ 1."""
    w = np.asarray(w, dtype=np.float64)
    B, H, L, _ = w.shape
    out = {k: [np.zeros(H), 0] for k in ("prev_token", "duplicate", "induction")}
    for b in range(B):
        for i in range(L):
            if i >= 1:
                out["prev_token"][0] += w[b, :, i, i - 1]
                out["prev_token"][1] += 1
            earlier = [j for j in range(i) if ids[b][j] == ids[b][i]]
            if earlier:
                (j,) = earlier
                out["duplicate"][0] += w[b, :, i, j]
                out["induction"][0] += w[b, :, i, j + 1]
                out["duplicate"][1] += 1
                out["induction"][1] += 1
    return {k: s / c for k, (s, c) in out.items()}


def layout(P, T, B=2, seed=0):
    """ids (B, P+2T): prefix 900+p, then T distinct ids, twice."""
    g = np.random.default_rng(seed)
    rows = []
    for _ in range(B):
        r = g.choice(500, size=T, replace=False)
        rows.append([900 + p for p in range(P)] + list(r) + list(r))
    return rows


def patterned(P, T, B=2):
    """weights (B, 5, L, L), L = P + 2T; head 0: previous token (query 0 on itself); 1: induction
    (second copy on i-T+1, elsewhere on itself); 2: duplicate (second copy on i-T, elsewhere on
    itself); 3: all on the first token; 4: uniform over the visible keys."""
    L = P + 2 * T
    w = torch.zeros(B, 5, L, L, dtype=torch.float64)
    for i in range(L):
        w[:, 0, i, max(i - 1, 0)] = 1
        second = i >= P + T
        w[:, 1, i, i - T + 1 if second else i] = 1
        w[:, 2, i, i - T if second else i] = 1
        w[:, 3, i, 0] = 1
        w[:, 4, i, :i + 1] = 1.0 / (i + 1)
    return w


@pytest.mark.parametrize("P,T", [(0, 5), (1, 5), (2, 3), (1, 12)])
def test_hand_made_heads(P, T):
    w = patterned(P, T)
    ids = layout(P, T)
    got = {k: (s / c).numpy() for k, (s, c) in repeat_sums(w, T, P).items()}
    want = reference_repeat(w, ids)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-12, atol=1e-15, err_msg=k)
    # the exact values a reader expects
    assert got["prev_token"][0] == 1.0 and got["induction"][0] == 0.0 and got["duplicate"][0] == 0.0
    assert got["induction"][1] == 1.0 and got["duplicate"][1] == 0.0
    assert got["prev_token"][1] == 0.0  # T > 2: the induction key is never the previous token
    assert got["duplicate"][2] == 1.0 and got["induction"][2] == 0.0 and got["prev_token"][2] == 0.0
    # a head on the first token scores only where the first token is the key (query 1's previous token)
    assert got["prev_token"][3] == pytest.approx(1.0 / (P + 2 * T - 1))
    # uniform: induction = duplicate = mean over the second copy of 1/(i+1)
    mean = np.mean([1.0 / (i + 1) for i in range(P + T, P + 2 * T)])
    assert got["induction"][4] == pytest.approx(mean) and got["duplicate"][4] == pytest.approx(mean)


def test_counts_and_shape_errors():
    w = patterned(1, 4, B=3)
    sums = repeat_sums(w, 4, 1)
    assert sums["prev_token"][1].tolist() == [3.0 * 8] * 5 and sums["induction"][1].tolist() == [12.0] * 5
    with pytest.raises(ShapeError, match="L = prefix \\+ 2·period = 8, got L = 9"):
        repeat_sums(w, 4, 0)
    with pytest.raises(ConfigError, match="period ≥ 2"):
        repeat_sums(torch.zeros(1, 1, 2, 2), 1, 0)
    with pytest.raises(ShapeError, match=r"\(B, H, L, L\)"):
        repeat_sums(torch.zeros(2, 3, 4), 2, 0)


def test_sink_on_a_padded_batch_ignores_padding_and_query_zero():
    lengths = [6, 3, 5]
    am, kinds = batch(lengths)
    B, L = len(lengths), max(lengths)
    g = torch.Generator().manual_seed(0)
    w = torch.full((B, 2, L, L), float("nan"), dtype=torch.float64)  # padding rows NaN
    for b, n in enumerate(lengths):
        w[b, :, :n] = 0.0
        for i in range(n):
            row = torch.rand(2, i + 1, generator=g, dtype=torch.float64)
            w[b, :, i, :i + 1] = row / row.sum(-1, keepdim=True)
    for special_queries in (True, False):
        ctx = batch_context(am, kinds, StatOptions(special_queries=special_queries, causal=True), dtype=w.dtype)
        s, c = sink_sums(w, ctx)["sink"]
        want, n_q = np.zeros(2), 0
        for b, n in enumerate(lengths):
            for i in range(1, n):
                if not special_queries and i == n - 1:  # the [SEP] of patterns.batch is special
                    continue
                want += w[b, :, i, 0].numpy()
                n_q += 1
        assert c.tolist() == [n_q, n_q]
        np.testing.assert_allclose((s / c).numpy(), want / n_q, rtol=1e-12)


def test_sink_shape_error():
    am, kinds = batch([4, 4])
    ctx = batch_context(am, kinds, StatOptions(causal=True))
    with pytest.raises(ShapeError, match="for this batch"):
        sink_sums(torch.zeros(2, 1, 3, 3), ctx)


def test_repeated_tokens_are_distinct_repeated_seeded_and_sliceable():
    cand = torch.tensor([3, 5, 7, 11, 13, 17, 19, 23, 29, 31])
    ids = repeated_tokens(cand, 6, 8, seed=4, prefix=[1])
    assert ids.shape == (6, 17) and (ids[:, 0] == 1).all()
    for row in ids:
        first, second = row[1:9], row[9:]
        assert torch.equal(first, second) and len(set(first.tolist())) == 8
        assert set(first.tolist()) <= set(cand.tolist())
    assert torch.equal(ids, repeated_tokens(cand, 6, 8, seed=4, prefix=[1]))
    assert torch.equal(ids[2:5], repeated_tokens(cand, 3, 8, seed=4, prefix=[1], start=2))
    assert not torch.equal(ids, repeated_tokens(cand, 6, 8, seed=5, prefix=[1]))


class _Tok:
    """A stand-in for a tokenizer: vocabulary 0..9 with 0 and 1 special, 7 a hole."""

    class backend:
        @staticmethod
        def get_added_tokens_decoder():
            class T:
                def __init__(self, special):
                    self.special = special
            return {0: T(True), 1: T(True), 2: T(False)}

        @staticmethod
        def get_vocab(with_added_tokens=True):
            return {f"t{i}": i for i in range(10) if i != 7}

    vocab_size = 10


def test_candidates_exclude_specials_config_ids_holes_and_rows_past_the_embedding():
    class Cfg:
        vocab_size, pad_token_id, bos_token_id, eos_token_ids = 9, 5, None, [8]
    assert candidate_ids(_Tok).tolist() == [2, 3, 4, 5, 6, 8, 9]
    assert candidate_ids(_Tok, Cfg).tolist() == [2, 3, 4, 6]


def test_roles_use_the_thresholds():
    shape = (2, 3)
    means = {s: np.zeros(shape) for s in DECODER_STATS}
    means["induction"][1, 2] = 0.45
    means["prev_token"][0, 1] = 0.9
    means["sink"][0, 1] = 0.5
    means["duplicate"][1, 0] = np.nan
    roles = decoder_roles(means, Thresholds())
    assert roles.tolist() == [["", "previous-token+sink", ""], ["", "", "induction"]]
    roles = decoder_roles(means, Thresholds(induction=0.5, sink=0.6))
    assert roles.tolist() == [["", "previous-token", ""], ["", "", ""]]
