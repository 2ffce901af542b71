"""A decoder's row worked out from before the rotation: tiny Gemma 3 (QK-norm with 1 + w, window 6,
query_pre_attn_scalar 24 ≠ head_dim 16, two RoPE bases), tiny Llama with 8 query heads on 2 k/v
heads and Llama 3 scaling, and the installed SmolLM2-135M and Gemma 3 270M. Every number is
compared with NumPy float64 written here from the trace's projections (rotate_half by hand, RMSNorm
by hand) and with the model's own float32 weights and z."""

from __future__ import annotations

import json

import numpy as np
import pytest

import attnscope
from attnscope.cli import main
from attnscope.explain import explain

from .reference import half_up

TEXT = "A sliding window keeps each token's view to the most recent few tokens."


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from tests.models.decoders import tiny as T
    root = tmp_path_factory.mktemp("tiny-rows")
    return {name: attnscope.load(getattr(T, name)(root / name)) for name in ("gemma3", "llama_gqa", "llama3_scaled")}


def by_hand(model, text, layer, head, qpos):
    """The row from the trace's projections, float64, without attnscope.reference."""
    c = model.config
    names = [f"layers.{layer}.attn.{s}" for s in ("q_proj", "k_proj", "v", "weights", "z")]
    tr = model.trace(text, names=names)
    f64 = lambda n: tr[f"layers.{layer}.attn.{n}"][0].double().numpy()  # noqa: E731
    q, k, v = f64("q_proj")[head, qpos], f64("k_proj"), f64("v")
    g = head // (c.n_heads // c.kv_heads)
    k, v = k[g], v[g]
    d, n = q.shape[-1], k.shape[0]
    if c.qk_norm:  # Gemma: x / √(mean x² + ε) · (1 + w)
        attn = model.layers[layer].attn
        wq, wk = (x.weight.detach().double().numpy() for x in (attn.q_norm, attn.k_norm))
        eps = c.layer_norm_eps
        q = q / np.sqrt((q * q).mean() + eps) * (1 + wq)
        k = k / np.sqrt((k * k).mean(-1, keepdims=True) + eps) * (1 + wk)
    sliding = c.layer_types is not None and c.layer_types[layer] == "sliding"
    base = c.rope_local_theta if sliding and c.rope_local_theta else c.rope_theta
    theta = base ** (-np.arange(0, d, 2) / d)

    def half(x, p):  # (x1, x2) → (x1 cos − x2 sin, x2 cos + x1 sin), x1 = first half
        a = p * theta
        x1, x2 = x[: d // 2], x[d // 2:]
        return np.concatenate([x1 * np.cos(a) - x2 * np.sin(a), x2 * np.cos(a) + x1 * np.sin(a)])

    qr = half(q, qpos)
    kr = np.array([half(k[j], j) for j in range(n)])
    s = kr @ qr
    scale = c.query_scale if c.query_scale is not None else d ** -0.5
    w = c.sliding_window if sliding or (c.layer_types is None and c.sliding_window) else None
    ok = np.array([j <= qpos and (w is None or qpos - j < w) for j in range(n)])
    e = np.where(ok, np.exp(s * scale - (s * scale)[ok].max()), 0.0)
    p = e / e.sum()
    return {"q_rot": qr, "k_rot": kr, "scores": s, "weights": p, "z": p @ v, "ok": ok, "q_pre": q,
            "model_w": f64("weights")[head, qpos], "model_z": f64("z")[head, qpos]}


def test_tiny_gemma_row_qk_norm_window_and_scale(tiny):
    m = tiny["gemma3"]
    ref = by_hand(m, TEXT, 0, 3, 12)
    w = explain(text=TEXT, model=m, layer=0, head=3, position=12)
    np.testing.assert_allclose(w.values["q_rot"], ref["q_rot"], rtol=0, atol=1e-5)  # from the model's q_normed
    np.testing.assert_allclose(w.values["weights"], ref["weights"], rtol=0, atol=1e-5)
    np.testing.assert_allclose(w.values["output_full"], ref["z"], rtol=0, atol=1e-5)
    np.testing.assert_allclose(w.values["weights"], ref["model_w"], rtol=0, atol=1e-5)
    assert np.array_equal(np.isfinite(w.values["masked"]), ref["ok"])
    assert w.meta["factor"] == pytest.approx(24 ** -0.5, rel=1e-12) and w.meta["kv_head"] == 1
    assert w.meta["hidden"]["window"] == list(range(0, 7)) and w.meta["hidden"]["causal"][0] == 13
    md = w.render("markdown")
    assert "query_pre_attn_scalar^(-1/2) = 24^(-1/2) = 0.2041 instead of dividing by √d_k (1/√16 = 0.2500)" in md
    assert "outside this layer's sliding window of 6" in md and "come after 12:" in md
    assert "Query head 3 reads key/value head 1" in md and "(1 + w)" in md
    assert "pair 0 is features 0 and 8" in md and "θ_i = 10000^(-2i/d)" in md  # the local base
    for x in ref["weights"][ref["ok"]]:
        assert half_up(x, 4) in md
    zh = w.render("markdown", lang="zh")
    assert "滑动窗口" in zh and "查询头 3 读取键/值头 1" in zh and "Step" not in zh


def test_tiny_gemma_full_layer_uses_the_global_base(tiny):
    m = tiny["gemma3"]
    ref = by_hand(m, TEXT, 2, 0, 15)
    w = explain(text=TEXT, model=m, layer=2, head=0, position=15)
    np.testing.assert_allclose(w.values["weights"], ref["weights"], rtol=0, atol=1e-5)
    assert w.meta["window"] is None and w.meta["rope"]["base"] == 1e6
    assert "1000000^(-2i/d)" in w.render("markdown")


def test_distance_proof_on_the_models_vectors(tiny):
    m = tiny["llama_gqa"]
    w = explain(text=TEXT, model=m, layer=1, head=5, position=9)
    q, k = w.values["q_pre"], w.values["k_pre"][w.meta["rotation_key"]]
    d = len(q)
    theta = 10000.0 ** (-np.arange(0, d, 2) / d)

    def half(x, p):
        a = p * theta
        lo, hi = x[: d // 2], x[d // 2:]
        return np.concatenate([lo * np.cos(a) - hi * np.sin(a), hi * np.cos(a) + lo * np.sin(a)])

    want = {(a, b): float(half(q, a) @ half(k, b)) for a, b in ((3, 1), (7, 5), (3, 0))}
    got = {(v["m"], v["n"]): v["rotated"] for v in w.values["distance"]}
    for key, val in want.items():
        assert got[key] == pytest.approx(val, rel=1e-12, abs=1e-12)
    assert want[(3, 1)] == pytest.approx(want[(7, 5)], rel=1e-12)
    assert "Query head 5 reads key/value head 1" in w.render("markdown")
    ref = by_hand(m, TEXT, 1, 5, 9)
    np.testing.assert_allclose(w.values["weights"], ref["weights"], rtol=0, atol=1e-6)


def test_llama3_scaled_frequencies_are_the_models(tiny):
    m = tiny["llama3_scaled"]
    long = TEXT + " " + TEXT
    w = explain(text=long, model=m, layer=1, head=2, position=40)
    md = w.render("markdown")
    assert "llama3 scaling" in md
    tr = m.trace(long, names=["layers.1.attn.weights[2]"])
    np.testing.assert_allclose(w.values["weights"], tr["layers.1.attn.weights[2]"][0, 40].double().numpy(), atol=2e-5)


# ----------------------------------------------------------------------------------------------
# the installed models
# ----------------------------------------------------------------------------------------------

REAL = "When Mary and John went to the store, John gave a drink to"


# one installed model at a time (tests/conftest.py: installed_model)
@pytest.fixture
def smollm2(installed_model):
    return installed_model("smollm2-135m")


@pytest.fixture
def gemma(installed_model):
    return installed_model("gemma-3-270m")


def test_smollm2_row_by_the_command_line(smollm2, tmp_path, capsys, monkeypatch):
    import attnscope.models as models
    monkeypatch.setattr(models, "load", lambda name=None, **kw: smollm2)  # the same model, loaded once
    out = tmp_path / "row.json"
    assert main(["explain", "--text", REAL, "--model", "smollm2-135m", "--layer", "20", "--head", "0",
                 "--token", "to", "--format", "json", "-o", str(out)]) == 0
    d = json.loads(out.read_text(encoding="utf-8"))
    qpos = d["meta"]["query_position"]
    ref = by_hand(smollm2, REAL, 20, 0, qpos)
    np.testing.assert_allclose(d["values"]["weights"], ref["weights"], rtol=0, atol=1e-6)
    np.testing.assert_allclose(d["values"]["weights"], ref["model_w"], rtol=0, atol=2e-5)
    # explain works from the weights in float64; the trace's float32 projections are within float32 error
    np.testing.assert_allclose(d["values"]["q_rot"], ref["q_rot"], rtol=0, atol=2e-5)
    assert d["meta"]["n_kv_heads"] == 3 and d["meta"]["kv_head"] == 0 and d["meta"]["rope"]["base"] == 1e5
    assert main(["explain", "--text", REAL, "--model", "smollm2-135m", "--layer", "20", "--head", "0",
                 "--token", "to", "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "Grouped-query attention: 9 query heads share 3 key/value heads" in md
    assert "pair 0 is features 0 and 32" in md and "100000^(-2i/d)" in md
    for x in ref["weights"][ref["weights"] > 0]:
        assert half_up(x, 4) in md


def test_gemma_3_270m_row(gemma):
    text = "我喜欢人工智能，因为它很有趣。"
    w = explain(text=text, model=gemma, layer=0, head=2, position=5)
    ref = by_hand(gemma, text, 0, 2, 5)
    np.testing.assert_allclose(w.values["weights"], ref["weights"], rtol=0, atol=2e-5)
    np.testing.assert_allclose(w.values["weights"], ref["model_w"], rtol=0, atol=2e-5)
    np.testing.assert_allclose(w.values["output_full"], ref["model_z"], rtol=0, atol=1e-4)
    md = w.render("markdown")
    assert "Multi-query attention: all 4 query heads share one key/value head" in md
    assert "query_pre_attn_scalar^(-1/2) = 256^(-1/2) = 0.0625; in this model that equals" in md
    assert "The sliding window is 512" in md and "10000^(-2i/d)" in md and "(1 + w)" in md
    zh = w.render("markdown", lang="zh")
    assert "多查询注意力" in zh and "滑动窗口是 512" in zh
    import re
    for lang in ("en", "zh"):
        tex = w.render("latex", lang=lang)
        body = re.sub(r"\\[{}$%&#_]", "", tex)
        assert body.count("{") == body.count("}") and r"\varphi" in tex
        rich = w.render("rich", lang=lang)
        for x in ref["weights"][ref["weights"] > 1e-4]:
            assert half_up(x, 4) in rich and half_up(x, 4) in tex
    d = json.loads(w.render("json", lang="zh"))
    np.testing.assert_allclose(d["values"]["q_rot"], w.values["q_rot"], rtol=0, atol=0)


def test_readme_and_docs_row_is_current(smollm2):
    """The rotary row quoted in docs/modern-attention.md and written to docs/modern-attention-row.md is what the
    tool prints now (the numbers; the float32 differences depend on the thread count)."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    readme = (root / "docs" / "modern-attention.md").read_text(encoding="utf-8")
    doc = (root / "docs" / "modern-attention-row.md").read_text(encoding="utf-8")
    md = explain(text=REAL, model=smollm2, layer=23, head=3, position=13).render("markdown")
    strip = lambda s: [ln for ln in s.splitlines() if "float32" not in ln and "float64 rounding" not in ln]  # noqa: E731
    assert strip(md) == strip(doc)
    for line in ("13: to puts its attention on 74.0% from 9: John, 14.9% from 0:When, 4.8% from 1: Mary, 4.2% from 3: John "
                 "(its four largest weights), and 2.1% on the other 10 keys.",
                 "| 0 | 0, 32 | 13 | 0.9074 | 0.4202 | -0.3836 | 0.4130 | -0.5216 | 0.2136 |",
                 "| 7 | 5 | 2 | 30.3169 | 30.3169 |", "| 3 | 0 | 3 | 29.6383 | 29.6383 |"):
        assert line in md
        assert " ".join(line.replace("|", " ").split()) in " ".join(readme.replace("|", " ").split())
