"""The JSON API: right numbers, clear 4xx messages for bad input, and it keeps serving."""

import math

import numpy as np
import pytest
from fastapi.testclient import TestClient

from attnscope.i18n import text
from attnscope.server import create_app
from attnscope.viewer.context import context_comparison
from attnscope.viewer.run import trace_each


@pytest.fixture(scope="module")
def client(minilm):
    return TestClient(create_app(minilm, max_chars=200))


def test_model_info(client):
    r = client.get("/api/model")
    assert r.status_code == 200
    assert r.json() | {"version": None} == {"name": "sentence-transformers/all-MiniLM-L6-v2", "family": "bert",
                                            "n_layers": 6, "n_heads": 12, "d_model": 384, "d_head": 32,
                                            "max_tokens": 512, "max_chars": 200, "version": None}


def test_index_is_the_viewer_with_a_text_box(client):
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "attnscope.mount" in r.text and '"server":{"endpoint":"api/view"' in r.text and '"maxChars":200' in r.text


def test_steps_are_the_traced_models_numbers(client, minilm):
    r = client.post("/api/steps", json={"text": "The bank of the river.", "layer": 2, "head": 7, "query": 2})
    assert r.status_code == 200
    s = r.json()
    tr = minilm.trace("The bank of the river.", names=["layers.2.attn.*"])  # layers 0, 1 on the fast path, as the API
    q = tr["layers.2.attn.q"][0, 7].double()  # (n, d)
    k = tr["layers.2.attn.k"][0, 7].double()
    v = tr["layers.2.attn.v"][0, 7].double()
    raw = (k @ q[2]).numpy()
    np.testing.assert_allclose(s["raw"], raw, rtol=1e-12)
    np.testing.assert_allclose(s["scaled"], raw / math.sqrt(32), rtol=1e-12)
    np.testing.assert_allclose(s["weights"], tr["layers.2.attn.weights"][0, 7, 2].double().numpy(), atol=2e-7)
    np.testing.assert_allclose(s["out"], tr["layers.2.attn.z"][0, 7, 2].double().numpy(), atol=2e-6)
    np.testing.assert_allclose(s["out"], np.asarray(s["weights"]) @ v.numpy(), rtol=1e-12, atol=1e-14)
    assert s["tokens"] == tr.tokens[0] and s["d_k"] == 32 and s["sum"] == pytest.approx(sum(s["exp"]))


def test_attention_matrix(client, minilm):
    r = client.post("/api/attention", json={"text": "我喜欢人工智能", "layer": 5, "head": 0})
    assert r.status_code == 200
    tr = minilm.trace("我喜欢人工智能", names=["layers.5.attn.weights"])
    np.testing.assert_allclose(r.json()["weights"], tr["layers.5.attn.weights"][0, 0].double().numpy(), atol=2e-7)


def test_view_data_is_what_the_file_carries(client, minilm):
    r = client.post("/api/view", json={"text": "The bank of the river.", "compare": "Money in the bank.", "token": "bank"})
    assert r.status_code == 200
    d = r.json()
    assert d["format"] == "attnscope.view" and d["compare"]["token"] == "bank" and d["font_css"] == ""
    ref = context_comparison(*trace_each(minilm, ["The bank of the river.", "Money in the bank."]), token="bank")
    assert d["compare"]["across"] == pytest.approx(ref["across"], abs=1e-12)
    r = client.post("/api/view", json={"text": "我喜欢"})
    assert "attnscope CJK" in r.json()["font_css"]


BAD = [
    ("/api/view", b'{"text": "hi"', 400, "request body is not valid JSON"),
    ("/api/view", b"not json at all", 400, "request body is not valid JSON"),
    ("/api/view", {"text": ""}, 422, "text is empty"),
    ("/api/view", {"text": "   \n "}, 422, "text is empty"),
    ("/api/view", {"text": "x" * 201}, 422, "text has 201 characters; the limit is 200"),
    ("/api/view", {"text": "hi", "compare": ""}, 422, "compare is empty"),
    ("/api/view", {"text": "a b", "compare": "c d"}, 422, "share no token"),
    ("/api/view", {"text": "a b", "token": "a"}, 422, "give the second text too"),  # was dropped silently
    ("/api/view", {"text": "hi", "colour": "red"}, 422, "unknown field 'colour'"),
    ("/api/view", {}, 422, "missing field 'text'"),
    ("/api/view", [1, 2], 422, "request body must be a JSON object"),
    ("/api/view", {"text": 5}, 422, "text must be a string, got 5"),
    ("/api/attention", {"text": "hi", "layer": 6, "head": 0}, 422, "layer 6 is out of range: there are 6 layers (0..5)"),
    ("/api/attention", {"text": "hi", "layer": 0, "head": 12}, 422, "head 12 is out of range: there are 12 heads (0..11)"),
    ("/api/steps", {"text": "hi", "layer": 0, "head": -1, "query": 0}, 422, "head -1 is out of range"),
    ("/api/steps", {"text": "hi", "layer": 0, "head": 0, "query": 3}, 422,
     "query token 3 is out of range: there are 3 tokens (0..2)"),
    ("/api/steps", {"text": "hi", "layer": "two"}, 422, 'layer must be an integer, got "two"'),
    # strict types: nothing is coerced
    ("/api/attention", {"text": "hi", "head": True}, 422, "head must be an integer, got true"),
    ("/api/attention", {"text": "hi", "layer": 1.0}, 422, "layer must be an integer, got 1.0"),
    ("/api/steps", {"text": "hi", "query": "1"}, 422, 'query must be an integer, got "1"'),
    ("/api/view", {"text": "hi", "decimals": "4"}, 422, 'decimals must be an integer, got "4"'),
    # a range or a list: attnscope's sentence, not pydantic's ("decimals: Input should be less than or equal to 8")
    ("/api/view", {"text": "hi", "decimals": 9}, 422, "decimals must be at most 8, got 9"),
    ("/api/view", {"text": "hi", "decimals": -1}, 422, "decimals must be at least 0, got -1"),
    ("/api/held/rows", {"id": "x", "heads": "1", "q0": 0, "q1": 1}, 422, 'heads must be a list of integers, got "1"'),
    ("/api/held/lines", {"id": "x", "heads": 3}, 422, "heads must be a list of integers, got 3"),
    ("/api/view", {"text": ["hi"]}, 422, 'text must be a string, got ["hi"]'),
    ("/api/view", {"text": "hi", "token": 3}, 422, "token must be a string, got 3"),
    ("/api/view", {"text": "hi", "attribution": 1}, 422, "attribution must be true or false, got 1"),
    # empty and null bodies
    ("/api/view", b"", 422, "request body is empty"),
    ("/api/steps", b"", 422, "request body is empty"),
    ("/api/view", b"null", 422, "request body must be a JSON object"),
    ("/api/view", b'"text"', 422, "request body must be a JSON object"),
    # text that is not valid Unicode: a lone surrogate escape, in every text field and endpoint
    ("/api/view", b'{"text": "a\\ud800b"}', 422, "text is not valid Unicode: a lone surrogate U+D800 at character 1"),
    ("/api/attention", b'{"text": "a\\ud800b"}', 422, "text is not valid Unicode: a lone surrogate U+D800"),
    ("/api/steps", b'{"text": "a\\udc00b", "query": 1}', 422, "text is not valid Unicode: a lone surrogate U+DC00"),
    ("/api/view", b'{"text": "bank", "compare": "\\udfff bank"}', 422, "compare is not valid Unicode"),
    ("/api/view", b'{"text": "bank", "compare": "a bank", "token": "\\ud83d"}', 422, "token is not valid Unicode"),
]


@pytest.mark.parametrize("path, body, status, msg", BAD)
def test_bad_requests_get_a_clear_4xx_and_the_server_goes_on(client, path, body, status, msg):
    kw = {"content": body, "headers": {"content-type": "application/json"}} if isinstance(body, bytes) else {"json": body}
    r = client.post(path, **kw)
    assert r.status_code == status
    assert msg in r.json()["detail"]
    assert client.post("/api/attention", json={"text": "ok", "layer": 0, "head": 0}).status_code == 200


@pytest.mark.parametrize("path, body, key, field, value, zh", [
    ("/api/view", {"text": 5}, "str", "text", "5", "text 必须是字符串，收到的是 5"),
    ("/api/attention", {"text": "hi", "layer": "two"}, "int", "layer", '"two"', 'layer 必须是整数，收到的是 "two"'),
    ("/api/view", {"text": "hi", "attribution": 1}, "bool", "attribution", "1",
     "attribution 必须是 true 或 false，收到的是 1"),
])
def test_type_sentences_are_catalogue_keys(client, path, body, key, field, value, zh):
    """"must be an integer / a string / true or false" were English words in code, the one kind of
    server sentence without a zh string; each is now an errors key, the answer its English string."""
    key = f"errors.core_server_{key}"
    assert client.post(path, json=body).json()["detail"] == text(key, field=field, value=value)
    assert text(key, "zh", field=field, value=value) == zh


def test_too_many_tokens_for_the_model(minilm):
    c = TestClient(create_app(minilm, max_chars=10_000))
    r = c.post("/api/attention", json={"text": "word " * 600})
    assert r.status_code == 422 and "512" in r.json()["detail"]


def test_a_compare_text_too_long_is_named_compare(minilm, tmp_path, capsys):
    """A second text past the model's 512 positions said "the text has 602 tokens", as if the first
    one were too long; now "compare has 602 tokens" (served, shipped and held, and the CLI), and a
    first text too long still says "the text"."""
    from attnscope.cli import main

    long, n = "word " * 600, 602  # [CLS] + 600 + [SEP]
    want = f"compare has {n} tokens, longer than the model's limit of 512 positions; shorten it"
    for ship in (None, 1):  # the page ships q, k, v, or the server holds the texts
        c = TestClient(create_app(minilm, max_chars=10_000, ship_up_to=ship))
        r = c.post("/api/view", json={"text": "The bank.", "compare": long})
        assert r.status_code == 422 and r.json()["detail"] == want
        r = c.post("/api/view", json={"text": long, "compare": "The bank."})
        assert r.status_code == 422 and r.json()["detail"].startswith(f"the text has {n} tokens")
    assert main(["view", "The bank.", "--compare", long, "-o", str(tmp_path / "x.html")]) == 2
    assert want in capsys.readouterr().err


def test_openapi_documents_the_api(client):
    spec = client.get("/openapi.json").json()
    assert {"/api/model", "/api/view", "/api/attention", "/api/steps"} <= set(spec["paths"])
    assert spec["paths"]["/api/steps"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert "StepRequest" in spec["components"]["schemas"]
    assert client.get("/docs").status_code == 200
    assert client.get("/nope").status_code == 404


def test_the_model_is_loaded_once(monkeypatch, minilm):
    import attnscope.models
    calls = []
    monkeypatch.setattr(attnscope.models, "load", lambda path=None: calls.append(path) or minilm)
    c = TestClient(create_app(model_path=None))
    for _ in range(3):
        assert c.post("/api/attention", json={"text": "hello there"}).status_code == 200
    assert calls == [None]


def test_valid_surrogate_pairs_are_text(client, minilm):
    r = client.post("/api/attention", content=b'{"text": "caf\\u00e9 \\ud83d\\ude00 bank"}',
                    headers={"content-type": "application/json"})
    assert r.status_code == 200 and r.json()["tokens"] == minilm.trace("café 😀 bank").tokens[0]


def test_the_docs_are_served_from_packaged_files(client):
    """/docs and /redoc point at files this server serves itself, none at a CDN (Chromium renders
    them offline in tests/browser/test_docs_offline.py)."""
    import re
    font = client.get("/assets/attnscope-cjk.otf")  # the served page's own CJK words
    assert font.status_code == 200 and font.headers["content-type"] == "font/otf" and font.content[:4] == b"OTTO"
    assert client.get("/redoc").status_code == 404  # ReDoc's page loads a logo from the network
    for page in ("/docs",):
        html = client.get(page).text
        urls = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)""", html) + re.findall(r"url:\s*'([^']+)'", html)
        assert urls and not [u for u in urls if "//" in u], (page, urls)
        for u in urls:
            assert client.get(u).status_code == 200, u


@pytest.mark.parametrize("escape", ["\\udc80", "\\udcff", "\\udce9"])
def test_a_lone_low_surrogate_escape_is_named_as_one(client, escape):
    """A JSON body's "\\udc80" is an escape of a lone surrogate, not an undecodable byte (the body is
    valid UTF-8): the answer named "byte 0x80" and asked about the terminal's encoding."""
    body = ('{"text": "a' + escape + 'b"}').encode("ascii")
    r = client.post("/api/view", content=body, headers={"content-type": "application/json"})
    code = escape[2:].upper()
    assert r.status_code == 422
    assert r.json()["detail"] == f"text is not valid Unicode: a lone surrogate U+{code} at character 1"


def test_attention_of_an_alibi_model_adds_the_slope_term(tmp_path):
    """Tiny BLOOM (ALiBi, 6 heads): /api/attention's matrix is softmax(q·k/√d + slope_h · j) over the
    keys j ≤ i, written out here in NumPy with BLOOM's slopes for 6 heads, and the model's own
    weights. It left the slope term out (off by up to 0.49 on this text) while /api/steps had it."""
    import attnscope
    from attnscope.testing.tiny import tiny_bloom_6heads

    model = attnscope.load(tiny_bloom_6heads(tmp_path / "bloom"))
    text, layer = "The quick brown fox jumps over the lazy dog.", 1
    c = TestClient(create_app(model))
    tr = model.trace(text, names=[f"layers.{layer}.attn.{s}" for s in ("q", "k", "weights")])
    slopes = np.array([2.0 ** -2, 2.0 ** -4, 2.0 ** -6, 2.0 ** -8, 2.0 ** -1, 2.0 ** -3])  # BLOOM's rule, H = 6
    for head in (0, 4, 5):
        q, k = (tr[f"layers.{layer}.attn.{s}"][0, head].double().numpy() for s in ("q", "k"))
        n, d = k.shape
        i, j = np.arange(n)[:, None], np.arange(n)[None, :]
        s = np.where(j <= i, q @ k.T / np.sqrt(d) + slopes[head] * j, -np.inf)
        e = np.exp(s - s.max(-1, keepdims=True))
        r = c.post("/api/attention", json={"text": text, "layer": layer, "head": head})
        assert r.status_code == 200
        got = np.array(r.json()["weights"])
        np.testing.assert_allclose(got, e / e.sum(-1, keepdims=True), rtol=0, atol=1e-14)
        np.testing.assert_allclose(got, tr[f"layers.{layer}.attn.weights"][0, head].double().numpy(), atol=1e-6)
        st = c.post("/api/steps", json={"text": text, "layer": layer, "head": head, "query": 7}).json()
        want = [None if x == -np.inf else x for x in s[7]]  # scaled: with the slope term, null past the query
        assert [x is None for x in st["scaled"]] == [x is None for x in want]
        np.testing.assert_allclose([x for x in st["scaled"] if x is not None], s[7, :8], rtol=1e-12)


@pytest.mark.parametrize("name", ["deberta_v2", "deberta_v3"])
def test_a_deberta_model_is_refused_not_answered_wrong(tmp_path, name):
    """DeBERTa's scores add relative-position terms (c2p, p2c) that softmax(factor·q·kᵀ) of the traced
    q, k leaves out: /api/attention, /api/steps and a held text's rows answered weights that differed
    from the model's recorded ones by up to 0.18 (tiny deberta_v3). Each is now one sentence, as the
    written page's refusal."""
    import attnscope
    from tests.models.fixtures import tiny_families

    model = attnscope.load(tiny_families()[name].build(tmp_path / name))
    text = "The bank of the river."
    want = (f"{model.name} is DeBERTa: its scores add relative-position terms (c2p, p2c) that softmax(factor·q·kᵀ) "
            "leaves out; the viewer and its API only show plain dot-product attention")
    c = TestClient(create_app(model, ship_up_to=0))
    for path, body in (("/api/attention", {"text": text, "layer": 0, "head": 0}),
                       ("/api/steps", {"text": text, "layer": 1, "head": 1, "query": 2}),
                       ("/api/view", {"text": text})):  # held: no page compares it with the recorded weights
        r = c.post(path, json=body)
        assert r.status_code == 422 and r.json()["detail"].startswith(want), (path, r.json())
    r = TestClient(create_app(model)).post("/api/view", json={"text": text})  # shipped: the page's own check
    assert r.status_code == 422 and "the viewer only shows plain dot-product attention" in r.json()["detail"]


def test_the_steps_schema_says_scaled_carries_alibis_term(client):
    """/api/steps' scaled is row_steps' "masked": raw × factor plus ALiBi's slope · key position
    (test_attention_of_an_alibi_model_adds_the_slope_term's model); its description said raw × factor."""
    spec = client.get("/openapi.json").json()
    assert "ALiBi: slope · key position" in spec["components"]["schemas"]["Steps"]["properties"]["scaled"]["description"]


def test_openapi_says_what_a_422_answer_is(client):
    """/openapi.json (and /docs) described a 422 as FastAPI's {"detail": [{"loc", "msg", "type"}, …]}
    while every error of the API answers {"detail": "<one sentence>"}: a client generated from the
    schema expected a list. Each 422 now points at an object whose detail is a string, and a real
    422 answer has that shape."""
    spec = client.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    for path in ("/api/view", "/api/attention", "/api/steps", "/api/held/rows"):
        ref = spec["paths"][path]["post"]["responses"]["422"]["content"]["application/json"]["schema"]["$ref"]
        err = schemas[ref.rsplit("/", 1)[1]]
        assert err["required"] == ["detail"] and err["properties"]["detail"]["type"] == "string", (path, err)
    assert "ValidationError" not in schemas  # pydantic's error list, used by nothing else
    r = client.post("/api/steps", json={"text": "hi", "layer": "two"})
    assert r.status_code == 422 and set(r.json()) == {"detail"} and isinstance(r.json()["detail"], str)
    assert client.get("/openapi.json").json() == spec  # the same document each time


@pytest.mark.parametrize("body, field, kind, value", [
    ({"text": "hi", "layer": "二"}, "layer", "int", '"二"'),
    ({"text": ["我喜欢"]}, "text", "str", '["我喜欢"]'),
    ({"text": "hi", "head": {"a": "😀"}}, "head", "int", '{"a": "😀"}'),
    ({"text": "hi", "head": list(range(1, 16))}, "head", "int", "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,…"),  # 39 + "…"
    ({"text": "hi", "layer": "x" * 60}, "layer", "int", '"' + "x" * 38 + "…"),
])
def test_a_wrong_value_is_named_as_sent(client, body, field, kind, value):
    """The value a type error names was json.dumps(...)[:40]: "二" came back as "\\u4e8c" and a long
    value was cut with no mark ('[1, 2, …, 12, ' ended the sentence). Now its characters as sent,
    "…" where it is cut."""
    r = client.post("/api/attention", json=body)
    assert (r.status_code, r.json()["detail"]) == (422, text(f"errors.core_server_{kind}", field=field, value=value))
    assert r.json()["detail"].endswith(value)


def test_a_lone_surrogate_value_is_named_as_its_escape(client):
    """A value with a lone surrogate (not a text field, so no Unicode check) is named by its escape:
    the character itself cannot travel in a UTF-8 answer."""
    r = client.post("/api/attention", content=b'{"text": "hi", "layer": ["\\udc80x"]}',
                    headers={"content-type": "application/json"})
    assert (r.status_code, r.json()["detail"]) == (422, 'layer must be an integer, got ["\\udc80x"]')
