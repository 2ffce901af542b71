"""Seq2SeqModel.loss equals transformers' ``…ForConditionalGeneration(labels=…)`` loss: the mean
cross-entropy of every real target token given the source and the target before it (a padded
batch of pairs: padded labels ignored); "sum" and "none" are the same numbers summed or per label."""

import pytest
import torch

from tests.models.seq2seq.texts import PAIRS
from tests.models.seq2seq.tiny import BUILDERS


@pytest.mark.parametrize("name", list(BUILDERS))
def test_loss_equals_transformers(name, seq2seq, hf_seq2seq_models):
    model, hf = seq2seq[name], hf_seq2seq_models(name)
    sources, targets = PAIRS[BUILDERS[name][1]]
    src = model.encode(sources)
    labels = model.encode(targets)
    hf_labels = labels.input_ids.masked_fill(labels.attention_mask == 0, -100)  # (B, T)
    with torch.no_grad():
        out = hf(input_ids=src.input_ids, attention_mask=src.attention_mask, labels=hf_labels)
        mean = model.loss(sources, targets)
        per = model.loss(sources, targets, reduction="none")  # (B, T)
        total = model.loss(sources, targets, reduction="sum")
    assert abs(float(mean) - float(out.loss)) <= 1e-5 * max(1.0, abs(float(out.loss)))
    want = torch.nn.functional.cross_entropy(out.logits.flatten(0, 1).float(), hf_labels.flatten(), ignore_index=-100,
                                             reduction="none").view_as(hf_labels)  # (B, T)
    assert per.shape == hf_labels.shape
    torch.testing.assert_close(per, want, atol=1e-5, rtol=1e-5)
    assert bool((per[hf_labels == -100] == 0).all())
    assert abs(float(total) - float(want.sum())) <= 1e-4 * max(1.0, abs(float(want.sum())))
