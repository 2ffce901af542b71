"""One rule for every string table (attnscope.i18n and the worked calculations' labels): each key
in every language, with the same placeholders; and the CLI's messages read back into Chinese."""

import re

import pytest

from attnscope import i18n
from attnscope.errors import InputError
from attnscope.explain import i18n as explain_i18n
from attnscope.explain.render.base import _PLACEHOLDER


@pytest.mark.parametrize("area", sorted(i18n.TABLES))
def test_every_key_has_every_language_with_the_same_placeholders(area):
    assert i18n.missing(i18n.TABLES[area]) == []
    assert set(i18n.TABLES[area]) == set(i18n.LANGS)
    assert all(key.startswith(area + ".") for key in i18n.TABLES[area]["en"])


def test_the_worked_calculations_labels_follow_the_same_rule():
    assert i18n.missing(explain_i18n.LABELS, lambda s: set(_PLACEHOLDER.findall(s))) == []


def test_the_rule_catches_a_missing_translation_and_a_lost_placeholder():
    table = {"en": {"a.x": "{n} tokens", "a.y": "layer {layer}"}, "zh": {"a.x": "{m} 个词元"}}
    assert i18n.missing(table) == ["a.x: zh placeholders ['m'] differ from en ['n']", "a.y: no zh string"]


def test_text_fills_placeholders_and_refuses_unknown_languages():
    assert i18n.text("plot.layer", "zh", layer=3) == "第 3 层"
    assert i18n.text("plot.layer", "en", layer=3) == "layer 3"
    with pytest.raises(InputError, match="'fr' is not one of en, zh"):
        i18n.text("plot.layer", "fr", layer=3)


@pytest.mark.parametrize("key", sorted(i18n.TABLES["cli"]["en"]))
def test_each_cli_message_reads_back_into_chinese(key):
    en, zh = i18n.TABLES["cli"]["en"][key], i18n.TABLES["cli"]["zh"][key]
    values = {name: f"<{name}-{i}>" for i, name in enumerate(sorted(i18n.fields(en)))}
    assert i18n.translate(en.format(**values), "zh") == zh.format(**values)


def test_a_message_not_in_the_table_stays_untranslated():
    assert i18n.translate("something nobody spelled", "zh") is None
    assert i18n.translate("something nobody spelled", "en") == "something nobody spelled"


_CJK = "\u3400-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef"  # ideographs, CJK punctuation, full-width forms
_FIELD = re.compile(r"\{(\w+)(?::[^{}]*)?\}")
#: Placeholders a Chinese string fills with Chinese words: the calculation steps' names (check's
#: "它来自你的{sources}", "出错在{step}"); every other placeholder takes a number, a name or code.
_WORD_FIELDS = {"sources": "注意力权重（weights）", "step": "注意力权重（weights）"}


def cjk_spaces(template: str) -> list:
    """The places where ``template``, its word placeholders filled, has an ASCII space between two
    CJK characters (Chinese runs without spaces; a space belongs only next to Latin text and numbers)."""
    filled = _FIELD.sub(lambda m: _WORD_FIELDS.get(m[1], m[0]), template)
    return re.findall(f"[{_CJK}] +[{_CJK}]", filled)


def _zh_tables():
    yield from ((area, i18n.TABLES[area]["zh"]) for area in sorted(i18n.TABLES))
    yield "explain", explain_i18n.LABELS["zh"]


@pytest.mark.parametrize("area,table", list(_zh_tables()), ids=lambda x: x if isinstance(x, str) else "")
def test_no_space_between_chinese_characters(area, table):
    assert {key: cjk_spaces(s) for key, s in table.items() if cjk_spaces(s)} == {}


def test_the_space_rule_sees_a_filled_placeholder():
    assert cjk_spaces("它来自你的 {sources}（用你自己的数）") == ["的 注"]
    assert cjk_spaces("例如 我喜欢") == ["如 我"]
    assert cjk_spaces("第 {row} 行，共 {n} 个，{flag} 必须是") == []
