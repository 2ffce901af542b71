"""The encoder–decoder viewer in Chinese and with readable pieces (#25 items 3–4): T5's ``▁the``
and BART's ``Ġthe`` both show as `` the`` (the pieces themselves stay in the page data, and the
page's tooltips name them), ``view --lang zh`` reaches the T5/BART page, ``serve --lang zh`` its
served page (and ``viewer.to_html(…, lang=)`` the one-text page), and the page's font subset draws
the Chinese words of its switch; the guard list of the Chinese tests is built from the strings
table and catches English."""

from __future__ import annotations

import re

import pytest

from attnscope.cli import main
from attnscope.fonts import font_face_css, subset_chars
from attnscope.i18n import TABLES
from attnscope.pieces import metaspace_labels, word_labels
from attnscope.viewer import seq2seq as S
from attnscope.viewer.seq2seq_page import render
from tests.models.seq2seq.fixtures import seq2seq, seq2seq_dirs  # noqa: F401
from tests.viewer.english_guard import english_left, guard_words, words

SOURCE, TARGET = "translate English to German: The cat sat on the mat.", "Die Katze sass auf der Matte."


@pytest.mark.parametrize("name, mark", [("t5", "▁"), ("bart", "Ġ")])
def test_tokens_read_as_text_and_the_pieces_stay(seq2seq, name, mark):  # noqa: F811
    model = seq2seq[name]
    entry = S.seq2seq_view_data(model, SOURCE, TARGET)["texts"][0]
    tr = S.trace_pair(model, SOURCE, TARGET)
    raw_src, raw_tgt = list(tr.text_tokens(0)), list(tr.target_tokens[0])
    assert entry["source_pieces"] == raw_src and entry["target_pieces"] == raw_tgt  # what the tokenizer made
    assert any(mark in t for t in raw_src)  # the test's premise: the pieces carry the space mark
    for shown, raw in ((entry["source_tokens"], raw_src), (entry["target_tokens"], raw_tgt)):
        assert len(shown) == len(raw) and not any(mark in t for t in shown)
    specials = model.tokenizer.special_tokens() | {"<s>", "</s>", "<pad>"}  # BART's vocab.json folder names none
    # the labels spell the text: the pieces of each word, a space where the word mark was; a character
    # the tiny vocabulary lacks (T5's G and :) is the piece <unk>, as transformers shows it
    unk = model.tokenizer.token_to_id("<unk>")

    def known(text: str) -> str:
        return "".join(c for c in text if c.isspace() or unk is None or unk not in model.encode(c).input_ids[0].tolist())

    text = "".join(t for t in entry["source_tokens"] if t not in specials)
    assert " ".join(text.split()) == " ".join(known(SOURCE).split())
    text = "".join(t for t in entry["target_tokens"] if t not in specials)
    assert " ".join(text.split()) == " ".join(known(TARGET).split())


def test_metaspace_labels_by_hand():
    assert metaspace_labels(["▁the", "▁", "cat", "</s>"], {"</s>"}) == [" the", " ", "cat", "</s>"]
    assert word_labels(["▁the", "##ing"]) == ["▁the", "##ing"]  # no tokenizer: as they are


def test_view_lang_reaches_the_encoder_decoder_page(seq2seq_dirs, tmp_path):  # noqa: F811
    for lang, html_lang in (("zh", "zh-CN"), ("en", "en")):
        out = tmp_path / f"t5-{lang}.html"
        assert main(["view", SOURCE, "--target", TARGET, "--model", str(seq2seq_dirs["t5"]), "--lang", lang,
                     "-o", str(out)]) == 0
        page = out.read_text(encoding="utf-8")
        assert f'<html lang="{html_lang}">' in page and f'lang: "{lang}"' in page and "Seq2SeqViewer" in page


def test_served_encoder_decoder_page_starts_in_chinese(seq2seq):  # noqa: F811
    from fastapi.testclient import TestClient

    from attnscope.server import create_app
    page = TestClient(create_app(seq2seq["t5"], lang="zh")).get("/").text
    assert '<html lang="zh-CN">' in page and '"lang":"zh"' in page and '"seq2seq":true' in page


def test_the_page_font_draws_the_chinese_words(seq2seq):  # noqa: F811
    page = render(S.seq2seq_view_data(seq2seq["t5"], SOURCE, TARGET), lang="zh")
    zh = "".join(TABLES["viewer"]["zh"][k] for k in ("viewer.s2s_encoder", "viewer.s2s_cross", "viewer.tab_step"))
    m = re.search(r"unicode-range:([^;]+);", page)
    assert m, "no embedded font"
    want = {f"U+{ord(c):X}" for c in subset_chars(zh)}
    assert want and want <= set(m.group(1).split(","))
    assert font_face_css("Encoder") == ""  # the premise: Latin text alone embeds nothing


def test_the_guard_list_comes_from_the_table_and_catches_english():
    g = guard_words()
    assert {"layer", "head", "query", "weight", "encoder", "decoder", "prompt", "rotation", "window"} <= g
    assert not {"softmax", "exp", "png", "svg", "gemma", "query_pre_attn_scalar"} & g  # kept in Chinese too
    en, zh = TABLES["viewer"]["en"], TABLES["viewer"]["zh"]
    assert english_left(en["viewer.gen_caption"]) and english_left(en["viewer.s2s_what_cross"])
    for key, s in zh.items():
        assert english_left(s) == [], key
    assert english_left("查询 2：layer 0", data="") == ["layer"]
    assert english_left("查询 2：layer 0", data="layers.0.out layer") == []  # words of the data are the data's
    assert "view" in words("view") and "view" not in words("attnscope view TEXT --model x")  # commands are no UI words



def test_to_html_takes_lang(tmp_path):
    import attnscope
    from attnscope.testing import tiny
    from attnscope.viewer import to_html
    from attnscope.viewer.run import trace_texts

    model = attnscope.load(tiny.BUILDERS["bert-chinese"](tmp_path / "bert"))
    for lang, html_lang in (("zh", "zh-CN"), ("en", "en")):
        page = to_html(trace_texts(model, ["我喜欢人工智能"]), lang=lang)
        assert f'<html lang="{html_lang}">' in page and f'lang: "{lang}"' in page
