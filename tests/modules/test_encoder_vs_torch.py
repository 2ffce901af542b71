"""EncoderLayer against torch.nn.TransformerEncoderLayer (post-LN and pre-LN) with shared weights."""

import math

import pytest
import torch
from torch import nn

from attnscope import EncoderLayer, MultiHeadAttention, TransformerConfig, TransformerEncoder, sinusoidal_positions


def copy_layer(ref: nn.TransformerEncoderLayer, ours: EncoderLayer) -> None:
    ours.attn.load_state_dict(MultiHeadAttention.from_torch(ref.self_attn).state_dict())
    with torch.no_grad():
        for a, b in ((ours.ffn.W_1, ref.linear1), (ours.ffn.W_2, ref.linear2), (ours.ln1, ref.norm1), (ours.ln2, ref.norm2)):
            a.weight.copy_(b.weight)
            a.bias.copy_(b.bias)


@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("activation", ["gelu", "relu"])
def test_layer_matches_torch(norm, activation):
    torch.manual_seed(0)
    cfg = TransformerConfig(vocab_size=10, d_model=16, n_heads=4, n_layers=1, d_ff=32, norm=norm,
                            activation=activation, dropout=0.0, attn_dropout=0.0, layer_norm_eps=1e-5)
    ref = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, activation=activation, batch_first=True,
                                     norm_first=(norm == "pre")).double().eval()
    for p in ref.parameters():
        nn.init.normal_(p, std=0.3)
    ours = EncoderLayer(cfg).double().eval()
    copy_layer(ref, ours)
    x = torch.randn(3, 7, 16, dtype=torch.float64)
    kpm = torch.zeros(3, 7, dtype=torch.bool)
    kpm[1, 5:] = True
    causal = nn.Transformer.generate_square_subsequent_mask(7, dtype=torch.float64)
    torch.testing.assert_close(ours(x, key_padding_mask=kpm), ref(x, src_key_padding_mask=kpm))
    torch.testing.assert_close(ours(x, causal=True), ref(x, src_mask=causal, is_causal=True))


def test_sinusoidal_positions_formula():
    pe = sinusoidal_positions(50, 8, dtype=torch.float64).numpy()
    for pos in (0, 1, 17, 49):
        for i in range(4):
            angle = pos / 10000 ** (2 * i / 8)
            assert math.isclose(pe[pos, 2 * i], math.sin(angle), abs_tol=1e-15)
            assert math.isclose(pe[pos, 2 * i + 1], math.cos(angle), abs_tol=1e-15)


def test_encoder_stack_and_causality():
    torch.manual_seed(0)
    cfg = TransformerConfig(vocab_size=50, d_model=16, n_heads=2, n_layers=3, d_ff=32, max_positions=20,
                            position="sinusoidal", norm="pre", final_norm=True, embed_norm=False,
                            type_vocab_size=0, causal=True, dropout=0.0, attn_dropout=0.0)
    model = TransformerEncoder(cfg).eval()
    ids = torch.randint(0, 50, (2, 10))
    out = model(ids)
    assert out.shape == (2, 10, 16)
    # causal: changing the last token must not change earlier positions
    ids2 = ids.clone()
    ids2[:, -1] = (ids2[:, -1] + 1) % 50
    out2 = model(ids2)
    torch.testing.assert_close(out[:, :-1], out2[:, :-1])
    assert not torch.allclose(out[:, -1], out2[:, -1])


def test_padding_does_not_change_real_tokens():
    torch.manual_seed(0)
    cfg = TransformerConfig(vocab_size=50, d_model=16, n_heads=2, n_layers=2, d_ff=32, max_positions=20,
                            dropout=0.0, attn_dropout=0.0)
    model = TransformerEncoder(cfg).eval()
    ids = torch.randint(1, 50, (1, 6))
    alone = model(ids)
    padded = torch.cat([ids, torch.zeros(1, 3, dtype=torch.long)], 1)
    mask = torch.tensor([[1] * 6 + [0] * 3])
    torch.testing.assert_close(model(padded, attention_mask=mask)[:, :6], alone, rtol=1e-5, atol=1e-6)
