"""Statistics of a half-precision model (issue 29 item 3).

The weights of a bfloat16/float16 model are read exactly and every statistic is computed from them
in float32 (sums over texts in float64): on weights given in half precision the statistics equal
the float64 statistics of the same weights to float32's rounding, for texts longer than 256 tokens
too (where a token distance is not a whole number in bfloat16). And ``analyze`` of MiniLM loaded in
bfloat16 stays within bfloat16's own error: each continuous statistic within 2·eps(bfloat16)·max(1,
|value|) of the float32 model's, and no further from the float64 run than transformers' eager
bfloat16 model's weights put the same statistics (2× theirs, the parity criterion of
tests/models/test_half_precision.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnscope
from attnscope.analysis import analyze
from attnscope.analysis.accumulate import StatsAccumulator
from attnscope.analysis.batching import TextEncoder, bucket
from attnscope.analysis.corpus import CorpusReader
from attnscope.analysis.stats import STAT_NAMES, StatOptions, attention_means, attention_sums, batch_context

from .test_stats_reference import random_weights

TEXTS = ["The cat sat on the mat because it was tired, and then it slept.",
         "Attention weights sum to one over the keys a query can see; each head has its own.",
         "Python's list.sort() is stable: equal items keep their order (see the sorting HOWTO)."]
SETTINGS = dict(batch_size=len(TEXTS), importance_texts=0, induction_seqs=0, norm_texts=0, progress=False, lanes=1)
#: Statistics that count queries (a query whose two largest weights are within rounding may flip).
COUNTED = ("argmax_prev", "argmax_next")


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_weights_are_summed_in_float32(dtype, causal):
    w, am, kinds = random_weights([300, 41], H=2, causal=causal, seed=7)  # 300 > 256: distances past bf16's integers
    half = w.to(dtype)
    got = attention_means(half, am, kinds, StatOptions(causal=causal))
    want = attention_means(half.double(), am, kinds, StatOptions(causal=causal))  # the same weights, float64
    for name in STAT_NAMES:
        g, x = got[name].double().numpy(), want[name].numpy()
        assert got[name].dtype == torch.float64
        np.testing.assert_allclose(g, x, rtol=2e-6, atol=1e-7, err_msg=name)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    f = tmp_path_factory.mktemp("corpus") / "c.txt"
    f.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    return f


def _hf_means(corpus, dtype: torch.dtype) -> dict:
    """transformers' eager MiniLM in ``dtype``: its weights of the texts analyze reads, through
    the statistics in float64."""
    import transformers

    from attnscope.models.loader import default_model_path
    transformers.logging.set_verbosity_error()
    hf = transformers.BertModel.from_pretrained(str(default_model_path()), attn_implementation="eager",
                                                dtype=dtype).eval()
    model = attnscope.load()
    enc = TextEncoder(model.tokenizer, model.tokenizer.max_length)
    c = model.config
    acc = StatsAccumulator(c.n_layers, c.n_heads, STAT_NAMES)
    for items in bucket(enc.encode(list(CorpusReader(corpus))), len(TEXTS)):
        tb = enc.pad(items)
        with torch.no_grad():
            out = hf(input_ids=tb.input_ids, attention_mask=tb.attention_mask, output_attentions=True)
        ctx = batch_context(tb.attention_mask, tb.kinds, StatOptions(), dtype=torch.float64)
        for layer, w in enumerate(out.attentions):
            acc.add(layer, attention_sums(w.double(), context=ctx))
    return acc.means()


def test_analyze_in_bfloat16_is_within_bfloat16s_error(corpus):
    runs = {dt: analyze(corpus, attnscope.load(dtype=dt), **SETTINGS) for dt in
            (torch.float64, torch.float32, torch.bfloat16)}
    ref, f32, bf16 = (runs[dt].means for dt in (torch.float64, torch.float32, torch.bfloat16))
    theirs = _hf_means(corpus, torch.bfloat16)
    eps = torch.finfo(torch.bfloat16).eps
    n_queries = runs[torch.float64].counters["tokens"]
    for name in STAT_NAMES:
        if not np.isfinite(ref[name]).any():
            continue
        ours = float(np.nanmax(np.abs(bf16[name] - ref[name])))
        hf = float(np.nanmax(np.abs(theirs[name] - ref[name])))
        assert float(np.nanmax(np.abs(f32[name] - ref[name]))) <= 1e-5 * max(1.0, float(np.nanmax(np.abs(ref[name]))))
        if name in COUNTED:  # a fraction of queries: a flip moves it by 1/count, for them as for us
            assert ours <= 2 * hf + 2.0 / n_queries, (name, ours, hf)
            continue
        assert ours <= 2 * hf + eps * 1e-2, (name, ours, hf)
        rel = np.abs(bf16[name] - f32[name]) / np.maximum(1.0, np.abs(f32[name]))
        assert float(np.nanmax(rel)) <= 2 * eps, (name, float(np.nanmax(rel)) / eps)
