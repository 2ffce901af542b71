"""explain --path writes the layer from its recipe (attnscope.recipe): the layer's values appear in
the order of the recipe's steps — pre-norm (Llama, GPT-2), sandwich (Gemma 3), post-norm (BERT),
T5's and BART's decoder layer with its cross-attention — each equal to the float64 forward from the
weights bit for bit and to attnscope's torch model run in float64; a recipe's own words replace
the generic ones where the labels have them."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import attnscope
from attnscope import reference_model as RM
from attnscope.explain.path import explain_path
from attnscope.recipe import BLOCK_OPS, CROSS_RECIPES, LayerRecipe, get_layer_recipe
from attnscope.reference_model_seq2seq import forward_seq2seq
from attnscope.testing import tiny as T1
from tests.models.decoders import tiny as TD
from tests.models.seq2seq import tiny as TS

TEXT = "The quick brown fox jumps over the lazy dog."
SOURCE, TARGET = "the cat sat on the mat", "the cat sat"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("path-recipe")
    build = {"llama_gqa": TD.llama_gqa, "gemma3": TD.gemma3, "gpt2": T1.tiny_gpt2, "bert_zh": T1.tiny_bert_chinese,
             "t5": TS.t5, "bart": TS.bart}
    return {k: attnscope.load(b(root / k)) for k, b in build.items()}


def _names(recipe: LayerRecipe, lp: str) -> list:
    """The trace name of each step's value, in the recipe's order (a block: its output)."""
    return [f"{lp}.{s.name}.out" if s.op in BLOCK_OPS else f"{lp}.{s.name}" for s in recipe.steps]


def _check(w, recipe: LayerRecipe, lp: str, f: dict, f64: dict, pos: int) -> None:
    want = _names(recipe, lp)
    shown = [m["trace"] for m in w.meta["path"] if m["trace"] in want]
    assert shown == want  # every step of the recipe, in its order, once
    for name in want:
        np.testing.assert_array_equal(w.values[name], f[name][pos], err_msg=name)
        theirs = f64[name][0][pos].numpy()
        np.testing.assert_allclose(w.values[name], theirs, rtol=0, atol=1e-10 * max(1.0, float(np.abs(theirs).max())),
                                   err_msg=name)


@pytest.mark.parametrize("name, recipe, layer, head, pos", [
    ("llama_gqa", "pre", 1, 5, 6), ("gemma3", "sandwich", 1, 3, 7), ("gpt2", "pre", 1, 1, 4), ("bert_zh", "post", 1, 2, 2),
])
def test_layer_steps_follow_the_recipe(tiny, name, recipe, layer, head, pos):
    m = tiny[name]
    text = "我喜欢人工智能" if name == "bert_zh" else TEXT
    w = explain_path(text, m, layer=layer, head=head, position=pos)
    f64 = copy.deepcopy(m).double().trace(text)
    _check(w, get_layer_recipe(recipe), f"layers.{layer}", RM.forward(m, text, upto=layer), f64, pos)
    keys = [s.key for s in w.steps]
    # the worked steps in the recipe's order: the norms where the recipe puts them
    order = {"pre": ["attn_in", "q", "attn_out", "attn_resid", "ffn_in", "ffn", "ffn_out", "ffn_resid", "out"],
             "sandwich": ["attn_in", "q", "attn_out", "attn_post_norm", "attn_resid", "ffn_in", "ffn", "ffn_out",
                          "ffn_post_norm", "ffn_resid", "out"],
             "post": ["attn_in", "q", "attn_out", "attn_resid", "ffn_in", "ffn", "ffn_out", "ffn_resid", "out"]}[recipe]
    assert [k for k in keys if k in order] == order
    md = w.render("markdown")
    titles = {"pre": ("before attention", "the layer's output"), "sandwich": ("Gemma's RMSNorm after attention",
                                                                          "Gemma's RMSNorm after the feed-forward"),
              "post": ("attention's input", "the last LayerNorm: the layer's output")}[recipe]
    for title in titles:
        assert title in md


@pytest.mark.parametrize("name, pos", [("t5", 2), ("bart", 3)])
def test_decoder_layer_with_cross_attention_follows_its_recipe(tiny, name, pos):
    m = tiny[name]
    w = explain_path(SOURCE, m, target=TARGET, layer=1, head=2, position=pos)
    f = forward_seq2seq(m, SOURCE, TARGET)
    f64 = copy.deepcopy(m).double().trace(SOURCE, TARGET)
    _check(w, CROSS_RECIPES[m.config.norm], "decoder.layers.1", f, f64, pos)
    keys = [s.key for s in w.steps]
    assert keys.index("attn_resid") < keys.index("cross_attn_in") < keys.index("source") < keys.index("cross_q") \
        < keys.index("attn_out_cross") < keys.index("attn_resid_cross") < keys.index("ffn_in") < keys.index("out")


def test_the_embedding_formula_names_the_rows_there_are(tiny):
    """GPT-2 (and DistilBERT, BART) add a token row and a position row, no segment row: the formula
    said token + segment + position."""
    gpt2 = explain_path(TEXT, tiny["gpt2"], layer=0, head=0, position=2).render("markdown")
    bert = explain_path("我喜欢人工智能", tiny["bert_zh"], layer=0, head=0, position=2).render("markdown")
    assert "`x = token + position`" in gpt2 and "segment" not in gpt2.split("## Step 3", 1)[0]
    assert "`x = token + segment + position`" in bert and "Trace name: embed.tokens, embed.segments, embed.positions." in bert
