"""Value zeroing from the clean pass's stream (norm_methods.zeroing_layer: only the zeroed layer runs)
against value zeroing written the plain way here: every zeroed copy run from the embedding up to the
layer (the implementation before the prefix was reused), on tiny decoders and encoders and on MiniLM."""

from __future__ import annotations

import pytest
import torch

from attnscope.attribution import attribute
from attnscope.attribution import decompose as DC
from attnscope.attribution.norm_methods import traced_inputs

TEXT = "Value zeroing asks what each token's values add to every output."
NAMES = ["gpt2", "llama_gqa", "gemma3", "olmo2", "deberta_v3", "t5", "bart", "bloom"]


class Stop(Exception):
    pass


def plain_zeroing(model, text: str) -> torch.Tensor:
    """``(n_layers, L, L)``: for each layer l and token j, the text run from its embedding with token
    j's values zeroed in layer l, one copy at a time; cosine distance (float64) of every token's layer
    output to the clean one, rows normalised."""
    st = DC.stack_of(model, "test")
    names = [f"{st.prefix}.{i}.out" for i in range(st.n_layers)]
    with torch.no_grad():
        clean = model.trace(text, names=names, **st.trace_kw)
    mats = []
    for i, name in enumerate(names):
        ref = clean[name][0].double()  # (L, d)
        L = ref.shape[0]
        C = torch.zeros(L, L, dtype=torch.float64)
        for j in range(L):
            got = {}

            def zero(v, _name, j=j):  # (1, H_kv, L, d_head)
                v = v.clone()
                v[:, :, j] = 0
                return v

            def take(t, _name, got=got):
                got["out"] = t[0].double()  # (L, d)
                raise Stop
            try:
                with torch.no_grad():
                    model.trace(text, names=[], hooks={f"{st.prefix}.{i}.attn.v": zero, name: take}, **st.trace_kw)
            except Stop:
                pass
            new = got["out"]
            cos = (new * ref).sum(-1) / new.norm(dim=-1) / ref.norm(dim=-1)
            C[:, j] = 1 - cos
        C = C.clamp(min=0)
        s = C.sum(-1, keepdim=True)
        mats.append(C / torch.where(s > 0, s, torch.ones_like(s)))
    return torch.stack(mats)


@pytest.mark.parametrize("name", NAMES)
def test_the_prefix_reuse_equals_the_plain_passes(tiny, name):
    model = tiny(name)
    got = attribute(model, TEXT, "value_zeroing")
    want = plain_zeroing(model, TEXT)
    assert (got.per_layer.double() - want).abs().max() <= 1e-6


def test_minilm_one_short_text(minilm):
    text = "The cat sat on the mat."
    got = attribute(minilm, text, "value_zeroing")
    want = plain_zeroing(minilm, text)
    assert (got.per_layer.double() - want).abs().max() <= 1e-6


def test_each_layer_runs_once_a_pass_and_the_layers_come_back(tiny):
    """The layers below the zeroed one are not run by its passes (each layer is entered once more than
    in the clean trace alone per zeroing pass of its own: one a chunk of 32 zeroed tokens), and the
    model keeps its own layer modules afterwards (no stand-in left behind)."""
    model = tiny("llama_gqa")
    layers = list(model.layers)

    def entered(run) -> list[int]:
        calls = [0] * len(layers)

        def count(i):
            def hook(module, args):  # a pre-hook: a zeroing pass ends inside its layer (raised at its output)
                calls[i] += 1
            return hook
        handles = [layer.register_forward_pre_hook(count(i)) for i, layer in enumerate(layers)]
        try:
            run()
        finally:
            for h in handles:
                h.remove()
        return calls
    clean = entered(lambda: traced_inputs(model, DC.stack_of(model, "test"), TEXT))
    every = entered(lambda: attribute(model, TEXT, "value_zeroing"))
    passes = -(-len(model.encode(TEXT).tokens[0]) // 32)  # ceil(L / 32): this text has 37 tokens here
    assert passes == 2
    assert [e - c for e, c in zip(every, clean)] == [passes] * len(layers)
    assert all(a is b for a, b in zip(model.layers, layers)) and len(model.layers) == len(layers)
