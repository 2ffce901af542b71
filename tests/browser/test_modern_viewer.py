"""The viewer on decoders, in Chromium: SmolLM2-135M's shared k/v heads, the rotation in the step
view and its weights against the model and against NumPy float64 written here (rotate_half by
hand); a tiny Gemma 3's sliding window shaded in the head and step views; the generation view of
SmolLM2 (slider, heads, tokens) against the model's own per-step attentions; screenshots at
1400×1000 and 800×600 in English and Chinese (Gemma 3 270M) under artifacts/browser/."""

from __future__ import annotations

import numpy as np
import pytest

import attnscope
from attnscope.viewer.generation import save_generation_html
from attnscope.viewer.html import render
from attnscope.viewer.run import view_data
from tests.browser.conftest import wait_ready

TEXT = "When Mary and John went to the store, John gave a drink to"
SIZES = ((1400, 1000), (800, 600))


# One installed model at a time (tests/conftest.py: installed_model): the module fixtures below
# keep what they made, not the model, so that the Gemma test frees SmolLM2 before loading.
@pytest.fixture
def smollm2(installed_model):
    return installed_model("smollm2-135m")


@pytest.fixture(scope="module")
def smol_page(installed_model, tmp_path_factory):
    path = tmp_path_factory.mktemp("smol") / "view.html"
    path.write_text(render(view_data(installed_model("smollm2-135m"), TEXT)), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def generation(installed_model, tmp_path_factory):
    smollm2 = installed_model("smollm2-135m")
    gen = smollm2.generate("The capital of France is", max_new_tokens=6, attentions=True)
    path = tmp_path_factory.mktemp("gen") / "gen.html"
    save_generation_html(smollm2, gen, path)
    return gen, path


def _open(page, path, hash_="", size=(1400, 1000)):
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto("about:blank")
    page.goto(path.as_uri() + hash_)
    wait_ready(page, 90_000)


def _values(page, selector):
    return np.array([float(x) for x in page.eval_on_selector_all(selector, "els => els.map(e => e.dataset.value)")])


def _by_hand(model, text, layer, head, qpos):
    """q_proj/k_proj of the trace turned by rotate_half written here, then softmax, float64."""
    c = model.config
    tr = model.trace(text, names=[f"layers.{layer}.attn.{s}" for s in ("q_proj", "k_proj", "q", "weights")])
    q = tr[f"layers.{layer}.attn.q_proj"][0, head].double().numpy()
    k = tr[f"layers.{layer}.attn.k_proj"][0, head // c.kv_group].double().numpy()
    n, d = q.shape
    theta = c.rope_theta ** (-np.arange(0, d, 2) / d)

    def half(x, p):
        a = p * theta
        lo, hi = x[: d // 2], x[d // 2:]
        return np.concatenate([lo * np.cos(a) - hi * np.sin(a), hi * np.cos(a) + lo * np.sin(a)])

    qr, kr = half(q[qpos], qpos), np.array([half(k[j], j) for j in range(n)])
    s = np.where(np.arange(n) <= qpos, kr @ qr / np.sqrt(d), -np.inf)
    e = np.exp(s - s.max())
    return {"weights": e / e.sum(), "q_rot": qr, "model_w": tr[f"layers.{layer}.attn.weights"][0, head, qpos].double().numpy(),
            "model_q": tr[f"layers.{layer}.attn.q"][0, head, qpos].double().numpy(), "q_pre": q[qpos]}


def test_smollm2_step_view_rotation_and_shared_heads(page, smollm2, smol_page, artifacts):
    layer, head, qpos = 20, 4, 13
    _open(page, smol_page, f"#view=step&layer={layer}&head={head}&query={qpos}")
    ref = _by_hand(smollm2, TEXT, layer, head, qpos)
    shown = _values(page, "[data-testid=step-table] td[data-col=weight]")
    np.testing.assert_allclose(shown, ref["weights"], rtol=1e-12, atol=1e-15)  # float64 in the page and here
    np.testing.assert_allclose(shown, ref["model_w"], atol=2e-5)  # the model's own float32 numbers
    cap = page.inner_text("[data-testid=step-caption]")
    assert "query head 4 reads k/v head 1 (shared by query heads 3–5)" in cap and "rotary positions (base 100000" in cap
    # the rotation table: q before (the model's q_proj) and after, pair i = (i, i + 32)
    qa = _values(page, "[data-testid=rotation-table] td[data-col=q_a]")
    qra = _values(page, "[data-testid=rotation-table] td[data-col=qr_a]")
    qrb = _values(page, "[data-testid=rotation-table] td[data-col=qr_b]")
    np.testing.assert_allclose(qa, ref["q_pre"][:32], rtol=0, atol=0)
    np.testing.assert_allclose(np.concatenate([qra, qrb]), ref["q_rot"], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.concatenate([qra, qrb]), ref["model_q"], atol=2e-5)
    assert page.inner_text("[data-testid=rot-row-0] td") == "0 (0, 32)"
    # a later key is hidden by the causal mask, and says so
    assert page.get_attribute("[data-testid=step-row-0]", "data-hidden") == "0"
    page.click("[data-testid=step-row-2]")  # choose the key whose rotation is shown
    assert "(position 2)" in page.inner_text("[data-testid=rotation]")
    for w, h in SIZES:
        page.set_viewport_size({"width": w, "height": h})
        page.screenshot(path=str(artifacts / f"smollm2-step-{w}.png"))


def test_smollm2_head_bar_names_the_kv_groups(page, smol_page, artifacts):
    _open(page, smol_page, "#view=head&layer=20")
    assert page.inner_text("[data-testid=kv-note]") == ("grouped-query: 9 query heads read 3 k/v heads, 3 each "
                                                         "(k/v 0: q 0–2 · k/v 1: q 3–5 · k/v 2: q 6–8)")
    assert page.get_attribute("[data-testid=head-5]", "data-kv") == "1"
    assert "reads k/v head 1" in page.get_attribute("[data-testid=head-5]", "title")
    page.click("[data-testid=q-5]")
    hidden = page.eval_on_selector_all(".as-tok.k.hid-causal", "els => els.map(e => +e.dataset.j)")
    assert hidden == list(range(6, 14))


def test_tiny_gemma_window_is_shaded(page, tmp_path):
    from tests.models.decoders.tiny import gemma3
    m = attnscope.load(gemma3(tmp_path / "g3"))
    text = "A sliding window keeps each token's view short."
    path = tmp_path / "g.html"
    path.write_text(render(view_data(m, text)), encoding="utf-8")
    q = 14
    _open(page, path, f"#view=step&layer=0&head=3&query={q}")
    hidden = [int(page.get_attribute(f"[data-testid=step-row-{j}]", "data-hidden")) for j in range(q + 4)]
    assert hidden == [2] * (q - 5) + [0] * 6 + [1] * 3
    assert "outside the window (14 − j ≥ 6)" in page.inner_text("[data-testid=step-row-0]")
    tr = m.trace(text, names=["layers.0.attn.weights[3]"])
    shown = _values(page, "[data-testid=step-table] td[data-col=weight]")
    np.testing.assert_allclose(shown, tr["layers.0.attn.weights[3]"][0, q].double().numpy(), atol=2e-5)
    assert "query_pre_attn_scalar^(−1/2) = 24^(−1/2) (Gemma)" in page.inner_text("[data-testid=step-caption]")
    _open(page, path, f"#view=head&layer=0&query={q}")
    win = page.eval_on_selector_all(".as-tok.k.hid-window", "els => els.map(e => +e.dataset.j)")
    assert win == list(range(0, q - 5))
    _open(page, path, f"#view=head&layer=2&query={q}")  # the full layer: no window
    assert page.eval_on_selector_all(".as-tok.k.hid-window", "els => els.length") == 0


def test_generation_view_equals_the_models_steps(page, generation, artifacts):
    gen, path = generation
    _open(page, path)
    assert page.get_attribute("#attnscope-root", "data-view") == "generation"
    T = len(gen.new_ids)
    assert page.get_attribute("[data-testid=gen-slider]", "max") == str(T - 1)
    for t in (0, 3, T - 1):
        page.fill("[data-testid=gen-slider]", str(t))
        page.dispatch_event("[data-testid=gen-slider]", "input")
        for layer, head in ((0, -1), (17, 4), (29, 8)):
            page.select_option("[data-testid=gen-head]", str(head))
            page.select_option("[data-testid=gen-layer]", str(layer))
            shown = _values(page, "[data-testid=gen-table] td[data-col=weight]")
            att = gen.attentions[t][layer].double().numpy()  # (H, n_prompt + t): the cached step's own weights
            want = att.mean(0) if head < 0 else att[head]
            np.testing.assert_allclose(shown, want, atol=2e-5, err_msg=f"step {t} layer {layer} head {head}")
        assert page.inner_text("[data-testid=gen-step-label]").startswith(f"step {t + 1} / {T}")
    # a generated token is a link to its step
    page.click(f"[data-testid=gen-tok-{gen.n_prompt + 1}]")
    assert page.get_attribute("[data-testid=gen-slider]", "value") == "1"
    assert "cur" in page.get_attribute(f"[data-testid=gen-tok-{gen.n_prompt + 1}]", "class")
    # a cell opens that layer's step view of the query
    box = page.locator("[data-testid=gen-map]").bounding_box()
    page.mouse.click(box["x"] + 64 + 3, box["y"] + 18 * 5 + 9)
    assert page.get_attribute("#attnscope-root", "data-view") == "step"
    assert page.input_value("[data-testid=query-select]") == str(gen.n_prompt)
    for w, h in SIZES:
        _open(page, path, "#view=generation&step=4&ghead=-1", (w, h))
        page.screenshot(path=str(artifacts / f"generation-en-{w}.png"))


def test_generation_view_in_chinese_with_gemma(page, tmp_path, artifacts, installed_model):
    g = installed_model("gemma-3-270m")
    gen = g.generate("我喜欢人工智能，因为", max_new_tokens=6, attentions=True)
    path = tmp_path / "gen_zh.html"
    save_generation_html(g, gen, path)
    _open(page, path, "#view=generation&step=3&ghead=2")
    toks = page.eval_on_selector_all("[data-testid=gen-tokens] .as-gtok", "els => els.map(e => e.textContent)")
    assert "".join(toks).startswith("<bos>我喜欢人工智能")
    page.select_option("[data-testid=gen-layer]", "5")
    np.testing.assert_allclose(_values(page, "[data-testid=gen-table] td[data-col=weight]"),
                               gen.attentions[3][5, 2].double().numpy(), atol=2e-5)
    for w, h in SIZES:
        page.set_viewport_size({"width": w, "height": h})
        page.screenshot(path=str(artifacts / f"generation-zh-{w}.png"))


def test_served_page_with_smollm2(page, smollm2, artifacts):
    from tests.server.live import live_server

    with live_server("--model", "smollm2-135m", timeout=180) as (url, _):
        page.set_viewport_size({"width": 1400, "height": 1000})
        page.goto(url)
        page.fill("[data-testid=text-input]", TEXT)
        page.click("[data-testid=submit]")
        wait_ready(page, 120_000)
        assert "grouped-query" in page.inner_text("[data-testid=kv-note]")
        page.dblclick("[data-testid=q-13]")
        page.select_option("[data-testid=layer-select]", "17")
        page.select_option("[data-testid=focus-head-select]", "3")
        ref = _by_hand(smollm2, TEXT, 17, 3, 13)
        np.testing.assert_allclose(_values(page, "[data-testid=step-table] td[data-col=weight]"), ref["weights"],
                                   rtol=1e-12, atol=1e-15)
        assert page.locator("[data-testid=rotation-table] tbody tr").count() == 32
        page.screenshot(path=str(artifacts / "served-smollm2-step.png"))
