"""``POST /api/view`` with ``"attribution": true`` (the served page's switch, issue 27 item 3): the
matrices of the typed text are model.attribute's (norm: the per-head ‖α·f(x)‖ divided by each
row's sum in float64 here; rollout, ALTI, value zeroing: ``attribute(layer=l).scores``), under the
written page's limits; without the field the answer is as before; a held text says why it has none."""

import numpy as np
import pytest
from fastapi.testclient import TestClient

from attnscope.server import create_app
from attnscope.viewer.data import decode

TEXT = "The bank of the river was green."


@pytest.fixture(scope="module")
def client(minilm):
    return TestClient(create_app(minilm, max_chars=400))


def test_the_matrices_are_model_attributes(client, minilm):
    r = client.post("/api/view", json={"text": TEXT, "attribution": True})
    assert r.status_code == 200
    d = r.json()
    assert d["attribution"] == {"methods": ["norm", "rollout", "alti", "value_zeroing"], "per_head": ["norm"],
                                "max_tokens": 64}
    a = d["texts"][0]["attribution"]
    heads = minilm.attribute(TEXT, method="norm").details["heads"].double().numpy()  # (layers, H, L, L)
    np.testing.assert_allclose(decode(a["norm"]), heads / heads.sum(-1, keepdims=True), rtol=0, atol=2e-7)
    for method in ("rollout", "alti", "value_zeroing"):
        got = decode(a[method])  # (layers, L, L)
        for layer in (0, 3, 5):
            want = minilm.attribute(TEXT, method=method, layer=layer).scores.double().numpy()
            np.testing.assert_allclose(got[layer], want, rtol=0, atol=2e-7)


def test_without_the_field_the_answer_is_as_before(client):
    d = client.post("/api/view", json={"text": TEXT}).json()
    assert "attribution" not in d and "attribution" not in d["texts"][0]
    r = client.post("/api/view", json={"text": TEXT, "attribution": "yes"})
    assert r.status_code == 422 and "attribution" in r.json()["detail"]


def test_the_limits_are_the_written_pages(client):
    long = " ".join(["the bank"] * 40)  # 82 tokens with [CLS] and [SEP]
    d = client.post("/api/view", json={"text": TEXT, "compare": long, "token": "bank", "attribution": True}).json()
    assert d["texts"][1]["attribution"] == {"left_out": "too_long", "n": 82}
    assert set(d["texts"][0]["attribution"]) == {"norm", "rollout", "alti", "value_zeroing"}


def test_a_held_text_says_why_it_has_none(minilm):
    held = TestClient(create_app(minilm, max_chars=400, ship_up_to=4))
    d = held.post("/api/view", json={"text": TEXT, "attribution": True}).json()
    n = d["texts"][0]["remote"]["n"]
    assert d["texts"][0]["attribution"] == {"left_out": "held", "n": n} and n <= 64
    long = " ".join(["the bank"] * 40)
    d = held.post("/api/view", json={"text": long, "attribution": True}).json()
    assert d["texts"][0]["attribution"] == {"left_out": "too_long", "n": 82}
