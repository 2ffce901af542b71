"""GlobEnc's and ALTI's weights kept by a hook (attnscope.attribution.kept_weights): the same
matrices, bit for bit, as when the trace records the weights; the buffer is column-major, so the
pair loop reads it in place, and the next call reuses it."""

from __future__ import annotations

import pytest
import torch

from attnscope.attribution import decompose as DC
from attnscope.attribution import kept_weights as KW
from attnscope.attribution import norm_methods as NM
from attnscope.attribution import pair_norms as PN
from attnscope.attribution import pairs as PA
from attnscope.attribution.factored import trace_names, walk
from attnscope.threads import map_lanes

TEXT = "The quick brown fox jumps over the lazy dog near the river bank."


def recorded(model, method: str) -> torch.Tensor:
    """The method's accumulated matrix with the weights recorded by the trace (as before the hook)."""
    st = DC.stack_of(model, method)
    tr = NM.trace_one(model, st, TEXT, trace_names(st))

    def layer_matrix(i: int) -> torch.Tensor:
        return NM.normalise_rows(PA.block_matrices(walk(st, tr, i), (method,))[method])
    per_layer = torch.stack(map_lanes(layer_matrix, range(st.n_layers), "cpu"))
    return DC.rollout(per_layer, st.n_layers - 1)


@pytest.mark.parametrize("method", ["alti", "globenc"])
def test_kept_weights_give_the_recorded_traces_matrices_bit_for_bit(model, method):
    """Every model the methods run on: MiniLM, GPT-2, Gemma 3 (windows, grouped queries), DeBERTa v3,
    T5 and BART (their encoder stacks)."""
    got = model.attribute(TEXT, method=method)
    assert torch.equal(got.scores, recorded(model, method))


def test_the_hook_keeps_column_major_views_the_pair_loop_reads_in_place(minilm):
    st = DC.stack_of(minilm, "alti")
    kept = KW.KeptWeights(st.prefix, st.n_layers)
    names = [n for n in trace_names(st) if n != kept.pattern]
    tr = kept.trace(NM.trace_one(minilm, st, TEXT, names, hooks={kept.pattern: kept.keep}))
    plain = minilm.trace(TEXT, names=[kept.pattern])
    assert sorted(kept.kept) == [f"layers.{i}.attn.weights" for i in range(st.n_layers)]
    for i in range(st.n_layers):
        name = f"layers.{i}.attn.weights"
        w = tr[name]  # (1, H, L, L)
        assert torch.equal(w, plain[name]) and PN.is_column_major(w[0])
        assert w[0].transpose(1, 2).data_ptr() == kept.buffer[i].data_ptr()  # a view of the buffer, no copy
        Wc, first, stop = PN.columns(w[0])
        assert Wc.data_ptr() == kept.buffer[i].data_ptr()  # read in place by the pair loop
        assert first.tolist() == [0] * w.shape[-1] and stop.tolist() == [w.shape[-1]] * w.shape[-1]
    assert tr.lengths == plain.lengths and tr.text_tokens(0) == plain.text_tokens(0)  # the rest is the trace's


def test_the_buffer_is_handed_on_to_the_next_call_and_released_on_demand(minilm, monkeypatch):
    """A second call reuses the first call's memory (no first touch again), texts of other lengths
    included, with the same numbers as the recorded path; a buffer over SPARE_BYTES is not kept."""
    KW.release()
    short, long_ = "A short one.", TEXT + " And a second sentence makes it longer."
    first = minilm.attribute(long_, method="alti")
    spare = KW.SPARE[torch.float32]
    assert spare.numel() >= 6 * 12 * first.scores.shape[0] ** 2  # layers × heads × L²
    for text in (short, long_):  # a shorter text takes the front of the same buffer
        got = minilm.attribute(text, method="alti")
        assert KW.SPARE[torch.float32].data_ptr() == spare.data_ptr()
        st = DC.stack_of(minilm, "alti")
        tr = NM.trace_one(minilm, st, text, trace_names(st))
        want = DC.rollout(torch.stack([NM.normalise_rows(PA.block_matrices(walk(st, tr, i), ("alti",))["alti"])
                                       for i in range(st.n_layers)]), st.n_layers - 1)
        assert torch.equal(got.scores, want)
    KW.release()
    assert not KW.SPARE
    monkeypatch.setattr(KW, "SPARE_BYTES", 1000)  # smaller than any buffer: nothing is kept
    minilm.attribute(short, method="alti")
    assert not KW.SPARE


@pytest.mark.parametrize("mode", ["torch", "compiled"])
def test_a_call_in_inference_mode_leaves_a_buffer_the_next_plain_call_can_write(minilm, monkeypatch, mode):
    """A buffer made under ``torch.inference_mode()`` is an inference tensor, which torch refuses to
    write in place outside that mode: handed on, it must not break the next call (the torch copy of
    the weights: another dtype, no compiler, ``ATTNSCOPE_COMPILED=0``)."""
    if mode == "torch":
        monkeypatch.setenv("ATTNSCOPE_COMPILED", "0")
    KW.release()
    with torch.inference_mode():
        inside = minilm.attribute(TEXT, method="alti")
    outside = minilm.attribute(TEXT, method="alti")
    assert torch.equal(inside.scores, outside.scores)
    assert not any(t.is_inference() for t in KW.SPARE.values())
    with torch.inference_mode():  # and back: a plain buffer is written in inference mode too
        again = minilm.attribute(TEXT, method="alti")
    assert torch.equal(again.scores, outside.scores)
    KW.release()


def test_a_layer_on_the_cpu_is_not_transposed_by_c_into_a_buffer_on_another_device(monkeypatch):
    """device_map: layer 0 on a GPU gives the buffer its device; a later layer on the CPU in float32
    passes the compiled loop's check on its weights, but the buffer is not CPU memory: the C
    transpose must not write into it (it would write through a device pointer), the torch copy does.
    The meta device stands in for the GPU; a spy stands in for the library."""
    calls = []

    class Spy:
        def attnscope_transpose(self, *args):
            calls.append(args)
    monkeypatch.setattr(PN, "library", lambda K: Spy())
    kept = KW.KeptWeights("layers", 2)
    kept.keep(torch.rand(1, 3, 5, 5, device="meta"), "layers.0.attn.weights")  # the buffer: on layer 0's device
    assert kept.buffer.device.type == "meta"
    w = torch.rand(1, 3, 5, 5)  # layer 1: float32 on the CPU
    kept.keep(w, "layers.1.attn.weights")
    assert calls == []  # no C call on memory that is not the CPU's
    assert kept.kept["layers.1.attn.weights"].shape == w.shape
    out = torch.empty(3, 5, 5)
    assert PN.transpose_into(w[0], out) and len(calls) == 1  # both on the CPU: the compiled pass
