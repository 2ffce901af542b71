"""check on one row of a decoder (tiny Gemma 3: QK-norm, shared heads, window): the learner's
rotated query and keys, scores and weights against a NumPy float64 computation from the model's
own pre-rotation q and k (rotate_half written here)."""

import numpy as np
import pytest

import attnscope
from tests.explain.reference import half_up

TEXT = "A sliding window keeps each token's view short."


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    from tests.models.decoders.tiny import gemma3
    return gemma3(tmp_path_factory.mktemp("check-row") / "gemma3")


def _rows(folder, qpos):
    m = attnscope.load(folder)
    tr = m.trace(TEXT, names=["layers.0.attn.q_normed[1]", "layers.0.attn.k_normed[1]"])
    q = tr["layers.0.attn.q_normed[1]"][0, qpos].double().numpy()
    k = tr["layers.0.attn.k_normed[1]"][0].double().numpy()
    d, n = q.shape[0], k.shape[0]
    theta = 10000.0 ** (-np.arange(0, d, 2) / d)

    def half(x, p):
        a = p * theta
        lo, hi = x[: d // 2], x[d // 2:]
        return np.concatenate([lo * np.cos(a) - hi * np.sin(a), hi * np.cos(a) + lo * np.sin(a)])

    qr, kr = half(q, qpos), np.array([half(k[j], j) for j in range(n)])
    return qr, kr, kr @ qr


def test_rotated_query_keys_and_scores(folder):
    qr, kr, s = _rows(folder, 9)
    problem = {"text": TEXT, "model": str(folder), "layer": 0, "head": 1, "position": 9}
    ans = {"q_rot": [half_up(x, 4) for x in qr], "k_rot": [[half_up(x, 4) for x in r] for r in kr],
           "scores": [half_up(x, 3) for x in s]}
    r = attnscope.check({"problem": problem, "answers": ans})
    assert r.ok, r.render("markdown")
    assert r.answered == ["Q_rot", "K_rot", "scores"] and r.counts()["correct"] == len(qr) * (1 + len(kr)) + len(s)
    bad = dict(ans, q_rot=list(ans["q_rot"]))
    bad["q_rot"][0] = half_up(qr[0] + 0.3, 4)
    r = attnscope.check({"problem": problem, "answers": bad})
    assert r.first_wrong == ("Q_rot", "-") and r.by_verdict("wrong")[0].col == 0
