"""Half precision (issue 29 item 3): ``load(…, dtype=torch.bfloat16 | torch.float16)`` keeps its
weights at half width (half the bytes) and runs in that dtype. Measured against a float64 run of
the same checkpoint (attnscope's, float64 throughout), its attention weights and hidden states are
within that dtype's own error: no further from float64 than transformers' eager model in the same
dtype, give or take a factor of 2 and a few of the dtype's steps — for every tiny decoder family,
the tiny encoders and the encoder–decoders. A trace keeps the dtype."""

from __future__ import annotations

import pytest
import torch

import attnscope
from tests.models.decoders.tiny import BUILDERS, hf_model, hf_run

TEXT = "Every token looks at the tokens before it and decides how much to listen."
HALF = [torch.bfloat16, torch.float16]


def _err(xs, ys, mask=None):
    """Largest |x − y| over matched tensors (float64), over the real positions when ``mask`` (B, L)."""
    worst = 0.0
    for x, y in zip(xs, ys):
        d = (x.double() - y.double()).abs()
        if mask is not None:
            d = d[mask.bool()] if d.dim() == 3 else d.transpose(1, 2)[mask.bool()]
        worst = max(worst, float(d.max()))
    return worst


def _step(dtype, scale: float) -> float:
    """A few of the dtype's steps at numbers of size ``scale``."""
    return 4 * torch.finfo(dtype).eps * max(scale, 1.0)


def _decoder_run(model, ids):
    names = ["layers.*.out", "layers.*.attn.weights"]
    tr = model.trace(ids if isinstance(ids, str) else model.encode(ids), names=names)
    L = model.config.n_layers
    return [tr[f"layers.{i}.attn.weights"] for i in range(L)], [tr[f"layers.{i}.out"] for i in range(L - 1)]


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("name", list(BUILDERS))
def test_decoders_in_half_precision_are_as_close_to_float64_as_transformers(name, dtype, decoder_dirs):
    folder = decoder_dirs[name]
    ours = attnscope.load(folder, dtype=dtype)
    ref = attnscope.load(folder, dtype=torch.float64)
    assert all(p.dtype == dtype for p in ours.parameters())
    ids = ours.encode(TEXT).input_ids
    w, h = _decoder_run(ours, TEXT)
    w64, h64 = _decoder_run(ref, TEXT)
    assert all(t.dtype == dtype for t in w + h)  # the trace keeps the model's dtype
    theirs = hf_run(hf_model(folder, dtype=dtype), ids, dtype=dtype)
    hw, hh = theirs["attentions"], theirs["hidden_states"][1:-1]  # each block's output, as ours
    e_w, e_h = _err(w, w64), _err(h, h64)
    t_w, t_h = _err(hw, w64), _err(hh, h64)
    scale = max(float(x.abs().max()) for x in h64)
    assert e_w <= 2 * t_w + _step(dtype, 1.0), (e_w, t_w)
    assert e_h <= 2 * t_h + _step(dtype, scale), (e_h, t_h)
    with torch.no_grad():
        out = ours(ids)
    assert out.dtype == dtype and bool(torch.isfinite(out).all())


@pytest.mark.parametrize("dtype", HALF)
def test_half_precision_halves_the_weights(dtype, decoder_dirs):
    folder = decoder_dirs["llama_gqa"]
    full = attnscope.load(folder)
    half = attnscope.load(folder, dtype=dtype)

    def nbytes(m):
        return sum(p.numel() * p.element_size() for p in m.parameters())
    assert nbytes(half) * 2 == nbytes(full)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("name", ["bert", "gpt2"])
def test_encoders_in_half_precision_are_as_close_to_float64_as_transformers(name, dtype, tiny_dirs):
    import transformers

    from tests.models.fixtures import hf_class
    folder = tiny_dirs[name]
    ours = attnscope.load(folder, dtype=dtype)
    ref = attnscope.load(folder, dtype=torch.float64)
    texts = [TEXT, "Hi there"]
    batch = ours.encode(texts)
    names = ["layers.*.attn.weights", "layers.*.out"]
    tr, tr64 = ours.trace(texts, names=names), ref.trace(texts, names=names)
    L = ours.config.n_layers
    w = [tr[f"layers.{i}.attn.weights"] for i in range(L)]
    w64 = [tr64[f"layers.{i}.attn.weights"] for i in range(L)]
    h = [tr[f"layers.{i}.out"] for i in range(L)]
    h64 = [tr64[f"layers.{i}.out"] for i in range(L)]
    transformers.logging.set_verbosity_error()
    hf = hf_class(name).from_pretrained(str(folder), attn_implementation="eager", dtype=dtype).eval()
    with torch.no_grad():
        out = hf(input_ids=batch.input_ids, attention_mask=batch.attention_mask, output_attentions=True,
                 output_hidden_states=True)
    hh = list(out.hidden_states[1:])
    if name == "gpt2":  # transformers' last hidden state is after ln_f; ours is the block's output
        hh = hh[:-1]
        h, h64 = h[:-1], h64[:-1]
    mask = batch.attention_mask
    e_w, t_w = _err(w, w64), _err(list(out.attentions), w64)
    e_h, t_h = _err(h, h64, mask), _err(hh, h64, mask)
    scale = max(float(x.abs().max()) for x in h64)
    assert e_w <= 2 * t_w + _step(dtype, 1.0), (e_w, t_w)
    assert e_h <= 2 * t_h + _step(dtype, scale), (e_h, t_h)


def test_a_float16_trace_whose_q_k_overflows_says_so_instead_of_nan(tmp_path):
    """A float16 model whose scaled scores fit (|q·k| · 1/√d ≈ 3e4) but whose raw q·k does not
    (≈ 8e4 > 65504): its forward pass (the factor goes on q) and a trace of the weights alone are
    finite, and a trace of every step must not quietly turn the overflowed scores into NaN weights
    and NaN hidden states downstream: it is one sentence naming the overflow and the dtype."""
    from attnscope.errors import NonFiniteError
    from attnscope.testing import tiny as testing
    folder = testing.tiny_gpt2(tmp_path / "gpt2")
    m = attnscope.load(folder, dtype=torch.float16)
    W, b = m.layers[0].attn.W_qkv.weight, m.layers[0].attn.W_qkv.bias
    d = W.shape[0] // 3  # the query rows
    with torch.no_grad():
        W[:d] *= 10000
        b[:d] *= 10000
    text = "hello world how are you"
    assert bool(torch.isfinite(m.logits([text])).all())
    assert bool(torch.isfinite(m.trace(text, names=["layers.*.attn.weights", "layers.*.out"])["layers.1.out"]).all())
    with pytest.raises(NonFiniteError, match=r"q·k has non-finite values .*: q·k overflowed torch.float16"):
        m.trace(text)
    # a hook may still write -inf into the scores of a float16 model that does not overflow
    ok = attnscope.load(folder, dtype=torch.float16)

    def knock_out_key_0(t, name):
        t = t.clone()
        t[..., 1:, 0] = -torch.inf
        return t
    tr = ok.trace(text, hooks={"layers.0.attn.scaled": knock_out_key_0})
    w = tr["layers.0.attn.weights"]
    assert bool(torch.isfinite(w).all()) and bool((w[..., 1:, 0] == 0).all())
