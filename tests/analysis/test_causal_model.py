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
    layer = next(csv.DictReader(open(out["layers.csv"], encoding="utf-8")))  # the same empty cells ("n/a" there)
    assert layer["to_next"] == "" and layer["to_cls"] == "" and float(layer["to_prev"]) >= 0
    head = json.loads(out["analysis.json"].read_text())["heads"][0]
    assert head["to_next"] is None and isinstance(head["importance"], float)


def test_sliding_window_layers_normalise_entropy_by_the_keys_in_their_window(tmp_path):
    """Gemma 3's local layers see the last 512 keys (i - j < 512): on a text longer than that,
    entropy_norm divides by ln min(i+1, 512) there, ln(i+1) in the global layers; reference: the
    traced weights in float64, n_i counted from the window's definition (the weights outside it
    checked to be 0)."""
    model = attnscope.load("gemma-3-270m")
    text = ("the quick brown fox jumps over the lazy dog and " * 60).strip()
    f = tmp_path / "c.txt"
    f.write_text(text + "\n", encoding="utf-8")
    r = analyze(f, model, importance_texts=0, norm_texts=0, induction_seqs=0, progress=False)
    full = model.config.layer_types.index("full")
    tr = model.trace(text, names=["layers.0.attn.weights", f"layers.{full}.attn.weights"])
    n = len(tr.tokens[0])
    assert n > 512 + 64
    for layer, W in ((0, 512), (full, None)):
        w = tr[f"layers.{layer}.attn.weights"][0].double().numpy()  # (H, n, n)
        keys = np.array([min(i + 1, W or n) for i in range(n)])
        assert all((w[:, i, :i + 1 - k] == 0).all() for i, k in enumerate(keys))  # nothing outside the window
        ent = -np.where(w > 0, w * np.log(np.where(w > 0, w, 1)), 0).sum(-1)  # (H, n)
        want = (ent[:, 1:] / np.log(keys[1:])).mean(-1)
        np.testing.assert_allclose(r.means["entropy_norm"][layer], want, rtol=1e-5, err_msg=f"layer {layer}")
