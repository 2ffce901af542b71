"""T5 (v1.0, v1.1/flan, mT5) and BART match transformers (eager) to 1e-5 in float32: every layer's
hidden states of both stacks, the weights of encoder self-attention, decoder causal
self-attention and cross-attention, and the logits — one pair and a padded batch (sources and
targets of different lengths), English and Chinese vocabularies."""

import pytest
import torch

from tests.models.seq2seq.texts import PAIRS
from tests.models.seq2seq.tiny import BUILDERS

TOL = 1e-5
CASES = [(name, lang) for name, (_, lang) in BUILDERS.items()]


def reference_names(model):
    """Our names of transformers' encoder_hidden_states and decoder_hidden_states (the last entry of
    each is after the stack's final norm in T5)."""
    c = model.config
    enc = ["encoder.embed.out"] + [f"encoder.layers.{i}.out" for i in range(c.n_layers)]
    dec = ["decoder.embed.out"] + [f"decoder.layers.{i}.out" for i in range(c.n_decoder_layers)]
    if c.final_norm:
        enc[-1], dec[-1] = "encoder.final_norm", "decoder.final_norm"
    return enc, dec


def hf_forward(hf, tr):
    with torch.no_grad():
        return hf(input_ids=tr.input_ids, attention_mask=tr.attention_mask, decoder_input_ids=tr.decoder_input_ids,
                  decoder_attention_mask=tr.decoder_attention_mask, output_hidden_states=True, output_attentions=True)


@pytest.mark.parametrize("single", [True, False], ids=["single", "batch"])
@pytest.mark.parametrize("name,lang", CASES, ids=[c[0] for c in CASES])
def test_both_stacks_and_cross_attention_match_transformers(name, lang, single, seq2seq, hf_seq2seq_models):
    model = seq2seq[name]
    sources, targets = PAIRS[lang]
    if single:
        sources, targets = sources[0], targets[0]
    enc, dec = reference_names(model)
    tr = model.trace(sources, targets, names=enc + dec + ["*.attn.weights", "*.self_attn.weights",
                                                          "*.cross_attn.weights"])
    ref = hf_forward(hf_seq2seq_models(name), tr)
    if not single:
        assert len(set(tr.lengths)) > 1 and len(set(tr.target_lengths)) > 1, "sources and targets must be padded"
    assert len(ref.encoder_hidden_states) == len(enc) and len(ref.decoder_hidden_states) == len(dec)
    logits = model.logits(sources, targets)  # the plain forward: fused kernels, nothing traced
    for b, (S, T) in enumerate(zip(tr.lengths, tr.target_lengths)):
        for ours, theirs in zip(enc, ref.encoder_hidden_states):
            assert (tr[ours][b, :S] - theirs[b, :S]).abs().max().item() <= TOL, f"{name} text {b} {ours}"
        for ours, theirs in zip(dec, ref.decoder_hidden_states):
            assert (tr[ours][b, :T] - theirs[b, :T]).abs().max().item() <= TOL, f"{name} text {b} {ours}"
        for i, w in enumerate(ref.encoder_attentions):
            err = (tr[f"encoder.layers.{i}.attn.weights"][b, :, :S, :S] - w[b, :, :S, :S]).abs().max().item()
            assert err <= TOL, f"{name} text {b} encoder layer {i}: {err:.2e}"
        for i, (w, x) in enumerate(zip(ref.decoder_attentions, ref.cross_attentions)):
            err = (tr[f"decoder.layers.{i}.self_attn.weights"][b, :, :T, :T] - w[b, :, :T, :T]).abs().max().item()
            assert err <= TOL, f"{name} text {b} decoder self-attention layer {i}: {err:.2e}"
            err = (tr[f"decoder.layers.{i}.cross_attn.weights"][b, :, :T, :S] - x[b, :, :T, :S]).abs().max().item()
            assert err <= TOL, f"{name} text {b} cross-attention layer {i}: {err:.2e}"
        assert (logits[b, :T] - ref.logits[b, :T]).abs().max().item() <= 1e-4 * max(1.0, ref.logits.abs().max().item())


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
