"""Batches on lanes (one thread and one model replica each): the same sums as one batch at a time,
added in corpus order whatever the lanes' timing; replicas share the weights but not the hooks;
a lane's error reaches the caller."""

import threading
import time

import numpy as np
import pytest
import torch

import attnscope
from attnscope.analysis import analyze
from attnscope.analysis.accumulate import StatsAccumulator
from attnscope.analysis.analyzer import BatchAnalyzer
from attnscope.analysis.batching import TextEncoder, bucket
from attnscope.analysis.corpus import Text
from attnscope.analysis.replica import replicate
from attnscope.analysis.run import NAMES
from attnscope.analysis.stats import StatOptions
from attnscope.errors import ConfigError

TEXTS = [f"Sentence number {i} has {'many ' * (i % 5)}words, and a comma." for i in range(23)]


@pytest.fixture(scope="module")
def minilm():
    return attnscope.load()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    f = tmp_path_factory.mktemp("corpus") / "texts.txt"
    f.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    return f


def test_replica_shares_weights_not_hooks(minilm):
    r = replicate(minilm)
    assert r is not minilm and r.lock is not minilm.lock and r.tokenizer is minilm.tokenizer
    for (n, p), (m, q) in zip(minilm.named_parameters(), r.named_parameters()):
        assert n == m and p is q
    assert r.layers[0].attn.weights is not minilm.layers[0].attn.weights
    ids = minilm.encode(["one text", "and another text"]).input_ids
    seen = []
    with r.hooks({"layers.0.attn.weights": lambda w, name: seen.append(name)}):
        r(ids)
        minilm(ids)  # no hook on the original
    assert seen == ["layers.0.attn.weights"]
    torch.testing.assert_close(r(ids), minilm(ids), rtol=0, atol=0)  # the same modules on the same weights


def test_lanes_equal_one_batch_at_a_time(minilm, corpus):
    kw = dict(batch_size=3, chunk_size=8, importance_texts=0, progress=False)
    one = analyze(corpus, minilm, lanes=1, **kw)
    two = analyze(corpus, minilm, lanes=2, **kw)
    three = analyze(corpus, minilm, lanes=3, **kw)
    assert one.counters == two.counters == three.counters
    for s in one.means:
        # every lane runs a batch on one thread: 2 and 3 lanes add the same numbers in the same order
        np.testing.assert_array_equal(two.means[s], three.means[s], err_msg=s)
        # one lane runs on torch's threads: the forward's rounding may differ in the last bits
        np.testing.assert_allclose(one.means[s], two.means[s], rtol=1e-5, atol=1e-7, err_msg=s)


def test_sums_are_added_in_submission_order(minilm, monkeypatch):
    """Batches finish out of order (the first is slowed down); the accumulator still gets them
    in the order they were submitted."""
    import attnscope.analysis.analyzer as A

    enc = TextEncoder(minilm.tokenizer, 64)
    batches = [enc.pad(items) for items in bucket(enc.encode([Text(i, t, "") for i, t in enumerate(TEXTS)]), 4)]
    order, slow = [], threading.Event()
    real_run = A._Lane.run

    def run(self, tb, options):
        if tb.indices == batches[0].indices and not slow.is_set():
            slow.set()
            time.sleep(0.5)
        return real_run(self, tb, options)

    monkeypatch.setattr(A._Lane, "run", run)
    acc = StatsAccumulator(6, 12, NAMES)
    with BatchAnalyzer(minilm, acc, StatOptions(), lanes=2, on_done=lambda tb: order.append(tb.indices)) as an:
        for tb in batches:
            an.submit(tb)
        an.flush()
    assert order == [tb.indices for tb in batches]
    assert acc.counters["texts"] == len(TEXTS) and acc.counters["batches"] == len(batches)


def test_a_lane_error_reaches_the_caller(minilm, corpus, monkeypatch):
    import attnscope.analysis.analyzer as A

    def broken(self, tb, options):
        raise RuntimeError("lane broke")

    monkeypatch.setattr(A._Lane, "run", broken)
    with pytest.raises(RuntimeError, match="lane broke"):
        analyze(corpus, minilm, lanes=2, batch_size=3, importance_texts=0, progress=False)
    assert not [t for t in threading.enumerate() if t.name == "attnscope-analyze"]  # the lanes stopped


def test_a_small_memory_budget_runs_one_batch_at_a_time(minilm, corpus):
    enc = TextEncoder(minilm.tokenizer, 64)
    batches = [enc.pad(items) for items in bucket(enc.encode([Text(i, t, "") for i, t in enumerate(TEXTS)]), 5)]
    acc, ref = StatsAccumulator(6, 12, NAMES), StatsAccumulator(6, 12, NAMES)
    with BatchAnalyzer(minilm, acc, StatOptions(), lanes=2, max_bytes=1) as an:
        for tb in batches:
            an.submit(tb)
            assert len(an._pending) <= 1
        an.flush()
    with BatchAnalyzer(minilm, ref, StatOptions(), lanes=3) as an:
        for tb in batches:
            an(tb)
    assert torch.equal(acc.sums, ref.sums) and acc.counters == ref.counters


def test_lanes_must_be_positive(minilm, corpus):
    with pytest.raises(ConfigError, match="lanes"):
        analyze(corpus, minilm, lanes=0, progress=False)
    with pytest.raises(ConfigError, match="lanes"):
        BatchAnalyzer(minilm, StatsAccumulator(6, 12, NAMES), StatOptions(), lanes=True)


def test_the_callers_thread_count_is_kept(minilm, corpus):
    before = torch.get_num_threads()
    analyze(corpus, minilm, lanes=2, batch_size=4, importance_texts=0, progress=False)
    assert torch.get_num_threads() == before


def test_an_unpadded_batch_runs_without_the_mask_and_the_same_bits(minilm):
    """A batch without padding is run with no mask (its all-ones mask would only cost the
    explicit kernel a pass over every layer's scores): the model is called with None, and the
    sums are those of the weights of a forward given the mask, bit for bit. A padded batch still
    hands its mask over."""
    import attnscope.analysis.analyzer as A
    from attnscope.analysis.stats import attention_sums, batch_context

    enc = TextEncoder(minilm.tokenizer, 10)  # every text is longer: all cut to 10 tokens, no padding
    tb = enc.pad(enc.encode([Text(i, t, "") for i, t in enumerate(TEXTS[:4])]))
    padded = TextEncoder(minilm.tokenizer, 64)
    tp = padded.pad(padded.encode([Text(i, t, "") for i, t in enumerate(TEXTS[:4])]))
    assert bool(tb.attention_mask.all()) and not bool(tp.attention_mask.all())
    masks: list = []
    spy = minilm.register_forward_pre_hook(lambda mod, args: masks.append(args[1]))
    lane = A._Lane(minilm, attention_sums)
    opt = StatOptions()
    try:
        with torch.no_grad(), minilm.hooks({A.WEIGHTS: lane.on_weights}):
            got, _ = lane.run(tb, opt)
            lane.run(tp, opt)
    finally:
        spy.remove()
    assert masks[0] is None and torch.equal(masks[1], tp.attention_mask)
    weights: list = []
    with torch.no_grad(), minilm.hooks({A.WEIGHTS: lambda w, name: weights.append(w.clone())}):
        minilm(tb.input_ids, tb.attention_mask, torch.zeros_like(tb.input_ids))  # the mask given
    ctx = batch_context(tb.attention_mask, tb.kinds, opt)
    assert [layer for layer, _ in got] == list(range(6))
    for (layer, sums), w in zip(got, weights):
        want = attention_sums(w, context=ctx)
        for stat, (s, c) in sums.items():
            assert torch.equal(s, want[stat][0]) and torch.equal(c, want[stat][1]), (layer, stat)


@pytest.mark.parametrize("option, value, says", [
    ("max_texts", 1.5, "max_texts must be a whole number"),  # read 2 texts
    ("window", 2.5, "window must be a whole number"),        # was window 2, reported as ±2.5
    ("batch_size", True, "batch_size must be a whole number"),
    ("max_length", 3.5, "max_length must be a whole number"),  # a TypeError from range()
    ("special_queries", "no", "special_queries must be True or False"),  # a truthy string: True
    ("thresholds", {"local": 0.3}, "thresholds must be an attnscope.analysis.Thresholds"),  # AttributeError
])
def test_settings_of_the_wrong_type_are_refused(corpus, option, value, says):
    with pytest.raises(ConfigError, match=says):
        analyze(corpus, "no model is loaded before the settings are checked", progress=False, **{option: value})


def test_importance_and_norm_texts_are_the_first_that_decode(minilm, tmp_path):
    """--importance-texts 2 on a corpus whose second line is not UTF-8 (skipped) ablated 1 text, and
    the norm shares read 1: the undecodable line took a place among "the first N texts"."""
    bad, clean = tmp_path / "bad.txt", tmp_path / "clean.txt"
    bad.write_bytes(b"A first sentence, plain.\nnot \xff utf-8\nThe second good one here.\nA third.\n")
    clean.write_bytes(b"A first sentence, plain.\nThe second good one here.\n")
    got = analyze(bad, minilm, on_decode_error="skip", importance_texts=2, norm_texts=2, progress=False)
    want = analyze(clean, minilm, importance_texts=2, norm_texts=2, progress=False)
    assert got.counters["importance_texts"] == 2 and got.norm_shares["texts"] == 2
    np.testing.assert_allclose(got.importance, want.importance, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(got.norm_shares["cls"]["norm"], want.norm_shares["cls"]["norm"], rtol=1e-6, atol=1e-9)


def test_reclassify_refuses_a_dict_and_keeps_the_result(minilm, corpus):
    """reclassify({"local": 0.2}) stored the dict in the config, then failed with an AttributeError
    inside classify_heads: the result was left holding thresholds that break its report."""
    from attnscope.analysis import Thresholds
    r = analyze(corpus, minilm, importance_texts=0, norm_texts=0, progress=False)
    before = r.labels.copy()
    with pytest.raises(ConfigError, match="thresholds must be an attnscope.analysis.Thresholds"):
        r.reclassify({"local": 0.2})
    assert isinstance(r.config.thresholds, Thresholds) and (r.labels == before).all()
    r.reclassify(Thresholds(broad=0.0, local=1.0, previous=1.0, next=1.0, self=1.0, cls=1.0, sep=1.0, punct=1.0))
    assert set(r.labels.ravel()) == {"broad"}  # every head's normalised entropy is ≥ 0
