"""analyze() on MiniLM equals the statistics of each text traced alone (no padding, no batching).

The corpus has texts of different lengths, so the length-bucketed batches pad; the reference
traces every text by itself with model.trace and applies the loop reference of patterns.py.
"""

import string

import numpy as np
import pytest

import attnscope
from attnscope.analysis import analyze
from attnscope.analysis.stats import STAT_NAMES

from .patterns import batch, reference_sums

TEXTS = [
    "The cat sat on the mat.",
    "Attention, as the article says, lets every token look at every other token; heads differ.",
    "Short one!",
    "Lower layers are said to be local, higher layers global: we measure it.",
    "Queries, keys and values.",
    "A sentence without punctuation at all",
    "Why?",
]


@pytest.fixture(scope="module")
def minilm():
    return attnscope.load()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    f = tmp_path_factory.mktemp("corpus") / "texts.txt"
    f.write_text("\n".join(TEXTS[:3]) + "\n\n" + "\n".join(TEXTS[3:]) + "\n", encoding="utf-8")
    return f


def per_text_reference(model, texts, special_queries=True):
    n_layers, H = model.config.n_layers, model.config.n_heads
    total = {s: np.zeros((n_layers, H, 2)) for s in STAT_NAMES}
    for text in texts:
        tr = model.trace(text, names="layers.*.attn.weights")
        tokens = tr.tokens[0]
        n = len(tokens)
        am, kinds = batch([n])
        kinds["punct"][0] = torch_bool([all(c in string.punctuation for c in t) and t not in ("[CLS]", "[SEP]")
                                        for t in tokens])
        for layer in range(n_layers):
            sums = reference_sums(tr[f"layers.{layer}.attn.weights"], am, kinds, special_queries=special_queries)
            for s in STAT_NAMES:
                total[s][layer] += np.array(sums[s])
    return {s: np.where(v[..., 1] > 0, v[..., 0] / np.where(v[..., 1] > 0, v[..., 1], 1), np.nan)
            for s, v in total.items()}


def torch_bool(values):
    import torch
    return torch.tensor(values, dtype=torch.bool)


@pytest.mark.parametrize("special_queries", [True, False])
def test_streamed_batches_equal_texts_traced_alone(minilm, corpus, special_queries):
    r = analyze(corpus, minilm, batch_size=3, chunk_size=4, importance_texts=0, progress=False,
                special_queries=special_queries)
    assert r.counters["texts"] == len(TEXTS) and r.counters["empty"] == 1
    assert r.counters["batches"] == 3  # windows of 4 texts: [4 → 3 + 1], [3 → 3]
    assert r.counters["tokens"] == sum(len(minilm.tokenizer.tokenize(t)) for t in TEXTS)
    want = per_text_reference(minilm, TEXTS, special_queries)
    for s in STAT_NAMES:
        assert r.means[s].shape == (6, 12)
        np.testing.assert_allclose(r.means[s], want[s], rtol=2e-5, atol=2e-6, err_msg=s)
    assert r.labels.shape == (6, 12)


def test_truncation_is_counted(minilm, corpus):
    r = analyze(corpus, minilm, max_length=8, importance_texts=0, progress=False)
    lengths = [len(minilm.tokenizer.tokenize(t)) for t in TEXTS]
    assert r.counters["truncated"] == sum(n > 8 for n in lengths)
    assert r.counters["truncated_tokens"] == sum(n - 8 for n in lengths if n > 8)
    assert r.counters["tokens"] == sum(min(n, 8) for n in lengths)


def test_baseline_distance(minilm, corpus):
    r = analyze(corpus, minilm, batch_size=3, chunk_size=4, importance_texts=0, progress=False)
    ns = [len(minilm.tokenizer.tokenize(t)) for t in TEXTS]
    assert r.baseline_distance == pytest.approx(sum((n * n - 1) / 3 for n in ns) / sum(ns), rel=1e-12)
