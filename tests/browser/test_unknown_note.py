"""The viewer's note on unknown tokens, run in Chromium on the page's own scripts.

multilingual-e5-small shows <unk> for what its vocabulary lacks (a rare emoji, 𠀀); the note then
told its reader to try multilingual-e5-small. Its own page says the first sentence only; MiniLM's
page still names e5."""

from __future__ import annotations

import json
from pathlib import Path

from attnscope import viewer
from attnscope.i18n import TABLES

NOTES = """(strings) => {
  const A = window.attnscope;
  A.strings = strings;
  const out = [];
  for (const lang of ["en", "zh"]) {
    A.lang = lang;
    out.push(A.unknownNote(["<s>", "▁", "<unk>", "好", "</s>"], "multilingual-e5-small"),
             A.unknownNote(["[CLS]", "我", "[UNK]", "[UNK]", "[SEP]"], "all-MiniLM-L6-v2"));
  }
  return JSON.stringify(out);
}"""


def test_the_unknown_token_note_names_another_model_only_on_another_models_page(page):
    assets = Path(viewer.__file__).parent / "assets"
    page.set_content("<!doctype html><html><body></body></html>")
    for name in ("viewer_core.js", "viewer.js"):
        page.add_script_tag(content=(assets / name).read_text(encoding="utf-8"))
    e5_en, minilm_en, e5_zh, minilm_zh = json.loads(page.evaluate(NOTES, TABLES["viewer"]))
    assert e5_en.startswith("1 of the 3 tokens of this text is <unk>: this model's vocabulary does not know")
    assert "multilingual-e5-small" not in e5_en and "multilingual-e5-small" not in e5_zh
    assert e5_zh.startswith("这段文本的 3 个 token 中有 1 个是 <unk>")
    assert minilm_en.startswith("2 of the 3 tokens of this text are [UNK]") and "--model multilingual-e5-small" in minilm_en
    assert "--model multilingual-e5-small" in minilm_zh


def test_the_note_counts_no_special_token_of_the_context_view(page):
    """The page's own list of special tokens is the context view's (Gemma's <bos> was counted as one
    of the text's tokens: '1 of the 3 tokens' for a text of two)."""
    from attnscope.viewer.context import SPECIAL
    assets = Path(viewer.__file__).parent / "assets"
    page.set_content("<!doctype html><html><body></body></html>")
    for name in ("viewer_core.js", "viewer.js"):
        page.add_script_tag(content=(assets / name).read_text(encoding="utf-8"))
    assert set(page.evaluate("() => Object.keys(window.attnscope.SPECIAL)")) == SPECIAL
    page.evaluate("(s) => { window.attnscope.strings = s; window.attnscope.lang = 'en'; }", TABLES["viewer"])
    note = page.evaluate("() => window.attnscope.unknownNote(['<bos>', 'a', '<unk>'], 'gemma-3-270m')")
    assert note.startswith("1 of the 2 tokens of this text is <unk>"), note
