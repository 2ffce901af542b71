"""Training experiment, model side: shared init, the T5 fold, the probe's gradient, the schedule."""

import math

import pytest
import torch
import torch.nn.functional as F

from attnscope.experiments import tasks, training
from attnscope.functional import attention_steps

SET = training.make_settings(quick=True)


def _model(variant, d_k=16, seed=0, task=None):
    return training.build_model(task or tasks.AssociativeRecall(), variant, d_k, SET, seed)


def test_same_seed_same_initial_weights_for_every_variant():
    ref = dict(_model("scaled").named_parameters())
    for v in training.VARIANTS:
        if v == "t5":
            continue
        for name, p in _model(v).named_parameters():
            if name in ref:
                assert torch.equal(p, ref[name]), (v, name)


def test_lecun_init_gives_unit_variance_queries():
    m = _model("scaled", d_k=64, task=tasks.AssociativeRecall())
    x = F.layer_norm(torch.randn(4096, SET.d_model), (SET.d_model,))
    with torch.no_grad():
        q = x @ m.encoder.layers[0].attn.W_qkv.weight[: SET.d_model].T
    assert float(q.var()) == pytest.approx(1.0, rel=0.1)


@pytest.mark.parametrize("d_k", [16, 64])
def test_t5_fold_starts_exactly_where_scaled_starts(d_k):
    task = tasks.AssociativeRecall()
    ids, _ = task.batch(4, torch.Generator().manual_seed(0))
    scaled, t5, unscaled = _model("scaled", d_k), _model("t5", d_k), _model("unscaled", d_k)
    assert t5.encoder.layers[0].attn.scoring == "unscaled"
    with torch.no_grad():
        torch.testing.assert_close(t5(ids), scaled(ids), rtol=1e-5, atol=1e-5)
        assert not torch.allclose(unscaled(ids), scaled(ids), atol=1e-3)
    # only the query rows of W_qkv differ, by exactly 1/√d_k
    W_s, W_t = scaled.encoder.layers[0].attn.W_qkv.weight, t5.encoder.layers[0].attn.W_qkv.weight
    d = SET.d_model
    torch.testing.assert_close(W_t[:d], W_s[:d] / math.sqrt(d_k))
    assert torch.equal(W_t[d:], W_s[d:])


def test_probe_gradient_equals_autograd_at_the_scaled_scores():
    torch.manual_seed(0)
    task = tasks.AssociativeRecall()
    m = _model("unscaled", d_k=16)
    probe = training.Probe(m, causal=False)
    kept = []
    m.encoder.layers[0].attn.scaled.add_hook(lambda x, name: kept.append(x) or None)
    ids, tgt = task.batch(8, torch.Generator().manual_seed(1))
    probe.want_grad = True
    loss = training.loss_fn(m(ids), tgt)
    loss.backward(retain_graph=True)
    assert len(probe.grad_sq) == 1
    got = math.sqrt(float(probe.grad_sq[0]))
    probe.want_grad = False
    (g_ref,) = torch.autograd.grad(loss, kept[0])
    assert got == pytest.approx(float(g_ref.double().norm()), rel=1e-10)
    assert got > 0


def test_probe_entropy_matches_weights_computed_independently():
    task = tasks.CharLM(seq_len=8)
    m = _model("scaled", d_k=16, task=task)
    probe = training.Probe(m, causal=True)
    ids, tgt = task.batch(3, torch.Generator().manual_seed(2))
    x = m.encoder.embed(ids)
    ln = m.encoder.layers[0].ln1(x)
    attn = m.encoder.layers[0].attn
    with torch.no_grad():
        q, k, v = (attn.split_heads(t) for t in attn.project(ln))
        w = attention_steps(q.double(), k.double(), v.double(), causal=True)["weights"]  # (B, H, L, L)
    H = -(torch.special.xlogy(w, w)).sum(-1)  # (B, H, L)
    n = torch.arange(1, 9, dtype=torch.float64)
    probe.rows = torch.ones_like(ids, dtype=torch.bool)
    with torch.no_grad():
        m(ids)
    st = probe.stats[0]
    assert st["entropy"] == pytest.approx(float(H.mean()), rel=1e-5)
    assert st["uniform_entropy"] == pytest.approx(float(n.log().mean()), rel=1e-12)
    assert st["entropy_norm"] == pytest.approx(float((H[..., 1:] / n[1:].log()).mean()), rel=1e-5)


def test_lr_schedule_warms_up_then_decays_to_the_floor():
    f = [training.lr_factor(i, 100, 0.1, 0.1) for i in range(101)]
    assert f[0] == pytest.approx(0.1) and f[9] == pytest.approx(1.0)
    assert all(a <= b for a, b in zip(f[:10], f[1:10]))
    assert all(a >= b - 1e-12 for a, b in zip(f[10:], f[11:]))
    assert f[100] == pytest.approx(0.1)
