"""Rows of other families: the article's 我喜欢人工智能 with a Chinese vocabulary (喜 is a token there),
and a causal GPT-2 whose later keys are masked."""

import numpy as np
import pytest

import attnscope
from attnscope.explain import explain
from attnscope.testing.tiny import tiny_bert_chinese, tiny_gpt2  # needs transformers (test extra)


@pytest.fixture(scope="module")
def chinese(tmp_path_factory):
    return attnscope.load(tiny_bert_chinese(tmp_path_factory.mktemp("zh")))


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    return attnscope.load(tiny_gpt2(tmp_path_factory.mktemp("gpt2")))


def test_row_of_xi_in_a_chinese_bert(chinese):
    w = explain(text="我喜欢人工智能", model=chinese, layer=1, head=2, token="喜", dims=2)
    tr = chinese.trace("我喜欢人工智能", names=["layers.1.attn.weights[2]", "layers.1.attn.z[2]"])
    assert tr.tokens[0][2] == "喜" and w.meta["query_position"] == 2
    np.testing.assert_allclose(w.values["weights"], tr["layers.1.attn.weights[2]"][0, 2].double().numpy(), atol=1e-6)
    np.testing.assert_allclose(w.values["output"], tr["layers.1.attn.z[2]"][0, 2, :2].double().numpy(), atol=1e-6)
    zh = w.render("markdown", lang="zh")
    assert "逐步计算 喜 这一行：第 1 层，第 2 个头" in zh and "| 2 | 喜 |" in zh


def test_causal_row_masks_the_later_keys(gpt2):
    text = "The quick brown fox jumps over the lazy dog."
    tokens = gpt2.encode(text).tokens[0]
    q = 3
    w = explain(text=text, model=gpt2, layer=0, head=1, position=q)
    tr = gpt2.trace(text, names=["layers.0.attn.weights[1]"])
    ref = tr["layers.0.attn.weights[1]"][0, q].double().numpy()
    np.testing.assert_allclose(w.values["weights"], ref, atol=1e-6)
    assert (w.values["weights"][q + 1:] == 0).all() and (w.values["exp"][q + 1:] == 0).all()
    assert np.isneginf(w.values["masked"][q + 1:]).all() and len(tokens) > q + 1
    md = w.render("markdown")
    assert "are masked (−∞)" in md and "| −∞ | 0 |" in md


def test_a_one_token_text_needs_no_query_chosen(gpt2):
    """A text of one token ('a' on GPT-2, 'Hi' on SmolLM2) has one query; explain asked the user to
    choose it ('choose the query token: ... the tokens are 0:a'), with or without --attribution."""
    assert gpt2.encode("a").tokens == [["a"]]
    w = explain(text="a", model=gpt2, layer=0, head=1)
    tr = gpt2.trace("a", names=["layers.0.attn.weights[1]"])
    assert w.meta["query_position"] == 0 and w.values["weights"].tolist() == [1.0]
    assert tr["layers.0.attn.weights[1]"][0, 0].tolist() == [1.0]
    assert explain(text="a", model=gpt2, attribution="rollout").meta is not None
    assert explain(text="a", model=gpt2, path=True).meta["query_position"] == 0
