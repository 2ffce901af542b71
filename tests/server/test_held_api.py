"""The served endpoints of held texts (/api/view of a long text, /api/held/*): the numbers equal
the page's own float64 arithmetic on the shipped q, k, v of the same text, errors are one
sentence, and a text beyond the model's context is refused (never cut)."""

import numpy as np
import pytest
from fastapi.testclient import TestClient

from attnscope import reference as R
from attnscope.server import create_app
from attnscope.viewer import data as D
from attnscope.viewer.held_api import from_array
from tests.viewer.fixtures import minilm  # noqa: F401

TEXT = "我喜欢人工智能 the bank of the river, and every token looks at the tokens before it."


@pytest.fixture(scope="module")
def client(minilm):  # noqa: F811 (the imported fixture)
    return TestClient(create_app(minilm, ship_up_to=0))


@pytest.fixture(scope="module")
def held(client):
    r = client.post("/api/view", json={"text": TEXT})
    assert r.status_code == 200, r.json()
    return r.json()


def test_a_held_page_carries_tokens_and_an_id_not_q_k_v(held, minilm):  # noqa: F811
    entry = held["texts"][0]
    assert set(entry) == {"text", "tokens", "remote"} and entry["text"] == TEXT
    assert entry["remote"]["n"] == len(entry["tokens"]) == len(minilm.encode(TEXT).tokens[0])
    assert entry["remote"]["api"] == "api/held/" and entry["remote"]["thumb"] == min(64, entry["remote"]["n"])
    assert held["config"]["n_layers"] == 6 and held["font_css"] is not None


def test_rows_and_steps_equal_the_shipped_pages_arithmetic(client, held, minilm):  # noqa: F811
    """The same text shipped whole (q, k, v in the page): data.page_weights is what the page
    computes from them; the server's rows and steps of the held text equal it."""
    shipped = TestClient(create_app(minilm)).post("/api/view", json={"text": TEXT}).json()
    entry, rid = shipped["texts"][0], held["texts"][0]["remote"]["id"]
    n = held["texts"][0]["remote"]["n"]
    q, k, v = (D.decode(entry[x]) for x in ("q", "k", "v"))  # (L, H, n, d)
    f = shipped["config"]["factor"]
    for layer in (0, 5):
        W = D.page_weights(q[layer], k[layer], f, np.ones((1, n, n), bool), None)  # (H, n, n)
        r = client.post("/api/held/rows", json={"id": rid, "layer": layer, "heads": [0, 7, 11], "q0": 0, "q1": n})
        assert r.status_code == 200
        got = from_array(r.json()["weights"])
        assert got.dtype == np.float64 and got.shape == (3, n, n)
        np.testing.assert_allclose(got, W[[0, 7, 11]], rtol=0, atol=1e-13)
        s = client.post("/api/held/steps", json={"id": rid, "layer": layer, "head": 7, "query": 4}).json()
        raw = R.as_f64(q[layer, 7, 4]) @ R.as_f64(k[layer, 7]).T
        np.testing.assert_allclose(from_array(s["raw"]), raw, rtol=1e-13)
        np.testing.assert_allclose(from_array(s["weights"]), W[7, 4], rtol=0, atol=1e-13)
        np.testing.assert_allclose(from_array(s["out"]), W[7, 4] @ R.as_f64(v[layer, 7]), rtol=1e-12, atol=1e-13)
        h = client.post("/api/held/heatmap", json={"id": rid, "layer": layer, "head": 7, "q0": 0, "q1": n, "k0": 0,
                                                   "k1": n, "rows": 4, "cols": 4}).json()
        e = h["row_edges"]
        want = [[W[7, e[i]:e[i + 1], e[j]:e[j + 1]].max() for j in range(4)] for i in range(4)]
        np.testing.assert_allclose(from_array(h["grid"]), want, atol=2e-6)
        t = client.post("/api/held/thumbs", json={"id": rid, "layer": layer}).json()
        assert np.abs(from_array(t["thumbs"]).astype(int) - D.thumbnails(W).astype(int)).max() <= 1
        ln = client.post("/api/held/lines", json={"id": rid, "layer": layer, "heads": [0, 1]}).json()
        ws = from_array(ln["weight"])
        assert len(ws) <= 8000 and (ws >= ln["minw"]).all()
        np.testing.assert_allclose(ws, W[from_array(ln["head"]), from_array(ln["query"]), from_array(ln["key"])], atol=2e-6)
    vec = client.post("/api/held/vectors", json={"id": rid, "layer": 2, "head": 3, "positions": [0, 5]}).json()
    np.testing.assert_array_equal(from_array(vec["q_pre"]), q[2, 3][[0, 5]].astype(np.float64))


@pytest.mark.parametrize("path, body, status, msg", [
    ("rows", {"id": "0" * 24, "layer": 0, "heads": [0], "q0": 0, "q1": 1}, 410, "no longer holds this text"),
    ("rows", {"layer": 6, "heads": [0], "q0": 0, "q1": 1}, 422, "layer 6 is out of range: there are 6 layers (0..5)"),
    ("rows", {"layer": 0, "heads": [], "q0": 0, "q1": 1}, 422, "heads is empty"),
    ("rows", {"layer": 0, "heads": [1, 1], "q0": 0, "q1": 1}, 422, "repeats a head"),
    # an empty span named its rows backwards ("query rows 3..2 are out of range") for a text that has them
    ("rows", {"layer": 0, "heads": [0], "q0": 3, "q1": 3}, 422,
     "q0 = 3, q1 = 3 name no query rows: they are q0 … q1 − 1, so q1 must be greater than q0"),
    ("heatmap", {"layer": 0, "head": 0, "q0": 0, "q1": 5, "k0": 4, "k1": 1, "rows": 5, "cols": 5}, 422,
     "k0 = 4, k1 = 1 name no keys: they are k0 … k1 − 1, so k1 must be greater than k0"),
    ("rows", {"layer": 0, "heads": [0], "q0": 0, "q1": 9999}, 422, "query rows 0..9998 are out of range"),
    ("rows", {"layer": 0, "heads": [0], "q0": 0, "q1": 1, "extra": 1}, 422, "unknown field 'extra'"),
    ("rows", {"layer": 0, "heads": [True], "q0": 0, "q1": 1}, 422, "must be an integer"),
    ("steps", {"layer": 0, "head": 12, "query": 0}, 422, "head 12 is out of range"),
    ("steps", {"layer": 0, "head": 0, "query": 999}, 422, "query token 999 is out of range"),
    ("vectors", {"layer": 0, "head": 0, "positions": list(range(65))}, 422, "positions must name 1..64 tokens"),
    ("heatmap", {"layer": 0, "head": 0, "q0": 0, "q1": 5, "k0": 0, "k1": 5, "rows": 5000, "cols": 5}, 422,
     "rows must be in 1..4096"),
])
def test_bad_requests_are_one_sentence(client, held, path, body, status, msg):
    body = {"id": held["texts"][0]["remote"]["id"], **body}
    r = client.post("/api/held/" + path, json=body)
    assert r.status_code == status and msg in r.json()["detail"], r.json()


def test_texts_beyond_the_context_are_refused_and_the_limits_follow_the_context(client, minilm):  # noqa: F811
    r = client.post("/api/view", json={"text": "word " * 600})
    assert r.status_code == 422
    assert r.json()["detail"] == ("the text has 602 tokens, longer than the model's limit of 512 positions; shorten it "
                                  "(in Python, truncate=True keeps the first 512 tokens)")
    info = client.get("/api/model").json()
    assert info["max_tokens"] == 512 and info["max_chars"] == 8 * 512
    r = client.post("/api/view", json={"text": "a" * 4097})
    assert r.status_code == 422 and "the limit is 4096" in r.json()["detail"]
    paths = client.get("/openapi.json").json()["paths"]
    assert {f"/api/held/{p}" for p in ("rows", "steps", "vectors", "heatmap", "lines", "thumbs")} <= set(paths)


def test_the_server_holds_what_the_page_would_carry(client, held, minilm):  # noqa: F811
    h = client.app.state.held.get(held["texts"][0]["remote"]["id"])
    cfg = minilm.config
    assert h.nbytes == cfg.n_layers * 3 * cfg.n_heads * h.n * cfg.d_head * 4


def test_the_whole_matrix_endpoint_is_bounded(minilm, monkeypatch):  # noqa: F811
    """/api/attention answers n² numbers as JSON: past MAX_MATRIX_TOKENS tokens it says to read rows."""
    import attnscope.server as S
    c = TestClient(create_app(minilm))
    ok = c.post("/api/attention", json={"text": TEXT, "layer": 1, "head": 2})
    assert ok.status_code == 200
    tr = minilm.trace([TEXT], names=[f"layers.1.attn.{s}" for s in ("q", "k", "v")])
    np.testing.assert_allclose(ok.json()["weights"], R.trace_weights(tr, 1)[2], rtol=0, atol=1e-15)
    monkeypatch.setattr(S, "MAX_MATRIX_TOKENS", 10)
    r = c.post("/api/attention", json={"text": TEXT, "layer": 1, "head": 2})
    assert r.status_code == 422 and "answers the whole matrix, for at most 10 tokens" in r.json()["detail"]
    assert "/api/held/rows" in r.json()["detail"]


def test_a_repeated_head_is_named_not_the_whole_list(client, held):
    """A body of 100,000 heads that repeat one: the answer echoed the whole list (300 KB)."""
    rid = held["texts"][0]["remote"]["id"]
    for path, extra in (("rows", {"q0": 0, "q1": 1}), ("lines", {})):
        r = client.post("/api/held/" + path, json={"id": rid, "layer": 0, "heads": [3, 1] + [0] * 100_000, **extra})
        assert r.status_code == 422
        assert r.json()["detail"] == "heads repeats a head: head 0 is named 100000 times; name each head once"


def test_an_empty_body_at_a_held_endpoint_is_not_told_to_send_a_text(client):
    """/api/held/* read an id, not a text: the empty body's example {"text": …} was wrong there."""
    r = client.post("/api/held/rows", content=b"", headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert r.json()["detail"] == "request body is empty; send a JSON object with the fields /docs lists for this endpoint"


def test_a_small_budget_keeps_both_texts_of_the_page_it_answers(minilm):  # noqa: F811
    """Two held texts (text and compare) over a 1 MB budget: putting the second dropped the first
    before the page arrived, so every request for it was 410 "show it again", and showing it again
    did the same. Both are now answered; the next page's texts drop them as before."""
    c = TestClient(create_app(minilm, ship_up_to=0, held_bytes=1 << 20))
    a, b = "the bank of the river " * 20, "money in the bank " * 20

    def page(text, compare):
        d = c.post("/api/view", json={"text": text, "compare": compare, "token": "bank"}).json()
        return [e["remote"] for e in d["texts"]]

    first = page(a, b)
    assert sum(c.app.state.held.get(r["id"]).nbytes for r in first) > 1 << 20  # over the budget together
    for r in first:
        got = c.post("/api/held/rows", json={"id": r["id"], "layer": 0, "heads": [0], "q0": 0, "q1": r["n"]})
        assert got.status_code == 200, got.json()
    second = page("a bank " * 60, "the bank " * 60)
    assert c.post("/api/held/thumbs", json={"id": first[0]["id"], "layer": 0}).status_code == 410
    assert all(c.post("/api/held/thumbs", json={"id": r["id"], "layer": 0}).status_code == 200 for r in second)
