"""The viewer's own words: every key the page's script asks for with tr("…") is in
attnscope.i18n's viewer table (catalogue viewer*.toml) in both languages, and the page carries that table and its language."""

from __future__ import annotations

import json
import re
from importlib import resources

import pytest

from attnscope.cli import build_parser
from attnscope.errors import InputError
from attnscope.i18n import LANGS, TABLES, missing
from attnscope.viewer.html import data_page, script, ui_text

TR = re.compile(r"""\btr\(\s*["']([^"']+)["']""")
#: Keys written as literals and passed to tr() later (the tabs' list).
LITERAL = re.compile(r"""["'](viewer\.\w+)["']""")


def keys_used() -> set[str]:
    assets = resources.files("attnscope.viewer").joinpath("assets")
    return {k for f in assets.iterdir() if f.name.endswith(".js")
            for k in TR.findall(f.read_text(encoding="utf-8")) + LITERAL.findall(f.read_text(encoding="utf-8"))}


def test_every_key_the_script_uses_is_in_both_languages():
    used = keys_used()
    assert len(used) >= 20, sorted(used)  # the grep finds the calls (a broken pattern would pass vacuously)
    for lang in LANGS:
        assert sorted(used - set(TABLES["viewer"][lang])) == [], lang
    assert missing(TABLES["viewer"]) == []
    assert sorted(set(TABLES["viewer"]["en"]) - used) == []  # no word the page never shows


def test_the_grep_catches_a_key_the_table_lacks():
    assert TR.findall('a = tr("viewer.nope", {n: 1}) + tr(\'viewer.x\')') == ["viewer.nope", "viewer.x"]
    assert LITERAL.findall('[["head", "viewer.tab_head"]]') == ["viewer.tab_head"]


def test_the_page_carries_the_table_and_its_language():
    js = script()
    m = re.search(r"window\.attnscope\.strings = (\{.*?\});\n", js)
    assert m and json.loads(m.group(1)) == TABLES["viewer"]
    page = data_page("t", js, {"format": "attnscope.view"}, "", lang="zh")
    assert '<html lang="zh-CN">' in page and 'lang: "zh"' in page
    assert "视图" in ui_text() and "Head view" in ui_text()
    with pytest.raises(InputError, match="'fr' is not one of en, zh"):
        data_page("t", js, {}, "", lang="fr")


def test_view_takes_lang():
    parser = build_parser()
    assert parser.parse_args(["view", "x", "--lang", "zh"]).lang == "zh"
    assert parser.parse_args(["view", "x"]).lang == "en"
