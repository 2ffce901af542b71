"""Training tasks: the recall answer is the stored value; lm windows; the n-gram reference losses."""

import collections
import math

import pytest
import torch

from attnscope.errors import ConfigError
from attnscope.experiments import tasks


def test_recall_targets_are_the_values_stored_with_the_queried_keys():
    t = tasks.AssociativeRecall()
    ids, tgt = t.batch(50, torch.Generator().manual_seed(0))
    assert ids.shape == tgt.shape == (50, t.seq_len)
    K, V, P = t.n_keys, t.n_values, t.n_pairs
    for row_ids, row_tgt in zip(ids.tolist(), tgt.tolist()):
        pairs = row_ids[:P]
        store = {x // V: x % V for x in pairs}
        assert len(store) == P  # distinct keys
        assert all(x < K * V for x in pairs)
        assert row_tgt[:P] == [tasks.IGNORE] * P
        for q, y in zip(row_ids[P:], row_tgt[P:]):
            assert q >= K * V
            assert store[q - K * V] == y
    assert int(ids.max()) < t.vocab_size


def test_recall_rejects_impossible_sizes():
    with pytest.raises(ConfigError, match="n_pairs"):
        tasks.AssociativeRecall(n_keys=4, n_pairs=8)
    with pytest.raises(ConfigError, match="n_queries"):
        tasks.AssociativeRecall(n_pairs=4, n_queries=5)
    with pytest.raises(ConfigError, match="positive"):
        tasks.AssociativeRecall(n_values=0)


def test_lm_windows_are_next_character_targets_from_the_right_split():
    t = tasks.CharLM(seq_len=16)
    c = tasks.corpus(t.min_count)
    x, y = t.batch(8, torch.Generator().manual_seed(1))
    assert x.shape == y.shape == (8, 16)
    assert torch.equal(x[:, 1:], y[:, :-1])
    train = c["train"].tolist()
    text = "".join(map(chr, train[:10]))  # non-empty, decodable ids
    assert text
    # every training window occurs in the training split
    s = c["train"]
    for row in x:
        starts = (s[: len(s) - 16] == row[0]).nonzero().flatten()
        assert any(torch.equal(s[i:i + 16], row) for i in starts.tolist())
    assert 0 < c["vocab_size"] <= 200 and len(c["heldout"]) > 10_000


def test_ngram_losses_match_a_plain_python_count_model():
    g = torch.Generator().manual_seed(2)
    V = 5
    train = torch.randint(0, V, (3000,), generator=g)
    train[1::2] = (train[0::2] + 1) % V  # some structure for the bigram to find
    held = torch.randint(0, V, (400,), generator=g)
    a = 0.1
    for n in (1, 2, 3):
        tr, te = train.tolist(), held.tolist()
        full = collections.Counter(tuple(tr[i:i + n]) for i in range(len(tr) - n + 1))
        ctx = collections.Counter(tuple(tr[i:i + n - 1]) for i in range(len(tr) - n + 1))
        total = 0.0
        for i in range(len(te) - n + 1):
            gram = tuple(te[i:i + n])
            denom = (len(tr) if n == 1 else ctx[gram[:-1]]) + a * V
            total -= math.log((full[gram] + a) / denom)
        ref = total / (len(te) - n + 1)
        assert tasks.ngram_loss(train, held, V, n, a) == pytest.approx(ref, rel=1e-10)


def test_lm_reference_losses_are_ordered():
    d = tasks.CharLM().describe()
    assert d["unigram_loss"] > d["bigram_loss"] > d["trigram_loss"] > 0
    assert d["baseline"] == d["unigram_loss"] and d["threshold"] == d["bigram_loss"]


def test_unknown_task():
    with pytest.raises(ConfigError, match="unknown task 'sort'"):
        tasks.make_task("sort")
