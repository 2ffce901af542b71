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


@pytest.mark.parametrize("name", ["t5_v11", "bart"])
def test_an_output_matrix_of_its_own_under_a_tied_config(name, seq2seq_dirs, tmp_path):
    """transformers 5 writes every T5 config as tied (``tie_word_embeddings: true``; v1.1's
    ``scale_decoder_outputs: false``) yet keeps a v1.1 checkpoint's own ``lm_head.weight``, and it
    does not tie two different tensors: the logits use that matrix (attnscope used the shared
    embedding: logits off by up to 4 on the re-saved tiny v1.1). A BART whose config says tied but
    whose file has another ``lm_head.weight`` is read the same way."""
    import json
    import shutil

    from safetensors.torch import load_file, save_file

    import attnscope
    from tests.models.seq2seq.texts import PAIRS
    from tests.models.seq2seq.tiny import hf_seq2seq

    folder = tmp_path / name
    if name == "t5_v11":  # re-saved by transformers 5, as a fine-tuned flan-t5 is
        hf_seq2seq(seq2seq_dirs[name]).save_pretrained(folder)
        shutil.copy(seq2seq_dirs[name] / "tokenizer.json", folder)
    else:
        shutil.copytree(seq2seq_dirs[name], folder)
        sd = load_file(str(folder / "model.safetensors"))
        g = torch.Generator().manual_seed(7)
        sd["lm_head.weight"] = sd["model.shared.weight"] + 0.2 * torch.randn(sd["model.shared.weight"].shape, generator=g)
        save_file(sd, str(folder / "model.safetensors"), metadata={"format": "pt"})
    cfg = json.loads((folder / "config.json").read_text())
    assert cfg["tie_word_embeddings"] is True and "lm_head.weight" in load_file(str(folder / "model.safetensors"))
    model, hf = attnscope.load(folder), hf_seq2seq(folder)
    sources, targets = PAIRS["en"]
    src = model.encode(sources)
    ids, mask, _ = model.target_batch(targets, len(sources))
    with torch.no_grad():
        want = hf(input_ids=src.input_ids, attention_mask=src.attention_mask, decoder_input_ids=ids,
                  decoder_attention_mask=mask).logits
    got = model.logits(sources, targets)
    assert ((got - want).abs() * mask[:, :, None]).max().item() <= 1e-4
    assert model.unused_weights == []
