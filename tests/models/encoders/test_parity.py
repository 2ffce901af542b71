"""DistilBERT, ALBERT, ELECTRA, XLM-RoBERTa and DeBERTa-v2/v3: the weights are the checkpoint's (same
parameter count as transformers' encoder, each HF tensor copied where it belongs), and the Chinese
vocab.txt ones read bert-base-chinese's ids. Their parity with transformers (eager, float32: every
layer's hidden states and every head's attention weights, the plain forward, one text and a padded
batch, English and Chinese vocabularies) is the family battery's (tests/models/test_family_battery.py),
which every registered checkpoint goes through."""

import pytest

from tests.models.encoders.tiny import BUILDERS, TINY, chinese_vocab

ZH_VOCAB_TXT = [name for name, t in TINY.items() if t.tokenizer is chinese_vocab]


@pytest.mark.parametrize("name", ZH_VOCAB_TXT)
def test_chinese_vocab_reads_bert_base_chinese_ids(name, encoders):
    """bert-base-chinese's ids, one per character."""
    model = encoders[name]
    assert model.tokenizer.source.endswith("vocab.txt")
    assert model.encode(["我喜欢人工智能"]).ids[0] == [101, 2769, 1599, 3614, 782, 2339, 3255, 5543, 102]


@pytest.mark.parametrize("name", list(BUILDERS))
def test_every_checkpoint_weight_is_used_once(name, encoders, hf_encoders):
    """As many distinct parameters as transformers' encoder (pooler excluded), and nothing of the
    encoder left unused."""
    model, hf = encoders[name], hf_encoders(name)
    pooler = sum(p.numel() for n, p in hf.named_parameters() if n.startswith("pooler"))
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in hf.parameters()) - pooler
    heads = ("pooler.", "cls.", "predictions.", "lm_predictions.", "vocab_", "discriminator_predictions.",
             "generator_", "sop_classifier.", "lm_head.")
    assert [k for k in model.unused_weights if not k.startswith(heads)] == []
