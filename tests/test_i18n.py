"""One rule for every string table (attnscope.i18n and the worked calculations' labels): each key
in every language, with the same placeholders; and the CLI's messages read back into Chinese."""

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
