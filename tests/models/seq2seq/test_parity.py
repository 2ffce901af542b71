"""T5 (v1.0, v1.1/flan, mT5) and BART hold the checkpoint's weights, each once. Their parity with
transformers (eager, float32: every layer's hidden states of both stacks, the weights of encoder
self-attention, decoder causal self-attention and cross-attention, the plain forward and the
logits — one pair and a padded batch, English and Chinese vocabularies) is the family battery's
(tests/models/test_family_battery.py), which every registered checkpoint goes through."""

import pytest
import torch

from tests.models.seq2seq.tiny import BUILDERS


@pytest.mark.parametrize("name", list(BUILDERS))
def test_every_weight_is_the_checkpoints(name, seq2seq, hf_seq2seq_models):
    model, hf = seq2seq[name], hf_seq2seq_models(name)
    ours = sum(p.numel() for p in model.parameters())
    theirs = sum(p.numel() for p in hf.parameters())  # tied lm_head counted once, as ours
    assert ours == theirs
    assert model.unused_weights == []
    if name == "t5_v11":
        assert not torch.equal(model.lm_head_weight, model.shared.weight)  # its own output layer
        assert model.config.lm_scale == 1.0
    if name == "t5":
        assert model.lm_head_weight is None and model.config.lm_scale == model.config.d_model ** -0.5
