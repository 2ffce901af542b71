"""A causal language model (tiny random GPT-2): statistics over visible keys only, no next token,
no [CLS]/[SEP]; importance as a loss change; n/a statistics written as empty cells and nulls."""

import csv
import json

import numpy as np
import pytest
import torch

import attnscope
from attnscope.analysis import analyze
from attnscope.analysis.batching import is_punctuation
from attnscope.analysis.stats import STAT_NAMES
from attnscope.testing import tiny as testing

from .patterns import batch, reference_sums


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    return attnscope.load(testing.tiny_gpt2(tmp_path_factory.mktemp("gpt2")))


def test_causal_statistics_equal_texts_traced_alone(gpt2, tmp_path):
    texts = ["The softmax turns scores into weights.", "I like cats.", "Every token looks at every other token."]
    f = tmp_path / "c.txt"
    f.write_text("\n".join(texts) + "\n", encoding="utf-8")
    r = analyze(f, gpt2, batch_size=2, importance_texts=2, importance_batch=2, progress=False)
    assert r.importance_metric == "loss_change" and r.importance.shape == (2, 4)
    total = {s: np.zeros((2, 4, 2)) for s in STAT_NAMES}
    for t in texts:
        tr = gpt2.trace(t, names="layers.*.attn.weights")
        n = len(tr.tokens[0])
        am, _ = batch([n])
        none = torch.zeros(1, n, dtype=torch.bool)  # GPT-2 adds no special tokens
        # punctuation from the token strings (the pipeline uses a table over the vocabulary ids)
        punct = torch.tensor([[is_punctuation(tok) for tok in tr.tokens[0]]])
        kinds = {"cls": none, "sep": none, "punct": punct}
        for layer in range(2):
            sums = reference_sums(tr[f"layers.{layer}.attn.weights"], am, kinds, causal=True)
            for s in STAT_NAMES:
                total[s][layer] += np.array(sums[s])
    for s in STAT_NAMES:
        c = total[s][..., 1]
        want = np.where(c > 0, total[s][..., 0] / np.where(c > 0, c, 1), np.nan)
        np.testing.assert_allclose(r.means[s], want, rtol=2e-5, atol=2e-6, err_msg=s)
    for s in ("to_next", "argmax_next", "to_cls", "to_sep"):
        assert np.isnan(r.means[s]).all(), s
    assert not {"next", "cls", "sep"} & set(r.labels.flatten())

    out = r.write(tmp_path / "out")
    row = next(csv.DictReader(open(out["heads.csv"], encoding="utf-8")))
    assert row["to_next"] == "" and row["to_cls"] == "" and row["to_prev"] != ""
    head = json.loads(out["analysis.json"].read_text())["heads"][0]
    assert head["to_next"] is None and isinstance(head["importance"], float)
