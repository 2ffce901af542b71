"""GPT-2's tied language-model head: logits and loss equal GPT2LMHeadModel's."""

import pytest
import torch

from attnscope import InputError

TEXTS = ["The softmax turns scores into weights.", "Heads are projections!"]


def test_logits_match_gpt2lmheadmodel(tiny_models, hf_models):
    model, hf = tiny_models["gpt2"], hf_models("gpt2")
    batch = model.encode(TEXTS)
    with torch.no_grad():
        ours = model.logits(TEXTS)
        ref = hf(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
    for b, n in enumerate(batch.lengths):
        assert (ours[b, :n] - ref[b, :n]).abs().max().item() <= 1e-5


def test_loss_matches_gpt2lmheadmodel_with_padding_ignored(tiny_models, hf_models):
    model, hf = tiny_models["gpt2"], hf_models("gpt2")
    batch = model.encode(TEXTS)
    labels = batch.input_ids.masked_fill(batch.attention_mask == 0, -100)
    with torch.no_grad():
        ref = hf(input_ids=batch.input_ids, attention_mask=batch.attention_mask, labels=labels).loss
        ours = model.loss(TEXTS)
        per_token = model.loss(TEXTS, reduction="none")
    assert abs(ours.item() - ref.item()) <= 1e-5
    n_targets = sum(n - 1 for n in batch.lengths)
    assert abs(per_token.sum().item() / n_targets - ref.item()) <= 1e-5
    assert per_token[1, batch.lengths[1] - 1:].eq(0).all()  # padded targets contribute nothing


def test_encoders_have_no_lm_head(minilm):
    with pytest.raises(InputError, match=r"has no language-model head"):
        minilm.loss("hello")


def test_untied_output_layer_is_used(tiny_dirs, tmp_path):
    import json
    import shutil

    import transformers

    import attnscope

    folder = tmp_path / "untied"
    shutil.copytree(tiny_dirs["gpt2"], folder)
    cfg = transformers.GPT2Config.from_pretrained(str(folder))
    cfg.tie_word_embeddings = False
    hf = transformers.GPT2LMHeadModel.from_pretrained(str(folder), config=cfg).eval()
    with torch.no_grad():
        hf.lm_head.weight.copy_(torch.randn_like(hf.lm_head.weight) * 0.1)
    hf.save_pretrained(str(folder))
    assert json.loads((folder / "config.json").read_text())["tie_word_embeddings"] is False
    model = attnscope.load(folder)
    assert model.lm_head_weight is not None and "lm_head.weight" not in model.unused_weights
    batch = model.encode(TEXTS)
    with torch.no_grad():
        ref = hf(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
        ours = model.logits(TEXTS)
    for b, n in enumerate(batch.lengths):
        assert (ours[b, :n] - ref[b, :n]).abs().max().item() <= 1e-5


def test_has_lm_head_tells_language_models_apart(minilm, tiny_models):
    assert minilm.has_lm_head is False
    assert tiny_models["gpt2"].has_lm_head is True
    assert tiny_models["bert"].has_lm_head is False
