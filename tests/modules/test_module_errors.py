import numpy as np
import pytest
import torch

from attnscope import (
    ConfigError,
    MultiHeadAttention,
    ShapeError,
    SingleHeadAttention,
    TransformerConfig,
    TransformerEncoder,
)


def test_d_model_not_divisible():
    with pytest.raises(ConfigError, match=r"d_model \(10\) must be divisible by n_heads \(3\)"):
        MultiHeadAttention(10, 3)
    with pytest.raises(ConfigError, match=r"config.d_model \(10\) must be divisible"):
        TransformerConfig(d_model=10, n_heads=3)


def test_unknown_config_values():
    with pytest.raises(ConfigError, match="config.norm = 'middle' is unknown"):
        TransformerConfig(norm="middle")


@pytest.mark.parametrize("x, pattern", [
    (torch.randn(2, 5, 7), r"x must have shape \(B, L, d_model=8\), got \(2, 5, 7\)"),
    (torch.randn(5, 8), r"got \(5, 8\)"),
    (torch.ones(2, 5, 8, dtype=torch.long), "x must be floating point"),
])
def test_bad_input(x, pattern):
    with pytest.raises(ShapeError, match=pattern):
        MultiHeadAttention(8, 2)(x)


def test_bad_masks():
    m = MultiHeadAttention(8, 2)
    x = torch.randn(2, 5, 8)
    with pytest.raises(ShapeError, match=r"key_padding_mask must have shape \(B, S\) = \(2, 5\), got \(2, 4\)"):
        m(x, key_padding_mask=torch.zeros(2, 4, dtype=torch.bool))
    with pytest.raises(ShapeError, match=r"attn_mask of shape \(4, 4\) does not broadcast"):
        m(x, attn_mask=torch.ones(4, 4, dtype=torch.bool))
    with pytest.raises(ShapeError, match=r"context batch 3 != x batch 2"):
        m(x, torch.randn(3, 5, 8))


def test_head_index_out_of_range():
    with pytest.raises(ConfigError, match=r"head index 4 out of range: this module has 4 heads"):
        MultiHeadAttention(8, 4).head_weights(4)


@pytest.mark.parametrize("scoring", ["cosine", "qknorm", "unscaled", "inv_d"])
def test_other_scorings_run_and_learn(scoring):
    torch.manual_seed(0)
    m = MultiHeadAttention(16, 4, scoring=scoring)
    x = torch.randn(2, 6, 16)
    out, w = m(x, need_weights=True)
    torch.testing.assert_close(m(x), out)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 4, 6))
    out.sum().backward()
    extra = {"cosine": "logit_scale", "qknorm": "q_norm.weight"}.get(scoring)
    if extra:
        assert dict(m.named_parameters())[extra].grad is not None


def test_causal_must_be_true_or_false():
    # it reached SDPA as is_causal and came back as torch's TypeError
    m = MultiHeadAttention(8, 2)
    with pytest.raises(ConfigError, match="causal must be True or False, got str 'no'"):
        m(torch.randn(1, 3, 8), causal="no")


def test_need_weights_must_be_true_or_false():
    # 'no' is truthy: the weights came back as if asked for (a tuple where a tensor was expected)
    m = MultiHeadAttention(8, 2)
    x = torch.randn(1, 3, 8)
    with pytest.raises(ConfigError, match="need_weights must be True or False, got str 'no'"):
        m(x, need_weights="no")
    out, w = m(x, need_weights=np.bool_(True))  # NumPy's bool is a bool
    torch.testing.assert_close(w, m(x, need_weights=True)[1], rtol=0, atol=0)
    layer = TransformerEncoder(TransformerConfig(d_model=8, n_heads=2, n_layers=1, vocab_size=5)).layers[0]
    with pytest.raises(ConfigError, match="need_weights must be True or False, got str 'no'"):
        layer(x, need_weights="no")


@pytest.mark.parametrize("make, name", [(lambda: MultiHeadAttention(8, 2, bias="no"), "bias"),
                                        (lambda: MultiHeadAttention(8, 2, out_bias="no"), "out_bias"),
                                        (lambda: MultiHeadAttention(8, 2, score_bias=1), "score_bias"),
                                        (lambda: SingleHeadAttention(8, bias="no"), "bias")])
def test_bias_flags_must_be_true_or_false(make, name):
    # "no" is truthy: the module was built with the biases it was told not to have
    with pytest.raises(ConfigError, match=f"{name} must be True or False"):
        make()
    assert MultiHeadAttention(8, 2, bias=np.bool_(False)).W_qkv.bias is None  # NumPy's bool is a bool


@pytest.mark.parametrize("tau", [0, -1.0, float("nan"), float("inf"), "0.1", True])
def test_cosine_temperature_must_be_a_positive_finite_number(tau):
    # 0 was a ZeroDivisionError, −1 'math domain error', NaN a NaN logit scale (NaN weights later)
    with pytest.raises(ConfigError, match=r"cosine_temperature must be a positive finite number, got "):
        MultiHeadAttention(8, 2, scoring="cosine", cosine_temperature=tau)


@pytest.mark.parametrize("eps", [float("nan"), -1.0, 0.0, "x", True])
def test_layer_norm_eps_must_be_a_positive_finite_number(eps):
    # qknorm with layer_norm_eps=nan or -1 built, and its LayerNorms were NaN: NaN weights with
    # need_weights, and without them an output of W_O's bias alone (SDPA's CPU kernel zeroes a NaN
    # row); 'x' was float()'s ValueError
    with pytest.raises(ConfigError, match=r"layer_norm_eps must be a positive finite number, got "):
        MultiHeadAttention(8, 2, scoring="qknorm", layer_norm_eps=eps)
    m = MultiHeadAttention(8, 2, scoring="qknorm", layer_norm_eps=1e-3)
    assert m.q_norm.eps == m.k_norm.eps == 1e-3


def test_a_scale_beside_a_learnable_temperature_is_refused():
    # MultiHeadAttention(scoring='cosine', scale=2.0) made a logit_scale that no forward read (its
    # gradient None after backward): the scale replaced 1/τ
    with pytest.raises(ConfigError, match=r"scale replaces the factor 1/τ of 'cosine' scoring, so the module's"):
        MultiHeadAttention(8, 2, scoring="cosine", scale=2.0)
    MultiHeadAttention(8, 2, scoring="qknorm", scale=2.0)  # its LayerNorms are still read


@pytest.mark.parametrize("buckets, max_distance", [(2, 128), (3, 128), (32, 16), (32, 8), (32.0, 128)])
def test_t5_buckets_that_cannot_be_formed_are_refused(buckets, max_distance):
    # T5's buckets: below n/2 one per distance, then log-spaced up to max_distance. With fewer than
    # 4 buckets the encoder's half has no exact bucket (a ZeroDivisionError in the forward); with
    # max_distance ≤ buckets/2 the log span is ≤ 0 and the buckets came out negative (e.g. -2, or
    # -9223372036854775800), which nn.Embedding rejects deep inside torch
    from attnscope.modules.seq2seq import Seq2SeqConfig
    with pytest.raises(ConfigError, match=r"config.relative_buckets .* config.relative_max_distance"):
        Seq2SeqConfig(vocab_size=40, d_model=16, n_heads=4, n_layers=1, n_decoder_layers=1, d_ff=24,
                      position="t5_relative", relative_buckets=buckets, relative_max_distance=max_distance)
    Seq2SeqConfig(vocab_size=40, d_model=16, n_heads=4, n_layers=1, n_decoder_layers=1, d_ff=24,
                  position="t5_relative", relative_buckets=4, relative_max_distance=3)  # the smallest that works


@pytest.mark.parametrize("i", [True, 1.5, "1"])
def test_head_weights_wants_an_integer_head(i):
    # True gave head 1's matrices, 1.5 and "1" a TypeError from deep in slicing or comparing
    with pytest.raises(ConfigError, match=f"head index must be an integer, got {i!r}"):
        MultiHeadAttention(8, 2).head_weights(i)


def test_input_dtype_must_be_the_modules():
    # F.linear's "mat1 and mat2 must have the same dtype, but got Half and Float" named no argument
    m = MultiHeadAttention(8, 2)
    with pytest.raises(ShapeError, match=r"x is torch.float16 on cpu but the module's weights are torch.float32 on cpu"):
        m(torch.randn(1, 3, 8).half())
    with pytest.raises(ShapeError, match=r"context is torch.float64 on cpu but the module's weights are torch.float32"):
        m(torch.randn(1, 3, 8), torch.randn(1, 4, 8, dtype=torch.float64))
    with torch.autocast("cpu", dtype=torch.bfloat16):  # autocast casts for F.linear: still served
        assert m(torch.randn(1, 3, 8).bfloat16()).shape == (1, 3, 8)


def test_three_dim_attn_mask_names_the_shape_given():
    # nn.MultiheadAttention's (B·H, L, S) mask was refused naming "(8, 1, 5, 5)", a shape the
    # user never gave (the module's own unsqueeze); the message now names theirs and the layouts
    m = MultiHeadAttention(8, 4)
    x = torch.randn(2, 5, 8)
    with pytest.raises(ShapeError, match=r"3-D attn_mask .* \(B, L, S\) = \(2, 5, 5\) .*got \(8, 5, 5\) "
                                         r".*\(B, H, L, S\) = \(2, 4, 5, 5\)"):
        m(x, attn_mask=torch.ones(8, 5, 5, dtype=torch.bool))
    ok = torch.rand(1, 5, 5) > 0.5
    ok[..., 0] = True
    out = m(x, attn_mask=ok)  # (1, L, S) broadcasts over the batch, as before
    torch.testing.assert_close(out, m(x, attn_mask=ok[0]))


@pytest.mark.parametrize("scale, pattern", [
    (float("nan"), "scale must be finite, got nan"),
    (float("inf"), "scale must be finite, got inf"),
    ("0.5", "scale must be"),
])
def test_scale_must_be_a_finite_number(scale, pattern):
    # MultiHeadAttention took any scale: NaN gave finite outputs without weights and NaN weights
    # with them, a string a TypeError from inside SDPA at the first forward; attention() refuses both
    with pytest.raises(ConfigError, match=pattern):
        MultiHeadAttention(8, 2, scale=scale)


def test_scale_given_as_an_integer_or_numpy_number_is_the_factor():
    import numpy as np
    x = torch.randn(1, 3, 8, dtype=torch.float64)
    for scale in (1, np.float32(0.25)):
        m = MultiHeadAttention(8, 2, scale=scale, bias=False).double()
        q, k, _ = (x @ m.W_qkv.weight.T).split(8, dim=-1)
        q, k = (t.view(1, 3, 2, 4).transpose(1, 2) for t in (q, k))
        ref = torch.softmax(q @ k.transpose(-1, -2) * float(scale), dim=-1)  # by hand
        torch.testing.assert_close(m(x, need_weights=True)[1], ref, atol=1e-12, rtol=0)


def test_decoder_attention_and_rmsnorm_name_a_wrong_input():
    # DecoderAttention had no input check (torch's "mat1 and mat2 shapes cannot be multiplied",
    # "not enough values to unpack"), RMSNorm none ("The size of tensor a (16) must match …")
    from attnscope.modules import DecoderAttention, RMSNorm
    from attnscope.position_rotary import Rotary
    a = DecoderAttention(32, 4)
    cos, sin = Rotary(8, 10000.0).cos_sin(torch.arange(5)[None], torch.float32)
    with pytest.raises(ShapeError, match=r"x must have shape \(B, L, d_model=32\), got \(2, 5, 30\)"):
        a(torch.randn(2, 5, 30), cos, sin)
    with pytest.raises(ShapeError, match=r"x must have shape \(B, L, d_model=32\), got \(5, 32\)"):
        a(torch.randn(5, 32), cos, sin)
    with pytest.raises(ShapeError, match="x must be floating point"):
        a(torch.ones(2, 5, 32, dtype=torch.long), cos, sin)
    with pytest.raises(ShapeError, match=r"RMSNorm\(16\) must have last dim 16, got shape \(2, 15\)"):
        RMSNorm(16)(torch.randn(2, 15))


def test_embeddings_name_bad_segment_and_position_ids():
    # token_type_ids and position_ids went to nn.Embedding unchecked: "index out of range in self",
    # "The size of tensor a (5) must match the size of tensor b (4)", torch's dtype complaint
    from attnscope import Embeddings, InputError
    cfg = TransformerConfig(vocab_size=10, d_model=16, n_heads=4, n_layers=1, d_ff=32, max_positions=8,
                            type_vocab_size=2)
    e = Embeddings(cfg)
    ids = torch.randint(0, 10, (2, 5))
    with pytest.raises(InputError, match=r"token_type_ids must be in \[0, 2\) .*got min 2, max 2"):
        e(ids, token_type_ids=torch.full((2, 5), 2))
    with pytest.raises(InputError, match=r"token_type_ids must be in \[0, 2\) .*got min -1"):
        e(ids, token_type_ids=torch.full((2, 5), -1))
    with pytest.raises(ShapeError, match=r"token_type_ids must be an integer tensor of shape \(B, L\) = \(2, 5\).*got \(2, 4\)"):
        e(ids, token_type_ids=torch.zeros(2, 4, dtype=torch.long))
    with pytest.raises(ShapeError, match="token_type_ids must be an integer tensor"):
        e(ids, token_type_ids=torch.zeros(2, 5))
    with pytest.raises(InputError, match=r"position_ids must be in \[0, 8\) .*got min 6, max 10"):
        e(ids, position_ids=torch.arange(5)[None] + 6)
    with pytest.raises(ShapeError, match=r"position_ids must be an integer tensor .*got \(1, 4\)"):
        e(ids, position_ids=torch.arange(4)[None])
    # ids that are rows, given (B, L) or (1, L), are what the tables hold at those rows
    seg, pos = torch.tensor([[0, 1, 1, 0, 1]]), torch.tensor([[7, 0, 3, 3, 1]])
    e.eval()
    want = e.token_embedding(ids) + e.segment_embedding.weight[seg] + e.position_embedding.weight[pos]
    want = torch.nn.functional.layer_norm(want, (16,), e.norm.weight, e.norm.bias, cfg.layer_norm_eps)
    torch.testing.assert_close(e(ids, token_type_ids=seg, position_ids=pos.expand(2, 5)), want)


def test_encoder_names_its_own_attention_mask():
    # a wrong attention_mask was refused as "key_padding_mask must have shape (B, S) = (2, 5)",
    # an argument TransformerEncoder does not have
    from attnscope import TransformerEncoder
    enc = TransformerEncoder(TransformerConfig(vocab_size=10, d_model=16, n_heads=4, n_layers=1, d_ff=32))
    ids = torch.randint(0, 10, (2, 5))
    with pytest.raises(ShapeError, match=r"attention_mask must have the shape of input_ids, \(B, L\) = \(2, 5\).*got \(2, 4\)"):
        enc(ids, attention_mask=torch.ones(2, 4))
    with pytest.raises(ShapeError, match=r"attention_mask must have the shape of input_ids.*got list"):
        enc(ids, attention_mask=[[1] * 5] * 2)
