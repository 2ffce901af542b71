"""The viewer's data for decoders: q of every query head and k, v of every k/v head as traced
(before the rotation), each layer's frequencies and window, Gemma's factor; the page's arithmetic
equals the model's weights; the generation data's rows are the steps' attentions."""

import numpy as np
import pytest

import attnscope
from attnscope import InputError
from attnscope.viewer import data
from attnscope.viewer.generation import generation_data
from attnscope.viewer.run import display_tokens, view_data

TEXT = "A sliding window keeps each token's view to the most recent few tokens."


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from tests.models.decoders import tiny as T
    root = tmp_path_factory.mktemp("tiny-view")
    return {name: attnscope.load(getattr(T, name)(root / name)) for name in ("gemma3", "llama_gqa")}


def test_stored_operands_frequencies_windows_and_factor(tiny):
    m = tiny["gemma3"]
    c = m.config
    d = view_data(m, TEXT)
    cfg = d["config"]
    assert cfg["n_kv_heads"] == 2 and cfg["windows"] == [6, 6, None] and cfg["operands"] == ["q_normed", "k_normed"]
    assert cfg["factor"] == pytest.approx(24 ** -0.5, rel=1e-15)
    for layer, base in ((0, 10000.0), (2, 1e6)):
        want = [base ** (-2 * i / c.d_head) for i in range(c.d_head // 2)]
        np.testing.assert_allclose(cfg["rope"][layer]["inv_freq"], want, rtol=1e-15)
        assert cfg["rope"][layer]["base"] == base and cfg["rope"][layer]["pairing"] == "half"
    tr = m.trace(TEXT, names=["layers.*.attn.q_normed", "layers.*.attn.k_normed", "layers.*.attn.v"])
    entry = d["texts"][0]
    for key, step, heads in (("q", "q_normed", 4), ("k", "k_normed", 2), ("v", "v", 2)):
        arr = data.decode(entry[key])
        assert arr.shape[:2] == (3, heads)
        for layer in range(3):
            assert arr[layer].tobytes() == tr[f"layers.{layer}.attn.{step}"][0].numpy().tobytes()


@pytest.mark.parametrize("name", ["gemma3", "llama_gqa"])
def test_page_arithmetic_is_the_models(tiny, name):
    m = tiny[name]
    d = view_data(m, TEXT)
    full = m.trace(TEXT, names=["layers.*.attn.weights"])
    entry, cfg = d["texts"][0], d["config"]
    q, k = data.decode(entry["q"]), data.decode(entry["k"])
    for layer in range(m.config.n_layers):
        n = q.shape[2]
        mask = full.mask(layer, text=0).numpy()
        w = data.page_weights(q[layer], k[layer], cfg["factor"], mask, cfg["rope"][layer])
        np.testing.assert_allclose(w, full[f"layers.{layer}.attn.weights"][0].double().numpy(), atol=1e-5)
        # the window: keys 6 or more back get nothing on gemma's sliding layers
        if cfg["windows"][layer]:
            assert w[:, n - 1, : n - cfg["windows"][layer]].max() == 0.0


def test_generation_rows_are_the_steps_attentions(tiny):
    m = tiny["gemma3"]
    gen = m.generate("A sliding window keeps each token's", max_new_tokens=12, attentions=True)
    d = generation_data(m, gen)
    g = d["generation"]
    assert g["n_prompt"] == gen.n_prompt and g["steps"] == [gen.n_prompt - 1 + t for t in range(len(gen.new_ids))]
    entry, cfg = d["texts"][0], d["config"]
    q, k = data.decode(entry["q"]), data.decode(entry["k"])
    n = q.shape[2]
    assert n == len(gen.ids) > 6  # longer than the window: the generation view shows windows too
    from attnscope import reference as R
    for layer in range(3):
        mask = R.window_mask(n, n, cfg["windows"][layer])
        w = data.page_weights(q[layer], k[layer], cfg["factor"], mask, cfg["rope"][layer])
        for t, i in enumerate(g["steps"]):
            got = w[:, i, : i + 1]
            np.testing.assert_allclose(got, gen.attentions[t][layer].double().numpy(), atol=2e-5)


def test_generation_without_new_tokens_is_refused(tiny):
    m = tiny["gemma3"]
    gen = m.generate("A sliding window", max_new_tokens=1)
    gen.new_ids = []
    with pytest.raises(InputError, match="no new tokens"):
        generation_data(m, gen)


def test_tokens_are_shown_as_text():
    m = attnscope.load("smollm2-135m")
    toks = m.encode("我 the bank\n").tokens[0]
    assert toks == ["æĪ", "ĳ", "Ġthe", "Ġbank", "Ċ"]  # byte-level BPE: 我 (e6 88 91) split in two tokens
    assert display_tokens(m, toks) == ["…", "我", " the", " bank", "\n"]  # 我 on the piece that completes it


def test_the_context_views_default_token_is_never_a_start_token(tiny):
    """Gemma's texts both start with <bos>, which a causal model's token sees alone: it was the
    default token of the context view, cosine 1 at every layer (a view with nothing to show)."""
    from attnscope.server import create_app
    from attnscope.viewer.context import find_token

    m = tiny["gemma3"]
    a, b = "A cat sat on the mat.", "My dog ran to the mat."
    c = view_data(m, a, compare=b)["compare"]
    ta, tb = m.encode(a).tokens[0], m.encode(b).tokens[0]
    assert ta[0] == tb[0] == "<bos>" and c["token"] != "<bos>" and c["pos_a"] > 0 and c["pos_b"] > 0
    assert ta[c["pos_a"]].lower() == tb[c["pos_b"]].lower() and min(c["across"]) < 1 - 1e-3
    held = create_app(m, ship_up_to=1).state.held_view(a, b, None, 4, 1)["compare"]  # a held page: the same token
    assert (held["token"], held["pos_a"], held["pos_b"]) == (c["token"], c["pos_a"], c["pos_b"])
    # any special token of the tokenizer, not only those SPECIAL names
    assert find_token(["<x>", "a"], None, ["<x>", "a"]) == 0
    assert find_token(["<x>", "a"], None, ["<x>", "a"], special={"<x>"}) == 1
