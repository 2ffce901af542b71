"""The statistics' fast form (a few passes over the weights, two matrix products, buffers kept per
thread) against the float64 loop of patterns.reference_sums: float32 weights, NaN rows, ties."""

import threading

import numpy as np
import pytest
import torch

from attnscope.analysis.stats import STAT_NAMES, StatOptions, attention_means, attention_sums

from .patterns import batch, reference


def float32_weights(lengths, H, seed, sharp=4.0, causal=False, neighbours=0.0):
    """Softmax weights in float32 over right-padded texts with [CLS]/[SEP], punctuation, a few
    keys underflowing to exactly 0 (sharp scores) and padding rows of garbage; ``neighbours``
    is added to the scores of the previous key in heads 1, 4, … and of the next in heads 2, 5, …"""
    g = torch.Generator().manual_seed(seed)
    am, kinds = batch(lengths, punct_at=(2, 5, 9))
    B, L = am.shape
    s = torch.randn(B, H, L, L, generator=g) * sharp
    s[..., 0] += 2.0  # heads that lean on [CLS], as BERT's do
    s[:, 1::3] += neighbours * torch.ones(L - 1).diag(-1)
    s[:, 2::3] += neighbours * torch.ones(L - 1).diag(1)
    allowed = am[:, None, None, :].expand(B, H, L, L).clone()
    if causal:
        allowed &= torch.ones(L, L, dtype=torch.bool).tril()
    w = torch.softmax(s.masked_fill(~allowed, float("-inf")), dim=-1).float()  # (B, H, L, L)
    w[~am[:, None, :, None].expand(B, H, L, L)] = float("nan")  # padding rows: garbage
    return w, am, kinds


@pytest.mark.parametrize("causal", [False, True])
def test_float32_weights_give_the_float64_loop_to_float32_precision(causal):
    lengths = [40, 23, 31, 9, 40]
    w, am, kinds = float32_weights(lengths, H=4, seed=3, causal=causal)
    assert (w == 0).any(), "the test wants some weights that are exactly 0"
    opt = StatOptions(causal=causal)
    got = attention_means(w, am, kinds, opt)
    want = reference(w, am, kinds, causal=causal)  # the same float32 numbers, in float64 loops
    for name in STAT_NAMES:
        assert got[name].dtype == torch.float64
        if name.startswith("argmax"):  # counts of exact comparisons: exactly the loop's
            np.testing.assert_array_equal(got[name].numpy(), want[name], err_msg=name)
        else:
            np.testing.assert_allclose(got[name].numpy(), want[name], rtol=5e-7, atol=1e-8, err_msg=name)


def test_without_masked_keys_the_entropy_skips_the_clamp(monkeypatch):
    """A bidirectional batch without padding has no masked key: the entropy's log reads the
    weights themselves (a pass fewer). Its rare zeros (underflows) and subnormals still give the
    float64 loop's statistics, and a NaN in a row still shows."""
    import attnscope.analysis.stats as S
    w, am, kinds = float32_weights([20, 20, 20], H=3, seed=9)
    w[0, 1, 4, 7] = 0.0  # an underflow to exactly 0
    w[1, 2, 9, :3] = torch.tensor([0.0, 1e-40, 3e-39])  # subnormals (the smallest normal is 1.2e-38)
    seen = []
    real = S._chunk_passes

    def spy(*args, **kw):
        seen.append(kw["zeros"])
        real(*args, **kw)
    monkeypatch.setattr(S, "_chunk_passes", spy)
    got = attention_means(w, am, kinds)
    assert seen and not any(seen), "no key is masked: no clamp"
    want = reference(w, am, kinds)
    for name in STAT_NAMES:
        np.testing.assert_allclose(got[name].numpy(), want[name], rtol=5e-7, atol=1e-8, err_msg=name)
    w[2, 0, 5, 6] = float("nan")
    got = attention_means(w, am, kinds)
    assert np.isnan(got["entropy"][0].item()) and np.isfinite(got["entropy"][1].item())
    seen.clear()
    attention_means(w, am, kinds, StatOptions(causal=True))
    assert seen and all(seen), "a causal batch has masked keys: the clamp stays"


def test_a_nan_in_a_counted_row_is_not_hidden():
    """A real query's row holding NaN makes its head's statistics NaN (the entropy's nansum skips
    only 0·ln 0), and leaves the other head alone."""
    w, am, kinds = float32_weights([12, 10], H=2, seed=4)
    w[1, 0, 3, 5] = float("nan")
    got = attention_means(w, am, kinds)
    for name in ("entropy", "entropy_norm", "distance", "distance_content", "to_local", "to_punct"):
        assert np.isnan(got[name][0].item()), name
        assert np.isfinite(got[name][1].item()), name
    ok = w.clone()
    ok[1, 0, 3] = 1.0 / 10  # the same row made finite: the head is finite again
    assert all(np.isfinite(v[0].item()) for v in attention_means(ok, am, kinds).values())


def test_ties_of_the_maximum():
    """Rows whose previous and next keys share the maximum, whose maximum is shared with a far
    key, or reached by values one float apart; in float32 and float64."""
    am, kinds = batch([6])
    a = 0.45
    b = float(np.nextafter(np.float32(a), np.float32(1.0)))  # one float32 step above a
    rows = [
        [1, 0, 0, 0, 0, 0],
        [0.35, 0.3, 0.35, 0, 0, 0],        # prev and next tied at the maximum: neither counts
        [0.1, 0.4, 0.1, 0.4, 0, 0],        # prev and next tied again
        [0.35, 0.05, 0.1, 0.15, 0.35, 0],  # next at the maximum, tied with [CLS]
        [0, 0, 0, a, 1 - a - b, b],        # next above prev by one float: the next wins alone
        [0, 0, 0, 0, 0.7, 0.3],            # prev unique
    ]
    for dtype in (torch.float32, torch.float64):
        w = torch.tensor(rows, dtype=dtype)[None, None]  # (1, 1, 6, 6)
        got = attention_means(w, am, kinds)
        want = reference(w, am, kinds)
        for name in ("argmax_prev", "argmax_next", "to_prev", "to_next"):
            np.testing.assert_allclose(got[name].numpy(), want[name], rtol=1e-7, err_msg=f"{name} {dtype}")
        assert got["argmax_next"].item() == pytest.approx(1 / 5)   # rows 0..4 have a next; only row 4
        assert got["argmax_prev"].item() == pytest.approx(1 / 5)   # rows 1..5 have a prev; only row 5


def test_kept_buffers_do_not_leak_between_calls_or_threads():
    """Buffers are reused per thread: calls of other shapes in between, or on other threads at the
    same time, give bit-for-bit the sums of a first call."""
    small = float32_weights([7, 5], H=3, seed=5)
    large = float32_weights([30, 12, 25], H=5, seed=6)
    first = attention_sums(*large)
    attention_sums(*small)
    again = attention_sums(*large)
    results: dict = {}

    def run(k, args):
        results[k] = [attention_sums(*args) for _ in range(3)]
    threads = [threading.Thread(target=run, args=(k, large if k % 2 else small)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    want_small = attention_sums(*small)
    for k, res in results.items():
        for r in res:
            for name in STAT_NAMES:
                torch.testing.assert_close(r[name], (first if k % 2 else want_small)[name], rtol=0, atol=0,
                                           equal_nan=True)
    for name in STAT_NAMES:
        torch.testing.assert_close(again[name], first[name], rtol=0, atol=0, equal_nan=True)


def test_argmax_is_read_from_the_weights_not_from_the_products(monkeypatch):
    """The products' values of the previous/next weight only select rows to check (within
    stats.NEAR of the maximum): rounded products (as a reduced-precision matmul setting gives)
    leave argmax_prev/argmax_next exactly the loop's."""
    import attnscope.analysis.stats as S
    w, am, kinds = float32_weights([30, 17, 24], H=3, seed=8, neighbours=6.0)
    want = reference(w, am, kinds)
    real = S._chunk_passes

    def rounded(w_, by_offset, key_rows, ent, row_max, offs, mass, **kw):
        real(w_, by_offset, key_rows, ent, row_max, offs, mass, **kw)
        offs.mul_(1 - 2.0**-9)  # every product a little low, as bfloat16 passes may be
    monkeypatch.setattr(S, "_chunk_passes", rounded)
    got = attention_means(w, am, kinds)
    assert want["argmax_prev"].max() > 0.1 and want["argmax_next"].max() > 0.1, "the test wants argmax rows"
    for name in ("argmax_prev", "argmax_next"):
        np.testing.assert_array_equal(got[name].numpy(), want[name], err_msg=name)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("special_queries", [True, False])
def test_uniform_distance_baseline_against_a_loop(causal, special_queries):
    """uniform_distance_sums (two products with the key mask) against a loop over texts and queries."""
    from attnscope.analysis.stats import uniform_distance_sums
    lengths = [9, 4, 7, 1]
    am, kinds = batch(lengths)
    s, c = uniform_distance_sums(am, kinds, StatOptions(causal=causal, special_queries=special_queries))
    want_s = want_c = 0.0
    for b, n in enumerate(lengths):
        for i in range(n):
            if not special_queries and (kinds["cls"][b, i] or kinds["sep"][b, i]):
                continue
            keys = [j for j in range(n) if j <= i or not causal]
            want_s += sum(abs(i - j) for j in keys) / len(keys)
            want_c += 1
    assert c.item() == want_c
    assert s.item() == pytest.approx(want_s, rel=1e-15)
