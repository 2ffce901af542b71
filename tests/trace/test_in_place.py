"""A full trace writes ``masked`` and ``weights`` over ``scaled``'s memory where it keeps them as
the call that made them (kernels.dense.steps ``free``), reads a row maximum only when some row
starts with −inf (kernels.dense.softmax), and lets the layers of its pass share one mask
(kernels.derived.shared). Checked against the same pass made the old way — a plain recorder
keeping scaled and masked makes every step a tensor of its own — bit for bit (torch.equal) in
every family and padded batches; that the in-place path is taken (the softmax and the mask add
allocate nothing); and that a hook changing one layer's mask in place leaves the others alone."""

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from attnscope.hooks import Recorder, name_hook_points
from attnscope.kernels import dense

TEXTS = ["The cat sat on the mat, and then it looked at the dog for a long while.", "Attention, please!"]
SOURCE = ["The quick brown fox jumps over the lazy dog.", "Hi"]
TARGET = ["A fox jumped.", "Hello there, friend"]


def apart(model, *args, **kw):
    """The trace of ``args`` with a plain recorder (a dict: it keeps the tensor) on every scaled and
    masked step, so that no step is written over; and what those recorders saw."""
    seen: dict = {}
    points = name_hook_points(model)
    handles = [p.add_hook(Recorder(seen)) for n, p in points.items() if n.rpartition(".")[2] in ("scaled", "masked")]
    try:
        return model.trace(*args, **kw), seen
    finally:
        for h in handles:
            h.remove()


def same(model, *args, **kw):
    fast = model.trace(*args, **kw)
    slow, seen = apart(model, *args, **kw)
    assert fast.names == slow.names and seen
    for n in reversed(fast.names):
        a, b = fast[n], slow[n]
        assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b), n
    for n, t in seen.items():  # the derived steps are what the pass that made them apart used
        assert torch.equal(fast[n], t), n
    assert torch.equal(fast.output, slow.output)


def test_every_encoder_family_reads_the_same_bits(tiny_models, minilm, encoders):
    for model in (*tiny_models.values(), minilm, *encoders.values()):  # DeBERTa's relative terms, ALBERT, …
        same(model, TEXTS)
        same(model, TEXTS[0])


def test_every_decoder_family_reads_the_same_bits(decoders):
    for model in decoders.values():
        same(model, TEXTS)
        same(model, TEXTS[0])


def test_encoder_decoder_reads_the_same_bits(seq2seq):
    for model in seq2seq.values():
        same(model, SOURCE, target=TARGET)


def _allocated(model, trace) -> dict:
    """Bytes allocated by the softmax and add events on an L×L matrix of every head while ``trace()`` runs."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True) as prof:
        tr = trace()
    tr = tr[0] if isinstance(tr, tuple) else tr
    B, L = tr.input_ids.shape
    out = {"aten::softmax": 0, "aten::add": 0}
    for e in prof.events():
        if e.name in out and e.input_shapes and e.input_shapes[0] == [B, model.config.n_heads, L, L]:
            out[e.name] += max(e.cpu_memory_usage, 0)
    return out


def test_softmax_and_mask_are_written_over_scaled(decoders):
    model = decoders["llama_gqa"] if "llama_gqa" in decoders else next(iter(decoders.values()))
    model.trace(TEXTS)  # warm
    fast = _allocated(model, lambda: model.trace(TEXTS))
    slow = _allocated(model, lambda: apart(model, TEXTS))  # the padding mask added, the softmax, apart
    one = model.config.n_layers * len(TEXTS) * model.config.n_heads * 4  # bytes per L² of every layer
    assert fast == {"aten::softmax": 0, "aten::add": 0}
    assert slow["aten::softmax"] >= one and slow["aten::add"] >= one, slow


def test_layers_of_a_pass_share_one_mask_and_a_hook_keeps_its_own(decoders):
    model = decoders["llama_gqa"] if "llama_gqa" in decoders else next(iter(decoders.values()))
    tr = model.trace(TEXTS)
    masks = [tr[f"layers.{i}.attn.mask"] for i in range(model.config.n_layers)]
    assert len({m.data_ptr() for m in masks}) == 1

    def close_last_key(t, name):
        t[..., -1] = False  # in place, returns nothing

    hooked = model.trace(TEXTS, hooks={"layers.0.attn.mask": close_last_key})
    assert not hooked["layers.0.attn.mask"][..., -1].any()
    for i in range(1, model.config.n_layers):
        assert torch.equal(hooked[f"layers.{i}.attn.mask"], tr[f"layers.{i}.attn.mask"]), i
    assert tr["layers.1.attn.mask"][..., -1].any()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_softmax_reads_the_row_maximum_only_where_needed(dtype):
    g = torch.Generator().manual_seed(5)
    x = (torch.randn(2, 3, 6, 7, generator=g, dtype=torch.float64) * 4).to(dtype)
    expect = torch.softmax(x.double(), -1)
    assert not dense.maybe_dead(x)
    torch.testing.assert_close(dense.softmax(x).double(), expect, atol=1e-2 if dtype == torch.bfloat16 else 1e-6,
                               rtol=0)
    x[0, 1, 2, :] = float("-inf")  # a row that sees nothing: zeros, not NaN
    x[1, 0, 3, 0] = float("-inf")  # a row that starts with -inf but sees the rest
    assert dense.maybe_dead(x)
    w = dense.softmax(x).double()
    assert torch.equal(w[0, 1, 2], torch.zeros(7, dtype=torch.float64))
    ref = torch.softmax(x[1, 0, 3, 1:].double(), -1)
    torch.testing.assert_close(w[1, 0, 3, 1:], ref, atol=1e-2 if dtype == torch.bfloat16 else 1e-6, rtol=0)
    assert w[1, 0, 3, 0] == 0 and not w.isnan().any()


def test_scaled_a_recorder_keeps_is_not_written_over(tiny_models):
    """A recorder that keeps the tensor (a plain dict) sees scaled as the forward made it: the
    scores times 1/√d_head (float64 here), not the weights that could have been written over it."""
    model = tiny_models["gpt2"]
    tr, seen = apart(model, TEXTS)
    c = model.config
    for i in range(c.n_layers):
        got = seen[f"layers.{i}.attn.scaled"].double()
        ref = tr[f"layers.{i}.attn.scores"].double() / (c.d_model // c.n_heads) ** 0.5
        torch.testing.assert_close(got, ref, atol=1e-6, rtol=1e-6)
