"""A real model's row (the default all-MiniLM-L6-v2) against its own trace."""

import re

import numpy as np
import pytest

import attnscope
from attnscope import InputError
from attnscope.explain import explain

TEXT = "The cat sat on the mat because it was tired."


@pytest.fixture(scope="module")
def model():
    return attnscope.load()


@pytest.fixture(scope="module")
def worked(model):
    return explain(text=TEXT, model=model, layer=2, head=3, token="it", dims=4)


def _table_column(md: str, step_title: str, col: int) -> list:
    part = md.split(step_title, 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in part.splitlines() if ln.startswith("| ") and re.match(r"\| \d+ \|", ln)]
    return [float(r.strip("|").split("|")[col]) for r in rows]


@pytest.mark.parametrize("decimals", [3, 4])
def test_printed_probabilities_and_vector_match_the_trace(model, worked, decimals):
    tr = model.trace(TEXT, names=["layers.2.attn.weights[3]", "layers.2.attn.z[3]", "layers.2.attn.scores[3]"])
    pos = worked.meta["query_position"]
    assert tr.tokens[0][pos] == "it"
    w_ref = tr["layers.2.attn.weights[3]"][0, pos].double().numpy()
    z_ref = tr["layers.2.attn.z[3]"][0, pos].double().numpy()
    s_ref = tr["layers.2.attn.scores[3]"][0, pos].double().numpy()
    md = worked.render("markdown", decimals=decimals)
    half = 0.5 * 10 ** -decimals
    printed_p = _table_column(md, "probabilities p_j", 3)
    printed_s = _table_column(md, "raw scores s_j", 2)
    assert len(printed_p) == len(w_ref) == 13
    np.testing.assert_allclose(printed_p, w_ref, rtol=0, atol=half + 1e-6)
    np.testing.assert_allclose(printed_s, s_ref, rtol=0, atol=half + 1e-5)
    z_text = re.search(r"The new vector of 8:it \(first 4 dimensions\): \[([^\]]+)\]", md).group(1)
    np.testing.assert_allclose([float(x) for x in z_text.split(",")], z_ref[:4], rtol=0, atol=half + 1e-6)
    # unrounded, the float64 recomputation is within float32 accuracy of the model's own numbers
    np.testing.assert_allclose(worked.values["weights"], w_ref, atol=1e-6)
    np.testing.assert_allclose(worked.values["output_full"], z_ref, atol=1e-5)
    assert abs(worked.values["weights"].sum() - 1) < 1e-12


def test_row_in_chinese_and_json(worked):
    zh = worked.render("markdown", lang="zh")
    assert "逐步计算 it 这一行：第 2 层，第 3 个头" in zh and "与模型自己的 float32 结果相比" in zh
    d = worked.to_dict()
    assert d["meta"]["layer"] == 2 and d["meta"]["head"] == 3 and d["meta"]["query_token"] == "it"


def test_query_by_position_and_ambiguous_token(model):
    by_pos = explain(text=TEXT, model=model, layer=0, head=0, position=5)
    by_tok = explain(text=TEXT, model=model, layer=0, head=0, token="the")  # "the" at 1 and 5: the first
    assert by_pos.meta["query_position"] == 5 and by_tok.meta["query_position"] == 1
    assert "the occurs at positions 1, 5; using the first, position 1" in by_tok.render("markdown")


@pytest.mark.parametrize("kw, msg", [
    (dict(token="dog"), "token 'dog' is not in the text; the tokens are 0:[CLS] 1:the 2:cat"),
    (dict(token="it", layer=6), "layer 6 is out of range: the model has 6 layers (0..5)"),
    (dict(token="it", head=12), "head 12 is out of range: the model has 12 heads (0..11)"),
    (dict(position=13), "position 13 is out of range: the text has 13 tokens (positions 0..12)"),
    (dict(), "choose the query token"),
    (dict(token="cat", position=1), "token 'cat' is not at position 1 (that is 'the')"),
])
def test_errors_name_the_problem(model, kw, msg):
    with pytest.raises(InputError, match=re.escape(msg)):
        explain(text=TEXT, model=model, **kw)


def test_unknown_character_says_it_became_unk(model):
    with pytest.raises(InputError, match=re.escape("'喜' is in the text, but the model's vocabulary does not have it")):
        explain(text="我喜欢人工智能", model=model, token="喜")


def test_trace_check_of_q_is_the_rows_query(model):
    """"largest difference … in q" is of the query this row uses (as the whole path's step table and a
    decoder row say), not of every token's query: against transformers' float64 query of token 8."""
    import torch
    import transformers
    transformers.logging.set_verbosity_error()
    hf = transformers.BertModel.from_pretrained(str(attnscope.models.default_model_path()),
                                                attn_implementation="eager").eval().double()
    b = model.encode(TEXT)
    with torch.no_grad():
        x = hf(input_ids=b.input_ids, attention_mask=b.attention_mask, token_type_ids=b.token_type_ids,
               output_hidden_states=True).hidden_states[0][0]  # (13, 384): layer 0's input
        q64 = hf.encoder.layer[0].attention.self.query(x)[:, 3 * 32:4 * 32].numpy()  # (13, 32): head 3
    q32 = model.trace(TEXT, names=["layers.0.attn.q[3]"])["layers.0.attn.q[3]"][0].double().numpy()  # (13, 32)
    row = float(np.abs(q32[8] - q64[8]).max())
    assert float(np.abs(q32 - q64).max()) > 1.2 * row  # every token's: larger here, so the two are told apart
    w = explain(text=TEXT, model=model, layer=0, head=3, token="it")
    assert w.meta["trace_max_abs_diff"]["q"] == pytest.approx(row, rel=1e-6)
    assert f"largest difference {row:.1e} in q," in w.render("markdown")


def test_a_long_texts_tokens_are_listed_up_to_20(model):
    """Every error naming a text's tokens listed all of them: 2,800 characters for 381 tokens. The
    first 20 now, then how many more (i18n.listing), in English and Chinese."""
    from attnscope.i18n import error_message
    text = " ".join(f"w{i}" for i in range(150))  # 381 WordPiece tokens with [CLS] and [SEP]
    for kw in (dict(token="dog"), dict(position=5000), dict()):
        with pytest.raises(InputError) as e:
            explain(text=text, model=model, **kw)
        said = str(e.value)
        assert said.endswith(" 18:##8 19:w … and 361 more") and "20:" not in said and len(said) < 250, said
        assert error_message(e.value, "zh").endswith(" 19:w … 另有 361 个")
    with pytest.raises(InputError, match=re.escape("the tokens are 0:[CLS] 1:the 2:cat 3:sat")) as e:
        explain(text=TEXT, model=model, token="dog")  # 13 tokens: all of them
    assert str(e.value).endswith("12:[SEP]")
