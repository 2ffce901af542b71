"""Multi-head attention by hand (explain/multihead.py) against independent references:
torch.nn.MultiheadAttention (the fused in_proj_weight is W_QKVᵀ, out_proj W_Oᵀ),
F.scaled_dot_product_attention with enable_gqa for grouped-query heads, and NumPy float64 written
here (the fused product, its view/transpose, each head alone with its own W_Q^(i)); every number
is looked for in Markdown (English and Chinese), rich and JSON."""

import copy
import json
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnscope.examples import GROUPED_QUERY, MULTI_HEAD
from attnscope.explain import explain

from .reference import half_up


def torch_mha(spec):
    """(weights (H, L, L), per-head z (H, L, d_v), Y) of nn.MultiheadAttention in float64."""
    X = torch.tensor(spec["X"], dtype=torch.float64)[None]  # (1, L, d_model)
    W = torch.tensor(spec["W_QKV"], dtype=torch.float64)  # (d_model, 3·d_model)
    WO = torch.tensor(spec["W_O"], dtype=torch.float64)
    d, H = X.shape[-1], spec["n_heads"]
    mha = torch.nn.MultiheadAttention(d, H, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(W.T)  # nn.Linear stores (out, in): rows [W_Q | W_K | W_V]ᵀ
        mha.out_proj.weight.copy_(WO.T)
    mask = None
    if spec.get("causal"):
        mask = torch.triu(torch.ones(X.shape[1], X.shape[1], dtype=torch.bool), 1)
    y, w = mha(X, X, X, need_weights=True, average_attn_weights=False, attn_mask=mask)
    # the per-head z, from the module's own projections: q, k, v = in_proj(X).chunk(3), heads by view
    q, k, v = F.linear(X, mha.in_proj_weight).chunk(3, dim=-1)
    L = X.shape[1]
    q, k, v = (t.view(1, L, H, d // H).transpose(1, 2) for t in (q, k, v))  # (1, H, L, d_head)
    z = F.scaled_dot_product_attention(q, k, v, attn_mask=None if mask is None else ~mask)
    return w[0].detach().numpy(), z[0].detach().numpy(), y[0].detach().numpy()


def torch_gqa(spec):
    """(weights, z, Y) with F.scaled_dot_product_attention(enable_gqa=True), causal."""
    X = torch.tensor(spec["X"], dtype=torch.float64)
    Wq, Wk, Wv, WO = (torch.tensor(spec[k], dtype=torch.float64) for k in ("W_Q", "W_K", "W_V", "W_O"))
    H, Hkv, L = spec["n_heads"], spec["n_kv_heads"], X.shape[0]
    q = (X @ Wq).view(L, H, -1).transpose(0, 1)[None]  # (1, H, L, d)
    k = (X @ Wk).view(L, Hkv, -1).transpose(0, 1)[None]  # (1, H_kv, L, d)
    v = (X @ Wv).view(L, Hkv, -1).transpose(0, 1)[None]
    z = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)[0]  # (H, L, d_v)
    kr = k[0].repeat_interleave(H // Hkv, 0)  # (H, L, d): query head h reads k/v head h // group
    s = q[0] @ kr.transpose(-1, -2) / q.shape[-1] ** 0.5
    s = s.masked_fill(torch.triu(torch.ones(L, L, dtype=torch.bool), 1), float("-inf"))
    w = torch.softmax(s, -1)
    y = z.transpose(0, 1).reshape(L, -1) @ WO
    return w.numpy(), z.numpy(), y.numpy()


@pytest.fixture(scope="module")
def mh():
    return explain(example="multi-head")


@pytest.fixture(scope="module")
def gqa():
    return explain(example="grouped-query")


def test_every_head_equals_torch_multihead_attention(mh):
    w, z, y = torch_mha(MULTI_HEAD)
    np.testing.assert_allclose(mh.values["weights"], w, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(mh.values["output"], z, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(mh.values["projected"], y, rtol=1e-13, atol=1e-15)
    # concat is the heads side by side: the same numbers, re-indexed
    np.testing.assert_array_equal(mh.values["concat"], np.concatenate(list(mh.values["output"]), axis=1))
    # the heads attend differently, or the example would teach nothing
    assert np.abs(mh.values["weights"][0] - mh.values["weights"][1]).max() > 0.3


def test_causal_multihead_equals_torch():
    spec = dict(copy.deepcopy(MULTI_HEAD), causal=True)
    got = explain(spec)
    w, z, y = torch_mha(spec)
    np.testing.assert_allclose(got.values["weights"], w, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(got.values["projected"], y, rtol=1e-13, atol=1e-15)


def test_grouped_query_equals_sdpa_with_enable_gqa(gqa):
    w, z, y = torch_gqa(GROUPED_QUERY)
    np.testing.assert_allclose(gqa.values["weights"], w, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(gqa.values["output"], z, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(gqa.values["projected"], y, rtol=1e-13, atol=1e-15)
    assert gqa.meta["kv_heads"] == [0, 0, 1, 1]


def test_fused_product_view_transpose_and_each_head_alone(mh):
    X, W = np.array(MULTI_HEAD["X"], float), np.array(MULTI_HEAD["W_QKV"], float)
    fused = X @ W  # (3, 12): small integers and halves, exact in float64
    np.testing.assert_array_equal(mh.values["QKV"], fused)
    L, H, d = 3, 2, 2
    for i, name in enumerate("QKV"):
        block = fused[:, i * H * d:(i + 1) * H * d]
        heads = block.reshape(L, H, d).transpose(1, 0, 2)  # the view/transpose: (H, L, d)
        np.testing.assert_array_equal(mh.values[f"{name.lower()}_heads"], heads)
        for h in range(H):
            alone = X @ W[:, i * H * d + h * d:i * H * d + (h + 1) * d]  # head h with its own W^(h)
            np.testing.assert_array_equal(heads[h], alone)
    assert [o["max_abs_diff"] for o in mh.meta["own"]] == [0.0] * 6
    md = mh.render("markdown")
    # the re-indexing table: fused column → part, head, feature
    for col in range(12):
        part, h, f = "QKV"[col // 4], (col % 4) // 2, col % 2
        assert f"| {col} | {part} | {h} | {f} | {part}⁽{'⁰¹'[h]}⁾[:, {f}] |" in md
    # not a slice of the input: features 2–3 of 我 are [1, 0], its query in head 1 is [0, 1.5]
    assert "features 2–3 of 我 are [1, 0], but its query in head 1 is [0, 1.5000]" in md


def test_each_share_of_w_o_and_their_sum(mh):
    Wo = np.array(MULTI_HEAD["W_O"], float)
    z = mh.values["output"]
    shares = [z[h] @ Wo[2 * h:2 * h + 2] for h in range(2)]
    np.testing.assert_allclose(mh.values["shares"], shares, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(sum(shares), mh.values["projected"], rtol=1e-13, atol=1e-15)
    assert "Added up, the heads' shares give Y exactly." in mh.render("markdown")


def _numbers(text):
    return set(re.findall(r"-?\d+\.\d+", text))


def numpy_heads(spec):
    """Every number of the calculation, NumPy float64 written here: the projections, each head's
    scores, scaled scores, exponentials, row sums, weights, output, the concatenation, Y and the shares."""
    X = np.array(spec["X"], float)
    H = spec["n_heads"]
    Hkv = spec.get("n_kv_heads", H)
    if "W_QKV" in spec:
        W = np.array(spec["W_QKV"], float)
        d = W.shape[1] // (H + 2 * Hkv)
        Wq, Wk, Wv = W[:, :H * d], W[:, H * d:(H + Hkv) * d], W[:, (H + Hkv) * d:]
    else:
        Wq, Wk, Wv = (np.array(spec[k], float) for k in ("W_Q", "W_K", "W_V"))
        d = Wq.shape[1] // H
    Q, K, V = X @ Wq, X @ Wk, X @ Wv
    L = X.shape[0]
    out = {"Q": Q, "K": K, "V": V, "scores": [], "scaled": [], "exp": [], "sums": [], "weights": [], "output": []}
    for h in range(H):
        g = h // (H // Hkv)
        q, k, v = Q[:, h * d:(h + 1) * d], K[:, g * d:(g + 1) * d], V[:, g * d:(g + 1) * d]
        s = q @ k.T
        sc = s / np.sqrt(d)
        if spec.get("causal"):
            sc = np.where(np.tril(np.ones((L, L))) > 0, sc, -np.inf)
        e = np.exp(sc)
        out["scores"].append(s)
        out["scaled"].append(sc)
        out["exp"].append(e)
        out["sums"].append(e.sum(1))
        out["weights"].append(e / e.sum(1, keepdims=True))
        out["output"].append(out["weights"][-1] @ v)
    out["concat"] = np.concatenate(out["output"], axis=1)
    Wo = np.array(spec["W_O"], float)
    out["projected"] = out["concat"] @ Wo
    out["shares"] = [out["output"][h] @ Wo[h * d:(h + 1) * d] for h in range(H)]
    return out


def test_numpy_reference_agrees_with_torch():
    for spec, ref in ((MULTI_HEAD, torch_mha), (GROUPED_QUERY, torch_gqa)):
        w, z, y = ref(spec)
        mine = numpy_heads(spec)
        np.testing.assert_allclose(mine["weights"], w, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(mine["output"], z, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(mine["projected"], y, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("fmt", ["markdown", "rich"])
def test_every_number_is_printed(mh, gqa, lang, fmt):
    """Each number of the independent reference, rounded half-up, is in the text."""
    for worked, spec in ((mh, MULTI_HEAD), (gqa, GROUPED_QUERY)):
        text = worked.render(fmt, lang=lang, decimals=4)
        nums = _numbers(text)
        ref = numpy_heads(spec)
        for name in ("Q", "K", "V", "scores", "scaled", "exp", "sums", "weights", "output", "concat", "projected",
                     "shares"):
            for x in np.asarray(ref[name], dtype=float).ravel():
                if np.isfinite(x) and x != 0 and not float(x).is_integer():
                    assert half_up(x, 4) in nums, (worked.meta["name"], fmt, lang, name, x)
        np.testing.assert_allclose(worked.values["sums"], ref["sums"], rtol=1e-13)
        np.testing.assert_allclose(worked.values["exp"], ref["exp"], rtol=1e-13)
        np.testing.assert_allclose(worked.values["shares"], ref["shares"], rtol=1e-13, atol=1e-15)


def test_words_in_both_languages(mh, gqa):
    en, zh = mh.render("markdown"), mh.render("markdown", lang="zh")
    assert "## Step 1: one fused projection [Q | K | V] = X W_QKV" in en
    assert "into heads: view and transpose (no arithmetic)" in en and "W_Q⁽ⁱ⁾" in en
    assert "## Step 4: head 0: its q, k, v" in en and "head 1: softmax weights" in en
    assert "## 第 1 步：一次融合投影" in zh and "没有计算" in zh and "头 1：" in zh
    assert "Step" not in zh and "head 0" not in zh
    g = gqa.render("markdown")
    assert "Grouped-query attention: 4 query heads share 2 key/value heads" in g
    assert "Query head 3 takes columns 6–7 of Q and reads key/value head 1" in g
    tex = mh.render("latex", lang="zh")
    assert tex.count(r"\begin{document}") == 1 and r"W_Q^{(1)}" in tex


def test_json_holds_every_head(mh):
    d = json.loads(mh.render("json"))
    w, z, y = torch_mha(MULTI_HEAD)
    np.testing.assert_allclose(np.array(d["values"]["weights"]), w, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(np.array(d["values"]["projected"]), y, rtol=1e-13, atol=1e-15)
    assert d["kind"] == "multihead" and d["meta"]["n_heads"] == 2 and d["meta"]["fused"] is True
    keys = [s["key"] for s in d["steps"]]
    assert keys[:4] == ["fused", "split", "own", "head0.qkv"] and keys[-3:] == ["concat", "projected", "meaning"]
    assert "head1.weights" in keys and "head0.given_qkv" not in keys


def test_separate_matrices_equal_the_fused_ones(mh):
    spec = copy.deepcopy(MULTI_HEAD)
    W = np.array(spec.pop("W_QKV"))
    spec.update(W_Q=W[:, :4].tolist(), W_K=W[:, 4:8].tolist(), W_V=W[:, 8:].tolist())
    got = explain(spec)
    for name in ("Q", "K", "V", "weights", "output", "concat", "projected"):
        np.testing.assert_array_equal(got.values[name], mh.values[name])
    assert got.steps[0].key == "project" and "QKV" not in got.values


def test_head_key_keeps_the_single_head_calculation():
    """With head: h (and no W_O/W_QKV) a toy input still works one head, as before."""
    spec = {k: v for k, v in GROUPED_QUERY.items() if k not in ("W_O", "name")}
    spec["head"] = 2
    w = explain(spec)
    assert w.kind == "toy" and w.meta["head"] == 2
    ref = torch_gqa(GROUPED_QUERY)[0][2]
    np.testing.assert_allclose(w.values["weights"], ref, rtol=1e-13, atol=1e-15)


def test_masked_scores_of_every_head_in_json(gqa):
    d = json.loads(gqa.render("json"))
    masked = d["values"]["masked"]  # (H, L, L), −∞ as null
    for h in range(4):
        for i in range(3):
            assert [x is None for x in masked[h][i]] == [j > i for j in range(3)]
    assert "masked" not in explain(example="multi-head").values  # nothing hidden there
