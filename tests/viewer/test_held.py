"""Texts the server holds (attnscope.viewer.held): every number a view reads on demand equals a
NumPy float64 computation written here (rotary pairs turned by rotate_half, the mask, softmax), the
model's recorded weights and Trace.weights (the blockwise kernel on the model's own rotated q, k);
the colour paths (max-pooled cells, head-view lines, thumbnails) follow their documented rules; an
8 192-token text never builds a full weight matrix."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import attnscope
from attnscope import InputError
from attnscope.viewer import data
from attnscope.viewer.held import LINE_BUDGET, MAX_ROW_VALUES, HeldText
from attnscope.viewer.held_api import held_view_data
from attnscope.viewer.held_store import TextStore
from attnscope.viewer.run import display_tokens

TEXT = "我喜欢人工智能 the bank of the river, and every token looks at the tokens before it. " * 3
DECODER_TEXT = "A sliding window keeps each token's view to the most recent few tokens. " * 2


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from tests.models.decoders import tiny as T
    root = tmp_path_factory.mktemp("tiny-held")
    return {name: attnscope.load(getattr(T, name)(root / name)) for name in ("gemma3", "llama_gqa")}


# ---- the reference, in NumPy float64 ------------------------------------------------------------
def rotate_half(x, base):
    """HF's rotary form (x·cos + rotate_half(x)·sin, angles position · base^(−2i/d)), float64."""
    n, d = x.shape
    ang = np.arange(n)[:, None] * base ** (-np.arange(0, d, 2) / d)[None, :]  # (n, d/2)
    cos, sin = np.cos(np.concatenate([ang, ang], -1)), np.sin(np.concatenate([ang, ang], -1))
    return x * cos + np.concatenate([-x[:, d // 2:], x[:, : d // 2]], -1) * sin


CASES = {  # model: (q step, k step, factor, causal, windows, rotary bases per layer)
    "minilm": ("q", "k", 32 ** -0.5, False, [None] * 6, None),
    "llama_gqa": ("q_proj", "k_proj", 8 ** -0.5, True, [None, None], [10000.0, 10000.0]),
    "gemma3": ("q_normed", "k_normed", 24 ** -0.5, True, [6, 6, None], [10000.0, 10000.0, 1e6]),
}


def reference(tr, case, layer):
    """Weights (H, n, n), the operands q′, k′ per query head (H, n, d) and v per query head."""
    qs, ks, factor, causal, windows, bases = case
    q, k, v = (tr.step(layer, s, text=0).double().numpy() for s in (qs, ks, "v"))
    g = q.shape[0] // k.shape[0]
    k, v = np.repeat(k, g, axis=0), np.repeat(v, g, axis=0)
    if bases is not None:
        q = np.stack([rotate_half(x, bases[layer]) for x in q])
        k = np.stack([rotate_half(x, bases[layer]) for x in k])
    n = q.shape[1]
    s = np.einsum("hid,hjd->hij", q, k) * factor
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    ok = np.ones((n, n), bool)
    if causal:
        ok &= j <= i
        if windows[layer] is not None:
            ok &= i - j < windows[layer]
    s = np.where(ok, s, -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True), q, k, v, ok


def held_of(model, text, case):
    qs, ks = case[:2]
    tr = model.trace([text], names=[f"layers.*.attn.{s}" for s in (qs, ks, "v")])
    return tr, HeldText(tr, display_tokens(model, tr.text_tokens(0)))


@pytest.fixture(scope="module")
def models(minilm, tiny):
    return {"minilm": (minilm, TEXT), "llama_gqa": (tiny["llama_gqa"], DECODER_TEXT),
            "gemma3": (tiny["gemma3"], DECODER_TEXT)}


@pytest.mark.parametrize("name", list(CASES))
def test_rows_and_steps_equal_float64_numpy_the_recorded_weights_and_trace_weights(models, name):
    model, text = models[name]
    case = CASES[name]
    tr, h = held_of(model, text, case)
    full = model.trace([text])  # every weight recorded (float32, the model's own softmax)
    n = h.n
    assert n > 40
    for layer in range(model.config.n_layers):
        W, q, k, v, ok = reference(tr, case, layer)
        heads = list(range(model.config.n_heads))
        rows = h.rows(layer, heads, 0, n)  # (H, n, n) float64
        np.testing.assert_allclose(rows, W, rtol=0, atol=1e-12)
        np.testing.assert_allclose(rows, full.step(layer, "weights", text=0).double().numpy(), rtol=0, atol=2e-5)
        # Trace.weights: the blockwise kernel from the model's own (float32-rotated) q and k
        np.testing.assert_allclose(rows, tr_weights(model, text, layer), rtol=0, atol=2e-5)
        part = h.rows(layer, [heads[-1], 0], 5, 9)
        np.testing.assert_allclose(part, rows[[heads[-1], 0], 5:9], rtol=0, atol=1e-15)
        for head, query in ((0, 0), (heads[-1], n - 1), (1, n // 2)):
            st = h.steps(layer, head, query)
            raw = q[head, query] @ k[head].T
            np.testing.assert_allclose(st["raw"], raw, rtol=1e-13, atol=1e-13)
            np.testing.assert_array_equal(np.isinf(st["scaled"]), ~ok[query])
            np.testing.assert_allclose(st["weights"], W[head, query], rtol=0, atol=1e-13)
            np.testing.assert_allclose(st["out"], W[head, query] @ v[head], rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(st["exp"].sum(), st["sum"], rtol=1e-13)
            np.testing.assert_allclose(st["q_rot"], q[head, query], rtol=1e-13, atol=1e-13)
        vec = h.vectors(layer, 1, [0, n - 1])
        np.testing.assert_allclose(vec["k_rot"], k[1][[0, n - 1]], rtol=1e-13, atol=1e-13)
        np.testing.assert_array_equal(vec["q_pre"], tr.step(layer, case[0], 1, text=0).double().numpy()[[0, n - 1]])


def tr_weights(model, text, layer):
    tr = model.trace([text], names=[f"layers.{layer}.attn.{s}" for s in ("q", "k")])
    return tr.weights(layer, text=0).double().numpy()


@pytest.mark.parametrize("name", ["minilm", "gemma3"])
def test_heatmap_is_the_max_over_each_cells_block(models, name):
    model, text = models[name]
    tr, h = held_of(model, text, CASES[name])
    n = h.n
    W = reference(tr, CASES[name], 1)[0][2]
    for q0, q1, k0, k1, R, C in ((0, n, 0, n, 7, 5), (3, 40, 10, 30, 100, 100), (0, n, 0, n, n, n)):
        m = h.heatmap(1, 2, q0, q1, k0, k1, R, C)
        re, ce = m["row_edges"], m["col_edges"]
        Rr, Cc = min(R, q1 - q0), min(C, k1 - k0)
        assert re == [q0 + (r * (q1 - q0)) // Rr for r in range(Rr + 1)]
        assert ce == [k0 + (c * (k1 - k0)) // Cc for c in range(Cc + 1)]
        want = np.array([[W[re[r]:re[r + 1], ce[c]:ce[c + 1]].max() for c in range(Cc)] for r in range(Rr)])
        assert m["grid"].shape == (Rr, Cc) and m["grid"].dtype == np.float32
        np.testing.assert_allclose(m["grid"], want, rtol=0, atol=2e-6)  # colours: float32
    with pytest.raises(InputError, match="rows must be in 1..4096"):
        h.heatmap(1, 2, 0, n, 0, n, 0, 10)
    with pytest.raises(InputError, match=r"keys 0..\d+ are out of range"):
        h.heatmap(1, 2, 0, n, 0, n + 1, 10, 10)


@pytest.mark.parametrize("name", ["minilm", "llama_gqa"])
def test_lines_follow_the_pages_rule_and_thumbnails_the_pages_cells(models, name):
    model, text = models[name]
    tr, h = held_of(model, text, CASES[name])
    W = reference(tr, CASES[name], 0)[0]  # (H, n, n)
    for heads, budget in ((list(range(model.config.n_heads)), 300), ([1], 50), ([0, 2], LINE_BUDGET)):
        got = h.lines(0, heads, budget)
        w = W[heads]
        bins = np.bincount(np.minimum(np.floor(w[w > 0] * 1000).astype(int), 1000), minlength=1001)
        kept, b = int(bins.sum()), 0  # the page's rule (viewer.js minWeight), on float64 weights
        while kept > budget and b < 1000:
            kept -= bins[b]
            b += 1
        assert got["minw"] == pytest.approx(b / 1000, abs=1.001e-3)
        want = {(heads[x], i, j) for x, i, j in zip(*np.nonzero((w >= got["minw"]) & (w > 0)))}
        mine = set(zip(got["head"].tolist(), got["query"].tolist(), got["key"].tolist()))
        near = {(heads[x], i, j) for x, i, j in zip(*np.nonzero(np.abs(w - got["minw"]) < 1e-6))}
        assert mine ^ want <= near and len(mine) <= max(budget, 1) + len(near)
        np.testing.assert_allclose(got["weight"], W[got["head"], got["query"], got["key"]], atol=2e-6)
    th = h.thumbnails(0)
    assert th.shape == data.thumbnails(W).shape and np.abs(th.astype(int) - data.thumbnails(W).astype(int)).max() <= 1


def test_bad_requests_name_the_problem(models):
    model, text = models["minilm"]
    _, h = held_of(model, text, CASES["minilm"])
    with pytest.raises(InputError, match="layer 6 is out of range: there are 6 layers"):
        h.rows(6, [0], 0, 1)
    with pytest.raises(InputError, match="head 12 is out of range"):
        h.rows(0, [12], 0, 1)
    with pytest.raises(InputError, match=rf"query rows 0..{h.n} are out of range: the text has {h.n} tokens"):
        h.rows(0, [0], 0, h.n + 1)
    with pytest.raises(InputError, match="query token .* out of range"):
        h.steps(0, 0, h.n)
    with pytest.raises(InputError, match="ask for at most"):
        h.rows(0, [0] * (MAX_ROW_VALUES // (h.n * h.n) + 1), 0, h.n)


def test_store_keeps_the_latest_texts_within_its_bytes(models):
    model, text = models["minilm"]
    helds = [held_of(model, t, CASES["minilm"])[1] for t in (text, text + " again", text + " once more")]
    store = TextStore(int(helds[0].nbytes * 2.5))
    for i, h in enumerate(helds):
        store.put(str(i), h)
    assert store.get("0") is None and store.get("1") is helds[1] and store.get("2") is helds[2]
    one = TextStore(1)  # the newest always stays
    one.put("a", helds[0])
    assert one.get("a") is helds[0]
    cfg = model.config  # exactly q, k, v of every layer, float32
    assert helds[0].nbytes == cfg.n_layers * 3 * cfg.n_heads * helds[0].n * cfg.d_head * 4


def test_page_data_of_a_held_text_and_texts_beyond_the_context(models, tiny):
    model, text = models["minilm"]
    store = TextStore(1 << 30)
    d = held_view_data(model, store, text, ship=0)
    entry = d["texts"][0]
    assert set(entry) == {"text", "tokens", "remote"} and entry["remote"]["n"] == len(entry["tokens"])
    assert store.get(entry["remote"]["id"]).tokens == entry["tokens"]
    shipped = held_view_data(model, store, text)  # 512 tokens and fewer travel whole
    assert set(shipped["texts"][0]) >= {"q", "k", "v", "thumbs"}
    assert {k: v for k, v in d.items() if k != "texts"} == {k: v for k, v in shipped.items() if k != "texts"}
    with pytest.raises(InputError, match=r"the text has 602 tokens, longer than the model's limit of 512 positions"):
        held_view_data(model, store, "word " * 600, ship=0)
    c = held_view_data(model, store, text, compare="I deposited money at the bank", ship=0)
    assert c["compare"]["token"] == "the" and len(c["texts"]) == 2 and all("remote" in t for t in c["texts"])


MEMORY = """
import resource, sys
sys.path.insert(0, {root!r})
import numpy as np
from transformers import LlamaConfig, LlamaForCausalLM
from tests.models.decoders.tiny import randomise, _save, VOCAB, _COMMON
import attnscope
from attnscope.viewer.held_store import TextStore
from attnscope.viewer.held_api import held_view_data

cfg = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=8, **dict(_COMMON, max_position_embeddings=8192))
m = LlamaForCausalLM(cfg); randomise(m, 5); _save(m, {folder!r}, VOCAB)
model = attnscope.load({folder!r})
words = "Every token looks at the tokens before it and decides how much to listen.".split()
text = " ".join(words[i % len(words)] for i in range(2900))
rss = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
base = rss()
store = TextStore(1 << 30)
h = store.get(held_view_data(model, store, text, ship=0)["texts"][0]["remote"]["id"])
h.heatmap(1, 3, 0, h.n, 0, h.n, 1024, 1024)
h.lines(1, [0, 1, 2, 3])
h.thumbnails(0)
r = h.rows(1, [2], h.n - 64, h.n)
s = h.steps(0, 1, h.n - 1)
assert abs(r.sum(-1) - 1).max() < 1e-12 and abs(s["weights"].sum() - 1) < 1e-12
print(h.n, h.nbytes, rss() - base)
"""


def test_an_8192_token_text_never_builds_a_full_weight_matrix(tmp_path):
    """In a fresh process: trace and hold a ~8 100-token text of a tiny Llama (2 layers × 4 heads,
    8 192 positions), then draw its heatmap, lines and thumbnails and read rows and a step. All
    weights at once would be 2 × 4 × n² float32 = 2.1 GB, one head's in float64 0.5 GB; the peak
    growth stays under 400 MB."""
    from pathlib import Path
    root = str(Path(__file__).resolve().parents[2])
    script = textwrap.dedent(MEMORY).format(root=root, folder=str(tmp_path / "llama8k"))
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=1200)
    assert out.returncode == 0, out.stderr[-3000:]
    n, nbytes, grew = out.stdout.split()[-3:]
    n, nbytes, grew = int(n), int(nbytes), float(grew)
    assert 8000 <= n <= 8192
    assert nbytes == 2 * (4 + 2 + 2) * n * 8 * 4  # q, k, v of both layers, nothing else held
    assert grew < 400, f"peak memory grew by {grew:.0f} MB for n = {n}"


def test_held_weights_of_a_block_equal_the_tiled_kernel(models):
    """The batched block product agrees with the blockwise kernel's selected rows on the same
    float64 operands."""
    from attnscope.blockwise import attention_weights
    model, text = models["gemma3"]
    _, h = held_of(model, text, CASES["gemma3"])
    for layer in range(3):
        q, k = h.operands(layer, 3)
        mask = torch.from_numpy(h.allowed(layer, 0, h.n))[None]
        want = attention_weights(torch.from_numpy(q)[None], torch.from_numpy(k)[None], mask, scale=h.factor)[0]
        np.testing.assert_allclose(h.rows(layer, [3], 0, h.n)[0], want.numpy(), rtol=0, atol=1e-14)
