"""The decoder trace names mean what the table says: projections, QK-norm, rotation, k and v with
their own head count, the mask, weights per query head; ``[h]`` on a k/v name is the shared k/v
head of query head h; the read API recomputes weights from q and k with GQA, windows and Gemma's
scale; hooks on the new names replace what flows on."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from attnscope.positions import Rotary

TEXT = "我喜欢人工智能。北京是中国的首都。 A sliding window keeps each token's view to the most recent few tokens."


def test_shapes_and_what_each_step_is(decoders):
    for name in ("llama_gqa", "gemma3", "qwen2_window"):
        model = decoders[name]
        c = model.config
        tr = model.trace(TEXT)
        L = tr.lengths[0]
        H, Hkv, d = c.n_heads, c.kv_heads, c.d_head
        attn = model.layers[1].attn
        x = tr["layers.1.attn_in"]  # (B, L, d_model)
        W, b = attn.W_qkv.weight, attn.W_qkv.bias
        proj = F.linear(x, W, b)  # (B, L, (H + 2 Hkv)·d): independent of the module's split
        q_proj = proj[..., : H * d].view(1, L, H, d).transpose(1, 2)
        k_proj = proj[..., H * d:(H + Hkv) * d].view(1, L, Hkv, d).transpose(1, 2)
        v = proj[..., (H + Hkv) * d:].view(1, L, Hkv, d).transpose(1, 2)
        assert torch.allclose(tr["layers.1.attn.q_proj"], q_proj, atol=1e-6)
        assert torch.allclose(tr["layers.1.attn.k_proj"], k_proj, atol=1e-6)
        assert torch.allclose(tr["layers.1.attn.v"], v, atol=1e-6)
        assert tr["layers.1.attn.k"].shape == tr["layers.1.attn.v"].shape == (1, Hkv, L, d)
        assert tr["layers.1.attn.weights"].shape == (1, H, L, L)
        before = tr["layers.1.attn.q_normed"] if c.qk_norm else tr["layers.1.attn.q_proj"]
        # the rotation: pair (i, i + d/2) of position p turned by p·θ^(−2i/d), written out here
        theta = c.rope_local_theta if model.layers[1].rope == "local" else c.rope_theta
        inv = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
        ang = torch.arange(L, dtype=torch.float64)[:, None] * inv  # (L, d/2)
        x1, x2 = before[..., : d // 2].double(), before[..., d // 2:].double()
        rotated = torch.cat([x1 * ang.cos() - x2 * ang.sin(), x2 * ang.cos() + x1 * ang.sin()], -1)
        if c.rope_scaling is None:
            assert torch.allclose(tr["layers.1.attn.q"].double(), rotated, atol=1e-4)
        # q and k are the dot product's operands
        g = c.kv_group
        k_rep = tr["layers.1.attn.k"].repeat_interleave(g, dim=1)
        assert torch.allclose(tr["layers.1.attn.scores"], tr["layers.1.attn.q"] @ k_rep.transpose(-1, -2), atol=1e-4)
        scale = c.query_scale if c.query_scale is not None else d ** -0.5
        assert torch.allclose(tr["layers.1.attn.scaled"], tr["layers.1.attn.scores"] * scale, atol=1e-5)
        if c.qk_norm:  # RMSNorm with (1 + w) over each head's features
            qp = tr["layers.1.attn.q_proj"].double()
            want = qp / (qp.pow(2).mean(-1, keepdim=True) + c.layer_norm_eps).sqrt() * (1 + attn.q_norm.weight.double())
            assert torch.allclose(tr["layers.1.attn.q_normed"].double(), want, atol=1e-5)


def test_rotation_makes_scores_depend_on_distance_only():
    r = Rotary(16, 10000.0)
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(1, 1, 1, 16, generator=g), torch.randn(1, 1, 1, 16, generator=g)

    def score(m, n):
        qr, _ = r(q, q, torch.tensor([[m]]), torch.tensor([[m]]))
        _, kr = r(k, k, torch.tensor([[n]]), torch.tensor([[n]]))
        return float((qr * kr).sum())
    assert abs(score(3, 1) - score(7, 5)) < 1e-5 and abs(score(3, 1) - score(3, 2)) > 1e-3


def test_one_head_of_k_is_the_shared_kv_head(decoders):
    model = decoders["llama_gqa"]  # 8 query heads, 2 k/v heads: query heads 4..7 read k/v head 1
    assert model.config.kv_group == 4
    tr = model.trace(TEXT, names=["layers.0.attn.k", "layers.0.attn.v[5]", "layers.0.attn.k[6]",
                                  "layers.0.attn.k_proj[2]", "layers.0.attn.q_proj[7]"])
    assert torch.equal(tr["layers.0.attn.k[6]"], tr["layers.0.attn.k"][:, 1])
    full = model.trace(TEXT, names=["layers.0.attn.v", "layers.0.attn.k_proj", "layers.0.attn.q_proj"])
    assert torch.equal(tr["layers.0.attn.v[5]"], full["layers.0.attn.v"][:, 1])
    assert torch.equal(tr["layers.0.attn.k_proj[2]"], full["layers.0.attn.k_proj"][:, 0])
    assert torch.equal(tr["layers.0.attn.q_proj[7]"], full["layers.0.attn.q_proj"][:, 7])
    q, k, v = full_qkv = model.trace(TEXT, names="layers.0.attn.*").qkv(0, head=6, text=0)
    assert all(t.shape == (tr.lengths[0], 8) for t in full_qkv)
    assert torch.equal(k, tr["layers.0.attn.k[6]"][0])


def test_weights_on_demand_with_gqa_windows_and_scale(decoders):
    for name in ("llama_gqa", "mistral_window", "gemma3"):
        model = decoders[name]
        texts = [TEXT, "A short one."]
        tr = model.trace(texts, names=["layers.*.attn.q", "layers.*.attn.k", "layers.*.attn.weights"])
        qk = model.trace(texts, names=["layers.*.attn.q", "layers.*.attn.k"])  # no weights recorded
        for layer in range(model.config.n_layers):
            want = tr[f"layers.{layer}.attn.weights"]
            n = tr.lengths[1]  # rows of real tokens (a padded position's row is meaningless)
            assert torch.allclose(qk.weights(layer)[0], want[0], atol=1e-6)
            assert torch.allclose(qk.weights(layer)[1, :, :n], want[1, :, :n], atol=1e-6)
            assert torch.allclose(qk.weights(layer, heads=3, text=1), want[1, 3, :n, :n], atol=1e-6)
            allowed = qk.mask(layer)  # (B, 1, L, S): what the model used
            assert torch.equal(allowed[0, 0], want[0].sum(0) > 0)
            assert torch.equal(allowed[1, 0, :n], want[1, :, :n].sum(0) > 0)


def test_hooks_on_the_new_names(decoders):
    model = decoders["gemma3"]
    base = model.trace(TEXT, names=["final_norm"])["final_norm"]
    zeroed = model.trace(TEXT, names=["final_norm", "layers.0.attn.weights"],
                         hooks={"layers.0.attn.mask": lambda m, name: m & torch.eye(m.shape[-1], dtype=torch.bool)})
    assert torch.allclose(zeroed["layers.0.attn.weights"][0].diagonal(dim1=-2, dim2=-1), torch.ones(()))
    assert not torch.allclose(zeroed["final_norm"], base)
    same = model.trace(TEXT, names=["final_norm"], hooks={"layers.*.attn.k_normed[3]": lambda t, name: None})
    assert torch.equal(same["final_norm"], base)
    seen = []
    model.trace(TEXT, names=[], hooks={"layers.1.attn.k[3]": lambda t, name: seen.append((name, t.shape))})
    assert seen == [("layers.1.attn.k[3]", (1, tr_len(model), 16))]


def tr_len(model) -> int:
    return len(model.encode(TEXT).tokens[0])
