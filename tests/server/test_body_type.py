"""A body the API cannot read says why: the content type when it is not JSON, the encoding when
the bytes are not UTF-8 (issue #23: "must be a JSON object" and "There was an error parsing the
body" before)."""

import pytest
from fastapi.testclient import TestClient

from attnscope.server import create_app


@pytest.fixture(scope="module")
def client(minilm):
    return TestClient(create_app(minilm, max_chars=200))


@pytest.mark.parametrize("ctype", ["text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded",
                                   "multipart/form-data; boundary=x"])
def test_a_body_of_another_type_is_refused_for_its_type(client, ctype):
    r = client.post("/api/view", content=b'{"text": "The bank of the river."}', headers={"content-type": ctype})
    assert r.status_code == 415
    main = ctype.split(";")[0]
    assert r.json()["detail"] == (f"request content type must be application/json, got {main!r}; send the JSON "
                                  "object with the header content-type: application/json")


@pytest.mark.parametrize("ctype", ["application/json", "application/json; charset=utf-8", "application/ld+json"])
def test_json_types_are_read(client, ctype):
    r = client.post("/api/attention", content='{"text": "Café au lait.", "layer": 0, "head": 0}'.encode(),
                    headers={"content-type": ctype})
    assert r.status_code == 200 and r.json()["tokens"][1] == "cafe"


def test_a_latin1_body_is_said_to_be_not_utf8(client):
    body = '{"text": "Café au lait."}'.encode("latin-1")  # é is the single byte 0xe9
    r = client.post("/api/view", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400
    at = body.index(b"\xe9")
    assert r.json()["detail"] == (f"request body is not UTF-8 text (byte 0xe9 at position {at}); send the JSON "
                                  "encoded as UTF-8")


def test_other_http_errors_are_one_sentence_too(client):
    """Starlette's "Not Found" and "Method Not Allowed" name the path (and the method to use), in
    serve's language (tests/server/test_serve_lang.py)."""
    r = client.get("/no/such/page")
    assert r.status_code == 404
    assert r.json() == {"detail": "no page or endpoint at '/no/such/page'; the API's endpoints are listed at /docs"}
    r = client.get("/api/view")
    assert r.status_code == 405 and r.headers["allow"] == "POST"
    assert r.json() == {"detail": "GET is not allowed for '/api/view'; use POST"}


def test_a_json_body_without_a_content_type_is_told_to_send_one(client):
    """requests.post(url, data=json.dumps(...)) sends no content type: FastAPI then reads the body
    as bytes, and the answer was "request body must be a JSON object" for a body that is one."""
    r = client.post("/api/view", content=b'{"text": "The bank of the river."}')
    assert "content-type" not in r.request.headers
    assert r.status_code == 415
    assert r.json()["detail"] == ("request has no content type; send the JSON object with the header content-type: "
                                  "application/json")
    r = client.post("/api/view", content=b"")  # nothing sent at all: as before
    assert r.status_code == 422 and "request body is empty" in r.json()["detail"]
    r = client.post("/api/view", content=b'{"text": "hi"}', headers={"content-type": "application/json"})
    assert r.status_code == 200


@pytest.mark.parametrize("body", [b"[" * 100_000, b'{"a": ' * 5000 + b"1" + b"}" * 5000])
def test_a_body_nested_too_deeply_says_so(client, body):
    """Python's JSON reader stops at about 1,000 levels (RecursionError): the answer was FastAPI's
    "There was an error parsing the body", which names nothing."""
    r = client.post("/api/view", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400
    assert r.json()["detail"].startswith("request body nests arrays or objects too deeply to read; send a flat JSON object")
    assert client.post("/api/attention", json={"text": "ok"}).status_code == 200
