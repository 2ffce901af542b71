"""``attnscope serve --lang zh``: the served page's own words start in Chinese (the page has the
same EN / 中文 switch as the exported file); an unknown language is one sentence before the app starts."""

import json

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


@pytest.fixture(scope="module")
def clients(minilm):  # noqa: F811
    return {lang: TestClient(create_app(minilm, max_chars=200, lang=lang)) for lang in ("en", "zh")}


LATIN1 = '{"text": "Café"}'.encode("latin-1")  # é is the single byte 0xe9, at position 13
#: (path, body, content type, status, the English answer, the Chinese one): every kind of answer
#: the API refuses a request with, from pydantic and FastAPI's checks, attnscope's own, and Starlette's
REFUSED = [
    ("/api/view", b'{"text": "hi"', "application/json", 400,
     "request body is not valid JSON: Expecting ',' delimiter at character 13",
     "请求体不是有效的 JSON：第 13 个字符处应为分隔符 ','"),
    ("/api/view", b"{text: 1}", "application/json", 400,
     "request body is not valid JSON: Expecting property name enclosed in double quotes at character 1",
     "请求体不是有效的 JSON：第 1 个字符处应为用双引号括起的字段名"),
    ("/api/view", b'{"text": "hi", "colour": "red"}', "application/json", 422, "unknown field 'colour'", "未知字段 'colour'"),
    ("/api/view", b"{}", "application/json", 422, "missing field 'text'", "缺少字段 'text'"),
    ("/api/view", b'{"colour": 1}', "application/json", 422, "missing field 'text'; unknown field 'colour'",
     "缺少字段 'text'；未知字段 'colour'"),
    ("/api/view", b"", "application/json", 422,
     'request body is empty; send a JSON object such as {"text": "The bank of the river."}',
     '请求体是空的；请发送一个 JSON 对象，例如 {"text": "The bank of the river."}'),
    ("/api/held/rows", b"", "application/json", 422,
     "request body is empty; send a JSON object with the fields /docs lists for this endpoint",
     "请求体是空的；请发送一个 JSON 对象，字段见 /docs 中这个接口的说明"),
    ("/api/view", b"[1, 2]", "application/json", 422, "request body must be a JSON object", "请求体必须是一个 JSON 对象"),
    ("/api/view", b'{"text": 5}', "application/json", 422, "text must be a string, got 5", "text 必须是字符串，收到的是 5"),
    ("/api/view", b'{"text": "hi", "decimals": 9}', "application/json", 422, "decimals must be at most 8, got 9",
     "decimals 最多是 8，收到的是 9"),
    ("/api/view", b'{"text": "a\\ud800b"}', "application/json", 422,
     "text is not valid Unicode: a lone surrogate U+D800 at character 1",
     "文本不是有效的 Unicode：第 1 个字符是单独的代理项 U+D800"),
    ("/api/view", ('{"text": "' + "x" * 201 + '"}').encode(), "application/json", 422,
     "text has 201 characters; the limit is 200", "文本有 201 个字符；上限是 200"),
    ("/api/attention", b'{"text": "hi", "layer": 6}', "application/json", 422,
     "layer 6 is out of range: there are 6 layers (0..5)", "层 6 超出范围：层数是 6（0..5）"),
    ("/api/steps", b'{"text": "hi", "query": 3}', "application/json", 422,
     "query token 3 is out of range: there are 3 tokens (0..2)", "查询 token 3 超出范围：token数是 3（0..2）"),
    ("/api/held/rows", b'{"id": "x", "heads": [0], "q0": 0, "q1": 1}', "application/json", 410,
     "the server no longer holds this text (it keeps the most recent ones within its memory budget); show it again",
     "服务器已不再保存这段文本（它只在内存预算内保留最近的文本）；请重新显示它"),
    ("/api/view", LATIN1, "application/json", 400,
     "request body is not UTF-8 text (byte 0xe9 at position 13); send the JSON encoded as UTF-8",
     "请求体不是 UTF-8 文本（位置 13 处的字节 0xe9）；请用 UTF-8 编码发送 JSON"),
    ("/api/view", b"[" * 100_000, "application/json", 400,
     'request body nests arrays or objects too deeply to read; send a flat JSON object such as '
     '{"text": "The bank of the river."}',
     '请求体中数组或对象嵌套太深，无法读取；请发送一个扁平的 JSON 对象，例如 {"text": "The bank of the river."}'),
    ("/api/view", b'{"text": "hi"}', "text/plain", 415,
     "request content type must be application/json, got 'text/plain'; send the JSON object with the header "
     "content-type: application/json",
     "请求的内容类型必须是 application/json，收到的是 'text/plain'；请带上请求头 content-type: application/json 发送 JSON 对象"),
    ("/api/view", b'{"text": "hi"}', None, 415,
     "request has no content type; send the JSON object with the header content-type: application/json",
     "请求没有内容类型；请带上请求头 content-type: application/json 发送 JSON 对象"),
    ("/api/nope", b"{}", "application/json", 404, "no page or endpoint at '/api/nope'; the API's endpoints are listed at /docs",
     "'/api/nope' 没有页面或接口；API 的接口列在 /docs"),
    ("/api/model", b"{}", "application/json", 405, "POST is not allowed for '/api/model'; use GET",
     "'/api/model' 不接受 POST；请用 GET"),
]


@pytest.mark.parametrize("path, body, ctype, status, en, zh", REFUSED,
                         ids=[f"{c[3]}-{c[0]}-{i}" for i, c in enumerate(REFUSED)])
def test_every_refusal_is_in_the_language_serve_was_started_in(clients, path, body, ctype, status, en, zh):
    """serve --lang zh answered every error in English: pydantic's checks (unknown and missing
    fields, types), FastAPI's (a body that is not JSON) and attnscope's own errors (str(exc)) alike."""
    for lang, want in (("en", en), ("zh", zh)):
        r = clients[lang].post(path, content=body, headers={"content-type": ctype} if ctype else {})
        assert (r.status_code, r.json()["detail"]) == (status, want), lang


def test_busy_and_body_limits_are_in_the_servers_language(minilm):  # noqa: F811
    """The 503 of a full queue and the middleware's 413 and 408 were English words in code."""
    import asyncio

    from attnscope.server_limits import Limits
    from tests.server.test_limits import run_async  # on a thread of its own, as test_limits' own

    busy = TestClient(create_app(minilm, max_waiting=-1, lang="zh")).post("/api/attention", json={"text": "hi"})
    assert (busy.status_code, busy.json()["detail"]) == (503, "服务器正忙（有 0 个请求正在运行或等待模型）；请稍后再试")
    big = TestClient(create_app(minilm, max_body=10, lang="zh")).post("/api/view", content=b'{"text": "The bank."}',
                                                                      headers={"content-type": "application/json"})
    assert (big.status_code, big.json()["detail"]) == (413, "请求体有 21 字节；上限是 10 字节（最长的有效文本也用不了这么多）")
    assert "请求体".encode() in big.content  # UTF-8 as the app's own answers, not \\u8bf7 escapes that curl shows as is

    sent = []

    async def stall():
        await asyncio.sleep(1)

    async def send(msg):
        sent.append(msg)
    run_async(Limits(None, body_timeout=0.01, lang="zh")({"type": "http", "path": "/api/view", "headers": []}, stall, send))
    assert sent[0]["status"] == 408
    assert json.loads(sent[1]["body"])["detail"] == "请求体没有在 0.01 秒内完整到达（收到了 0 字节）；请一次发送完"


BROKEN = ['{"text": "hi"', "not json", '{"text" "hi"}', "{text: 1}", '{"text": "hi', '{"text": "a\x01"}', '{"text": "\\x"}',
          '{"text": "\\u12"}', "{} x", '{"text": "hi",}', "[1,]"]


@pytest.mark.parametrize("body", BROKEN)
def test_json_readers_reasons_are_all_in_the_catalogue(body):
    """A body that is not JSON is told why in --lang: each reason Python's json reader gives here
    (the trailing commas' differ between versions) has a catalogue key, so none stays English."""
    from attnscope.server_schema import JSON_WHY

    with pytest.raises(json.JSONDecodeError) as e:
        json.loads(body)
    assert e.value.msg in JSON_WHY


@pytest.mark.parametrize("why, zh", [("Illegal trailing comma before end of object", "对象结束前有多余的逗号"),
                                     ("Illegal trailing comma before end of array", "数组结束前有多余的逗号")])
def test_newer_pythons_trailing_comma_is_said_in_chinese(why, zh):
    """Python 3.13+ names a trailing comma itself; FastAPI passes that reason on as ctx.error."""
    from fastapi.exceptions import RequestValidationError

    from attnscope.server_schema import validation_message

    exc = RequestValidationError([{"type": "json_invalid", "loc": ("body", 14), "msg": "JSON decode error", "input": {},
                                   "ctx": {"error": why}}])
    assert validation_message(exc, "application/json", lang="zh") == (400, f"请求体不是有效的 JSON：第 14 个字符处{zh}")
    assert validation_message(exc, "application/json") == (400, f"request body is not valid JSON: {why} at character 14")
