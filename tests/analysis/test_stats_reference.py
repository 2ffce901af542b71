"""The vectorised statistics against an explicit-loop float64 reference on random softmax weights."""

import numpy as np
import pytest
import torch

from attnscope.analysis.stats import STAT_NAMES, StatOptions, attention_means

from .patterns import batch, reference


def random_weights(lengths, H, causal, seed, sharp=3.0):
    g = torch.Generator().manual_seed(seed)
    am, kinds = batch(lengths, punct_at=(2, 4))
    B, L = am.shape
    s = torch.randn(B, H, L, L, generator=g, dtype=torch.float64) * sharp
    allowed = am[:, None, None, :].expand(B, H, L, L).clone()
    if causal:
        allowed &= torch.ones(L, L, dtype=torch.bool).tril()
    w = torch.softmax(s.masked_fill(~allowed, float("-inf")), dim=-1)  # padding rows: all real keys
    return w, am, kinds


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("special_queries", [True, False])
def test_random_weights_match_reference(causal, special_queries):
    lengths = [7, 12, 4, 9]
    w, am, kinds = random_weights(lengths, H=3, causal=causal, seed=1 + causal)
    opt = StatOptions(special_queries=special_queries, window=2, causal=causal)
    got = attention_means(w, am, kinds, opt)
    want = reference(w, am, kinds, special_queries=special_queries, window=2, causal=causal)
    for name in STAT_NAMES:
        np.testing.assert_allclose(got[name].numpy(), want[name], rtol=1e-10, atol=1e-12, err_msg=name)


def test_ties_in_random_rows_with_duplicated_maximum():
    """A row whose previous token shares the maximum with another key is not an argmax_prev query."""
    am, kinds = batch([4])
    w = torch.zeros(1, 1, 4, 4, dtype=torch.float64)
    w[0, 0] = torch.tensor([[1, 0, 0, 0], [1, 0, 0, 0], [0.4, 0.4, 0.2, 0], [0, 0, 0.6, 0.4]])
    got = attention_means(w, am, kinds)
    # prev queries: rows 1 (prev = [CLS] 1.0, unique), 2 (0.4 tied with [CLS]), 3 (0.6 unique)
    assert got["argmax_prev"].item() == pytest.approx(2 / 3)
    np.testing.assert_allclose(got["argmax_prev"].numpy(), reference(w, am, kinds)["argmax_prev"])


def test_extra_special_tokens_in_the_middle():
    """A sentence pair: [CLS] a b [SEP] c d [SEP]; the middle [SEP] is special (not content) too."""
    lengths = [9, 7, 8]
    w, am, kinds = random_weights(lengths, H=2, causal=False, seed=5)
    kinds["special"] = kinds["cls"] | kinds["sep"]
    kinds["special"][:, 3] = True
    got = attention_means(w, am, kinds, StatOptions(special_queries=False))
    want = reference(w, am, kinds, special_queries=False)
    for name in STAT_NAMES:
        np.testing.assert_allclose(got[name].numpy(), want[name], rtol=1e-10, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("chunk_texts", [1, 3])
def test_chunked_passes_equal_one_pass(monkeypatch, chunk_texts):
    """On a CPU the statistics run a few texts at a time; any chunking gives the same sums."""
    import attnscope.analysis.stats as S
    lengths = [7, 12, 4, 9, 11]
    w, am, kinds = random_weights(lengths, H=3, causal=False, seed=7)
    whole = S.attention_sums(w, am, kinds)
    per_text = 3 * 12 * 12 * w.element_size()
    monkeypatch.setattr(S, "CPU_CHUNK_BYTES", chunk_texts * per_text)
    parts = S.attention_sums(w, am, kinds)
    want = reference(w, am, kinds)
    for name in STAT_NAMES:
        np.testing.assert_allclose(parts[name][0].numpy(), whole[name][0].numpy(), rtol=1e-13, atol=1e-13, err_msg=name)
        np.testing.assert_array_equal(parts[name][1].numpy(), whole[name][1].numpy())
        np.testing.assert_allclose((parts[name][0] / parts[name][1]).numpy(), want[name], rtol=1e-10, err_msg=name)
