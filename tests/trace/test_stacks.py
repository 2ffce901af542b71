"""One reader over attention blocks: a one-stack trace's blocks are its layers (attention= is
refused in one sentence), an encoder–decoder trace's are named "encoder", "self" and "cross" —
weights computed from q and k over a padded batch equal the recorded ones at every real query,
the masks are the model's (padded keys, causal self-attention), a text's k and v are cut to its
keys (the source's for cross-attention)."""

import pytest
import torch

from attnscope import InputError
from attnscope.trace import run_trace
from tests.models.seq2seq.texts import PAIRS


def test_a_one_stack_trace_refuses_attention_and_target(tiny_models):
    model = tiny_models["gpt2"]
    tr = model.trace("Attention is all you need.", names=["layers.0.attn.q", "layers.0.attn.k"])
    for call in (lambda: tr.weights(0, attention="cross"), lambda: tr.step(0, "q", attention="self"),
                 lambda: tr.mask(0, attention="encoder")):
        with pytest.raises(InputError, match=r"attention='\w+' is for encoder–decoder traces \(T5, BART\)"):
            call()
    with pytest.raises(InputError, match=r"target= is for encoder–decoder models \(T5, BART\); .* reads one text"):
        run_trace(model, "Attention is all you need.", target="Ja")


@pytest.mark.parametrize("name", ["t5", "bart"])
def test_every_block_of_an_encoder_decoder_trace(name, seq2seq):
    model = seq2seq[name]
    sources, targets = PAIRS["en"]
    full = model.trace(sources, targets)  # everything, weights recorded
    lean = model.trace(sources, targets, names=["*.q", "*.k", "*.v"] + (["*.bias"] if name == "t5" else []))
    src, tgt = full.lengths, full.target_lengths
    assert len(set(src)) > 1 and len(set(tgt)) > 1  # both sides padded
    for att, layers in (("encoder", model.config.n_layers), ("self", model.config.n_decoder_layers),
                        ("cross", model.config.n_decoder_layers)):
        nq, nk = {"encoder": (src, src), "self": (tgt, tgt), "cross": (tgt, src)}[att]
        for layer in range(layers):
            want = full.weights(layer, attention=att)  # (B, H, L, S)
            got = lean.weights(layer, attention=att)
            m = full.mask(layer, attention=att)  # (B, 1, L, S)
            for b in range(len(sources)):
                real = slice(0, nq[b])
                torch.testing.assert_close(got[b, :, real], want[b, :, real], rtol=0, atol=3e-6)
                allowed = torch.ones(nq[b], nk[b], dtype=torch.bool)
                if att == "self":
                    allowed = allowed.tril()
                assert torch.equal(m[b, 0, real, :nk[b]], allowed) and not m[b, 0, real, nk[b]:].any()
                assert torch.equal(full.mask(layer, attention=att, text=b)[0], allowed)
                k = full.step(layer, "k", 0, text=b, attention=att)  # (n_k, d)
                assert k.shape[0] == nk[b] and full.step(layer, "q", 0, text=b, attention=att).shape[0] == nq[b]
                assert full.weights(layer, attention=att, text=b).shape[-2:] == (nq[b], nk[b])
