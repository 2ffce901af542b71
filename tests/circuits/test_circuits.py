"""QK/OV circuits, the copying score and the composition scores against float64 NumPy written
another way: the weights read from transformers' own model of the same checkpoint (GPT-2's fused
Conv1D c_attn, Llama's q/k/v/o_proj with grouped k/v heads), the norm scales multiplied in by hand,
every circuit formed as a full d × d matrix, the copying score from the eigenvalues of the whole
vocab × vocab matrix W_E W_OV W_U; rotary from q and k turned by the textbook formula."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnscope
import tests.models.decoders.tiny  # noqa: F401  (registers the decoder families)
from attnscope.circuits import (
    Factored,
    composition_score,
    composition_scores,
    copying_score,
    copying_scores,
    head_weights,
    ov_circuit,
    qk_circuit,
)
from attnscope.errors import InputError
from attnscope.testing.tiny import FAMILIES
from tests.models.decoders.tiny import hf_model

RTOL = 1e-6


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("circuits")
    cache: dict = {}

    def get(name):
        if name not in cache:
            folder = FAMILIES[name].build(root / name)
            cache[name] = (attnscope.load(folder), hf_model(folder, dtype=torch.float64))
        return cache[name]
    return get


def np64(t) -> np.ndarray:
    return t.detach().double().cpu().numpy()


def reference(name, hf, fold: bool = True) -> dict:
    """Per (layer, head): W_QK and W_OV (d, d) from transformers' weights, and W_E (V, d), W_U (d, V)."""
    sd = {k: np64(v) for k, v in hf.state_dict().items()}
    c = hf.config
    out: dict = {"QK": {}, "OV": {}}
    if name == "gpt2":
        d, H = c.n_embd, c.n_head
        dh, group = d // H, 1
        E, gf = sd["transformer.wte.weight"], sd["transformer.ln_f.weight"]
        U = sd["lm_head.weight"].T  # (d, V): tied to wte
        for l in range(c.n_layer):
            p = f"transformer.h.{l}."
            W, Wo = sd[p + "attn.c_attn.weight"], sd[p + "attn.c_proj.weight"]  # (d, 3d) x@W; (d, d)
            g = sd[p + "ln_1.weight"] if fold else np.ones(d)
            for h in range(H):
                cols = slice(h * dh, (h + 1) * dh)
                Wq, Wk, Wv = (np.diag(g) @ W[:, s * d:(s + 1) * d][:, cols] for s in range(3))
                out["QK"][l, h] = Wq @ Wk.T
                out["OV"][l, h] = Wv @ Wo[cols, :]
    else:  # Llama: q_proj (H·dh, d), k_proj/v_proj (H_kv·dh, d), o_proj (d, H·dh), x @ Wᵀ
        d, H, Hkv = c.hidden_size, c.num_attention_heads, c.num_key_value_heads
        dh, group = c.head_dim, H // Hkv
        E, gf = sd["model.embed_tokens.weight"], sd["model.norm.weight"]
        U = sd["lm_head.weight"].T
        for l in range(c.num_hidden_layers):
            p = f"model.layers.{l}."
            g = sd[p + "input_layernorm.weight"] if fold else np.ones(d)
            for h in range(H):
                kv = h // group
                Wq = np.diag(g) @ sd[p + "self_attn.q_proj.weight"][h * dh:(h + 1) * dh].T
                Wk = np.diag(g) @ sd[p + "self_attn.k_proj.weight"][kv * dh:(kv + 1) * dh].T
                Wv = np.diag(g) @ sd[p + "self_attn.v_proj.weight"][kv * dh:(kv + 1) * dh].T
                out["QK"][l, h] = Wq @ Wk.T
                out["OV"][l, h] = Wv @ sd[p + "self_attn.o_proj.weight"][:, h * dh:(h + 1) * dh].T
                out["Wq", l, h], out["Wk", l, h] = Wq, Wk
    out["E"], out["U"] = E, (np.diag(gf) @ U if fold else U)
    return out


def rel(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


@pytest.mark.parametrize("name", ["gpt2", "llama_gqa"])
@pytest.mark.parametrize("fold", [True, False])
def test_qk_and_ov_circuits_equal_the_full_matrices(built, name, fold):
    m, hf = built(name)
    ref = reference(name, hf, fold)
    for (l, h), want in ref["QK"].items():
        qk = qk_circuit(m, l, h, fold_norm=fold)
        assert isinstance(qk, Factored) and qk.shape == want.shape and qk.inner == m.config.d_head
        assert rel(qk.full(), want) <= RTOL
        assert rel(ov_circuit(m, l, h, fold_norm=fold).full(), ref["OV"][l, h]) <= RTOL
        assert float(qk.norm()) == pytest.approx(np.linalg.norm(want), rel=RTOL)
        assert float(qk.entry(3, 5)) == pytest.approx(want[3, 5], rel=RTOL, abs=1e-12)


def test_grouped_query_heads_read_their_kv_head(built):
    m, _ = built("llama_gqa")  # 8 query heads on 2 k/v heads: heads 0–3 read k/v head 0, 4–7 head 1
    w = [head_weights(m, 0, h) for h in range(8)]
    assert [x.kv_head for x in w] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert torch.equal(w[1].W_K, w[2].W_K) and not torch.equal(w[3].W_K, w[4].W_K)
    assert w[0].folded == ("ln1",) and w[0].b_Q is None and w[0].rotary


def test_factored_svd_eigenvalues_transpose_and_product():
    g = torch.Generator().manual_seed(0)
    L, R = torch.randn(12, 3, generator=g, dtype=torch.float64), torch.randn(3, 12, generator=g, dtype=torch.float64)
    f = Factored(L, R)
    M = (L @ R).numpy()
    U, S, Vh = f.svd()
    assert np.allclose(S.numpy(), np.linalg.svd(M, compute_uv=False)[:3], rtol=1e-12)
    assert np.allclose((U * S) @ Vh, M, atol=1e-12)
    lam = np.linalg.eigvals(M)
    big = lam[np.argsort(-np.abs(lam))[:3]]
    assert np.allclose(np.sort_complex(f.eigenvalues().numpy()), np.sort_complex(big), atol=1e-10)
    assert np.allclose(f.T.full().numpy(), M.T) and float(f.norm()) == pytest.approx(np.linalg.norm(M), rel=1e-12)
    g2 = Factored(R.T, L.T)
    assert np.allclose((f @ g2).full().numpy(), M @ g2.full().numpy(), rtol=1e-12)
    with pytest.raises(Exception, match="same r"):
        Factored(L, R.T)


@pytest.mark.parametrize("name", ["gpt2", "llama_gqa"])
def test_copying_score_from_the_whole_vocab_matrix(built, name):
    m, hf = built(name)
    ref = reference(name, hf)
    got = copying_scores(m)
    for (l, h), W_OV in ref["OV"].items():
        full = ref["E"] @ W_OV @ ref["U"]  # (V, V): formed here, never in the package
        lam = np.linalg.eigvals(full)
        want = lam.real.sum() / np.abs(lam).sum()
        assert got[l, h] == pytest.approx(want, rel=RTOL)
        assert copying_score(m, l, h) == pytest.approx(want, rel=RTOL)


@pytest.mark.parametrize("name", ["gpt2", "llama_gqa"])
def test_composition_scores_equal_full_matrix_norms(built, name):
    m, hf = built(name)
    ref = reference(name, hf)
    n, H = m.config.n_layers, m.config.n_heads
    batch = {k: composition_scores(m, k).numpy() for k in "qkv"}
    for h1 in range(H):
        for h2 in range(H):
            A = ref["OV"][0, h1]
            for kind, B in (("q", ref["QK"][1, h2]), ("k", ref["QK"][1, h2].T), ("v", ref["OV"][1, h2])):
                want = np.linalg.norm(A @ B) / (np.linalg.norm(A) * np.linalg.norm(B))
                assert batch[kind][0, h1, 1, h2] == pytest.approx(want, rel=RTOL)
                if h1 == h2 or (h1, h2) == (0, H - 1):
                    assert composition_score(m, kind, (0, h1), (1, h2)) == pytest.approx(want, rel=RTOL)
    for k in "qkv":  # only later layers have a score
        assert np.isnan(batch[k][1]).all() and np.isnan(batch[k][0, :, 0]).all() and batch[k].shape == (n, H, n, H)
    # Elhage et al.'s column-vector form of the Q score, ‖W_QKᵀ W_OVᵀ‖ (theirs W_OV = ours transposed)
    A, B = ref["OV"][0, 1].T, ref["QK"][1, 2]
    paper = np.linalg.norm(B.T @ A) / (np.linalg.norm(B) * np.linalg.norm(A))
    assert composition_score(m, "q", (0, 1), (1, 2)) == pytest.approx(paper, rel=RTOL)


def rotate_np(x, pos, inv_freq):
    """The textbook rotary turn (Hugging Face's halves): x·cos + (−x₂, x₁)·sin at angle pos·ω."""
    ang = pos * np.concatenate([inv_freq, inv_freq])
    h = len(x) // 2
    return x * np.cos(ang) + np.concatenate([-x[h:], x[:h]]) * np.sin(ang)


def test_rotary_offset_is_q_dot_k_of_rotated_vectors(built):
    m, hf = built("llama_gqa")
    ref = reference("llama_gqa", hf)
    c = hf.config
    theta = c.rope_parameters["rope_theta"] if getattr(c, "rope_parameters", None) else c.rope_theta
    inv = 1.0 / theta ** (np.arange(0, c.head_dim, 2) / c.head_dim)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(c.hidden_size), rng.standard_normal(c.hidden_size)
    for l, h in ((0, 0), (1, 5)):
        Wq, Wk = ref["Wq", l, h], ref["Wk", l, h]
        assert rel(qk_circuit(m, l, h, offset=0).full(), ref["QK"][l, h]) <= 1e-12
        for qpos, kpos in ((7, 3), (5, 5), (40, 1), (2, 9)):
            want = rotate_np(x @ Wq, qpos, inv) @ rotate_np(y @ Wk, kpos, inv)
            got = x @ qk_circuit(m, l, h, offset=qpos - kpos).full().numpy() @ y
            assert got == pytest.approx(want, rel=RTOL)
    # and the model's own rotation (attnscope's Rotary tables in float64) agrees
    rot = m.rotary
    pos = torch.tensor([[3, 10]])
    cos, sin = rot.tables(pos, torch.float64)[0]  # (1, 1, 2, d_head)
    q = torch.tensor(x @ ref["Wq", 0, 1])[None, None, None].expand(1, 1, 2, -1)  # the same q at positions 3 and 10
    k = torch.tensor(y @ ref["Wk", 0, 1])[None, None, None].expand(1, 1, 2, -1)
    qr, kr = rot.rotate(q, cos, sin), rot.rotate(k, cos, sin)  # (1, 1, 2, d_head)
    got = x @ qk_circuit(m, 0, 1, offset=7).full().numpy() @ y
    assert got == pytest.approx(float(qr[0, 0, 1] @ kr[0, 0, 0]), rel=RTOL)


def test_qk_norm_and_embedding_scale_are_folded(built):
    m, _ = built("gemma3")  # QK-norm per head (1 + w), embeddings × √d
    w = head_weights(m, 0, 1)
    assert w.folded == ("ln1", "q_norm", "k_norm")
    attn = m.layers[0].attn
    raw = attn.head_weights(1)
    g = 1.0 + np64(m.layers[0].ln1.weight)
    gq, gk = 1.0 + np64(attn.q_norm.weight), 1.0 + np64(attn.k_norm.weight)
    assert rel(np64(w.W_Q), np.diag(g) @ np64(raw["W_Q"]) @ np.diag(gq)) <= 1e-12
    assert rel(np64(w.W_K), np.diag(g) @ np64(raw["W_K"]) @ np.diag(gk)) <= 1e-12
    assert w.scale == pytest.approx(24 ** -0.5)


@pytest.mark.parametrize("call, words", [
    (lambda m: qk_circuit(m, 2, 0), "layer 2 is out of range: the model has 2 layers"),
    (lambda m: ov_circuit(m, 0, 4), "head 4 is out of range: the model has 4 heads"),
    (lambda m: qk_circuit(m, 0, 0, offset=3), "has none"),
    (lambda m: composition_score(m, "q", (1, 0), (1, 2)), "must be in a later layer"),
    (lambda m: composition_score(m, "x", (0, 0), (1, 2)), "is not a kind of composition"),
    (lambda m: qk_circuit(m, "1", 0), "must be an integer"),
])
def test_bad_input_is_one_sentence(built, call, words):
    m, _ = built("gpt2")
    with pytest.raises(InputError) as e:
        call(m)
    assert words in str(e.value) and "\n" not in str(e.value) and "Traceback" not in str(e.value)


def test_bad_offset_is_one_sentence(built):
    m, _ = built("llama_gqa")
    with pytest.raises(InputError, match="must be a whole number"):
        qk_circuit(m, 0, 0, offset=1.5)
