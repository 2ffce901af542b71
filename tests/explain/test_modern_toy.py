"""A toy input with today's decoder features (rotary positions, shared k/v heads, a window,
QK-norm with Gemma's 1 + w, query_pre_attn_scalar) worked out by hand, against NumPy float64
written here: the rotation as complex multiplication (adjacent pairs) or rotate_half (half pairs),
nothing from attnscope.reference."""

import copy
import json
import re

import numpy as np
import pytest

from attnscope.explain import explain

from .reference import half_up

SPEC = {
    "name": "rotary, GQA, window, QK-norm",
    "tokens": ["我", "爱", "你", "们"],
    "X": [[1, 0], [0, 1], [1, 1], [0.5, -1]],
    "W_Q": [[1, 0, 0.5, 1, 0, 1, 1, 0], [1, 1, 0, -1, 1, 0, 0, 1]],
    "W_K": [[1, 2, 0, 1], [0, 1, 1, 0]],
    "W_V": [[2, 0], [0, 1]],
    "n_heads": 2, "n_kv_heads": 1, "head": 1,
    "rope": {"base": 100},
    "window": 3,
    "qk_norm": {"eps": 1e-6, "offset": 1, "q_weight": [0.1, -0.2, 0.0, 0.3]},
    "query_pre_attn_scalar": 16,
}


def by_hand(spec):
    """Every step, float64, written out independently."""
    X, WQ, WK, WV = (np.array(spec[k], dtype=float) for k in ("X", "W_Q", "W_K", "W_V"))
    Q, K, V = X @ WQ, X @ WK, X @ WV
    H, Hkv, h = spec.get("n_heads", 1), spec.get("n_kv_heads", spec.get("n_heads", 1)), spec.get("head", 0)
    d = Q.shape[1] // H
    g = h // (H // Hkv)
    dv = V.shape[1] // Hkv
    q, k, v = Q[:, h * d:(h + 1) * d], K[:, g * d:(g + 1) * d], V[:, g * dv:(g + 1) * dv]
    out = {"Q": Q, "K": K, "V": V}
    norm = spec.get("qk_norm")
    if norm:
        eps, off = norm.get("eps", 1e-6), norm.get("offset", 0)
        wq = np.array(norm.get("q_weight", [0.0 if off else 1.0] * d))
        wk = np.array(norm.get("k_weight", [0.0 if off else 1.0] * d))
        rms = lambda x: np.sqrt((x ** 2).sum(1, keepdims=True) / d + eps)  # noqa: E731
        q = out["Q_normed"] = q / rms(q) * (off + wq)
        k = out["K_normed"] = k / rms(k) * (off + wk)
    L = X.shape[0]
    base = spec["rope"]["base"]
    pairing = spec["rope"].get("pairing", "adjacent")
    theta = np.array([base ** (-2.0 * i / d) for i in range(d // 2)])

    def turn(x, p):
        if pairing == "adjacent":  # (x_2i + i x_2i+1) · e^{i p θ}
            z = (x[0::2] + 1j * x[1::2]) * np.exp(1j * p * theta)
            y = np.empty(d)
            y[0::2], y[1::2] = z.real, z.imag
            return y
        ang = np.concatenate([p * theta, p * theta])
        return x * np.cos(ang) + np.concatenate([-x[d // 2:], x[:d // 2]]) * np.sin(ang)

    q = out["Q_rot"] = np.array([turn(q[i], i) for i in range(L)])
    k = out["K_rot"] = np.array([turn(k[i], i) for i in range(L)])
    S = q @ k.T
    c = spec["query_pre_attn_scalar"] ** -0.5 if "query_pre_attn_scalar" in spec else d ** -0.5
    w = spec.get("window")
    allowed = np.array([[j <= i and (w is None or i - j < w) for j in range(L)] for i in range(L)])
    scaled = np.where(allowed, S * c, -np.inf)
    e = np.exp(scaled)
    A = e / e.sum(1, keepdims=True)
    out.update(scores=S, weights=A, output=A @ v, allowed=allowed, turn=turn, q_pre=out.get("Q_normed", q), theta=theta)
    out["dist"] = {mn: float(turn(out["Q_normed"][0], mn[0]) @ turn(out["K_normed"][1], mn[1]))
                   for mn in ((3, 1), (7, 5), (3, 0))}
    return out


REF = by_hand(SPEC)


@pytest.fixture(scope="module")
def worked():
    return explain(copy.deepcopy(SPEC))


def test_every_step_equals_the_hand_computation(worked):
    for name in ("Q", "K", "V", "Q_normed", "K_normed", "Q_rot", "K_rot", "scores", "weights", "output"):
        np.testing.assert_allclose(worked.values[name], REF[name], rtol=1e-12, atol=1e-12, err_msg=name)
    assert worked.meta["factor"] == 0.25 and worked.meta["kv_head"] == 0 and worked.meta["window"] == 3
    # the window hides key 1 (我) from query 4 (们); causality the later keys
    assert np.array_equal(np.isfinite(worked.values["masked"]), REF["allowed"])


def test_distance_proof_is_computed(worked):
    got = {(v["m"], v["n"]): v for v in worked.values["distance"]}
    for mn, want in REF["dist"].items():
        assert got[mn]["rotated"] == pytest.approx(want, rel=1e-12)
        assert got[mn]["formula"] == pytest.approx(want, rel=1e-12)
    assert REF["dist"][(3, 1)] == pytest.approx(REF["dist"][(7, 5)], rel=1e-12)
    assert REF["dist"][(3, 1)] != pytest.approx(REF["dist"][(3, 0)], rel=1e-3)
    md = worked.render("markdown")
    s31 = half_up(REF["dist"][(3, 1)], 4)
    assert f"| 3 | 1 | 2 | {s31} | {s31} |" in md and f"| 7 | 5 | 2 | {s31} | {s31} |" in md
    assert f"| 3 | 0 | 3 | {half_up(REF['dist'][(3, 0)], 4)} |" in md


@pytest.mark.parametrize("fmt", ["rich", "markdown", "latex"])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_rotated_vectors_and_weights_are_printed(worked, fmt, lang):
    text = worked.render(fmt, lang=lang, decimals=4)
    numbers = set(re.findall(r"-?\d+\.\d+", text))
    for name in ("Q_rot", "K_rot", "weights", "output"):
        for x in REF[name].ravel():
            if not float(x).is_integer():
                assert half_up(x, 4) in numbers, (fmt, lang, name, x)
    # each rotation row: cos and sin of position × θ_i
    for p in range(4):
        for i, th in enumerate(REF["theta"]):
            for f in (np.cos, np.sin):
                val = f(p * th)
                if not float(val).is_integer():
                    assert half_up(val, 4) in numbers, (p, i)


def test_words_in_both_languages(worked):
    en, zh = worked.render("markdown"), worked.render("markdown", lang="zh")
    assert "Query head 1 reads key/value head 0" in en and "Multi-query attention" in en
    assert "features 2i and 2i + 1" in en and "θ_i = 100^(-2i/d)" in en
    assert "们: keys 我 come before it but are 3 or more positions back" in en
    assert "query_pre_attn_scalar^(-1/2) = 16^(-1/2) = 0.2500" in en
    assert "(1 + w)" in en and "RMS" in en
    assert "查询头 1 读取键/值头 0" in zh and "多查询注意力" in zh and "滑动窗口" in zh
    assert "Step" not in zh and "Query head" not in zh
    tex = worked.render("latex", lang="zh")
    assert r"\varphi" in tex and tex.count(r"\begin{document}") == 1
    body = re.sub(r"\\[{}$%&#_]", "", tex)
    assert body.count("{") == body.count("}")


def test_json_holds_the_new_steps(worked):
    d = json.loads(worked.render("json"))
    np.testing.assert_allclose(np.array(d["values"]["Q_rot"]), REF["Q_rot"], rtol=1e-15, atol=1e-15)
    assert d["meta"]["rope"]["base"] == 100 and d["meta"]["rope"]["pairing"] == "adjacent"
    assert d["meta"]["n_heads"] == 2 and d["meta"]["n_kv_heads"] == 1 and d["meta"]["head"] == 1
    assert [s["key"] for s in d["steps"]][3:7] == ["heads", "qk_norm", "rotation", "distance"]


def test_half_pairing_and_plain_rope():
    spec = {"tokens": ["a", "b", "c"], "Q": [[1, 2, 0, -1], [0, 1, 1, 0], [2, 0, 1, 1]],
            "K": [[1, 0, 1, 0], [0, 2, 0, 1], [1, 1, -1, 0]], "V": [[1, 0], [0, 1], [1, 1]],
            "rope": {"base": 10000, "pairing": "half"}, "causal": True}
    w = explain(spec)
    Q, K = np.array(spec["Q"], float), np.array(spec["K"], float)
    theta = np.array([10000 ** (-2 * i / 4) for i in range(2)])

    def half(x, p):  # Hugging Face's rotate_half, written out
        return np.array([x[0] * np.cos(p * theta[0]) - x[2] * np.sin(p * theta[0]),
                         x[1] * np.cos(p * theta[1]) - x[3] * np.sin(p * theta[1]),
                         x[2] * np.cos(p * theta[0]) + x[0] * np.sin(p * theta[0]),
                         x[3] * np.cos(p * theta[1]) + x[1] * np.sin(p * theta[1])])

    qr = np.array([half(Q[i], i) for i in range(3)])
    kr = np.array([half(K[i], i) for i in range(3)])
    np.testing.assert_allclose(w.values["Q_rot"], qr, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(w.values["scores"], qr @ kr.T, rtol=1e-13, atol=1e-14)
    md = w.render("markdown")
    assert "feature i with feature i + d/2" in md and "| 0 | 0, 2 |" in md
    assert "shared key/value heads" not in md and "RMSNorm" not in md


def test_positions_can_be_given():
    spec = dict(copy.deepcopy(SPEC), rope={"base": 100, "positions": [10, 11, 12, 13]})
    w = explain(spec)
    ref = by_hand(spec)
    turn = ref["turn"]
    want = np.array([turn(ref["Q_normed"][i], 10 + i) for i in range(4)])
    np.testing.assert_allclose(w.values["Q_rot"], want, rtol=1e-12, atol=1e-12)
    # shifting every position leaves the scores alone: they depend on distances only
    np.testing.assert_allclose(w.values["scores"], REF["scores"], rtol=1e-12, atol=1e-12)
