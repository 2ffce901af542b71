"""``attnscope serve --lang zh``: the served page's own words start in Chinese (the page has the
same EN / 中文 switch as the exported file); an unknown language is one sentence before the app starts."""

import pytest
from fastapi.testclient import TestClient

from attnscope.cli import build_parser
from attnscope.errors import InputError
from attnscope.server import create_app
from tests.viewer.fixtures import minilm  # noqa: F401


def test_the_served_page_starts_in_the_language_asked(minilm):  # noqa: F811
    zh = TestClient(create_app(minilm, max_chars=200, lang="zh")).get("/").text
    en = TestClient(create_app(minilm, max_chars=200)).get("/").text
    assert '<html lang="zh-CN">' in zh and '"lang":"zh"' in zh
    assert '<html lang="en">' in en and '"lang":"en"' in en
    assert "window.attnscope.strings = " in zh and "注意力头视图" in zh  # the table travels in both


def test_an_unknown_language_is_refused_before_the_model_loads():
    with pytest.raises(InputError, match="'fr' is not one of en, zh"):
        create_app(model_path="/nonexistent", lang="fr")


def test_serve_takes_lang():
    assert build_parser().parse_args(["serve", "--lang", "zh"]).lang == "zh"
