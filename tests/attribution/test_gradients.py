"""Gradient methods (issue 27 item 1): grad_input and the integrated-gradients integrand against central
finite differences of the target in float64, IG completeness, attn_grad against a loop over the
traced weights and their gradients, and the bad inputs."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch

import attnscope
import tests.models.decoders.tiny  # noqa: F401  (registers gemma3)
import tests.models.encoders.tiny  # noqa: F401  (registers deberta_v3)
import tests.models.seq2seq.tiny  # noqa: F401  (registers t5)
from attnscope.attribution import attribute
from attnscope.attribution import gradients as G
from attnscope.errors import InputError
from attnscope.hooks import HookPoint
from attnscope.testing.tiny import FAMILIES

NAMES = ("minilm", "gpt2", "gemma3", "deberta_v3", "t5")
TEXT = "The fox jumps"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-gradients")
    cache: dict = {}

    def get(name: str, dtype=torch.float32):
        if (name, dtype) not in cache:
            if dtype == torch.float32:
                cache[name, dtype] = attnscope.load() if name == "minilm" else attnscope.load(FAMILIES[name].build(root / name))
            else:  # an independent float64 copy (attnscope models move as nn.Modules)
                cache[name, dtype] = copy.deepcopy(get(name)).to(dtype)
        return cache[name, dtype]
    return get


# ---- the target, written here from the convention (not read from attnscope.attribution.target) ----
def embed_name(model) -> str:
    return "encoder.embed.out" if hasattr(model, "target_batch") else "embed.out"


def f_at(model, text: str, e: torch.Tensor, target) -> torch.Tensor:
    """The target with the embedding output replaced by ``e (L, d)``: a scalar."""
    batch = model.encode(text)
    ids, mask = batch.input_ids, batch.attention_mask  # (1, L)
    with model.hooks({embed_name(model): lambda t, name: e.unsqueeze(0)}):
        if hasattr(model, "target_batch"):
            start = torch.full((1, 1), model.config.decoder_start_token_id)
            out = model.lm_logits(model(ids, mask, decoder_input_ids=start, decoder_attention_mask=torch.ones_like(start)))[0, -1]
        elif model.has_lm_head:
            out = model.lm_logits(model(ids, mask, batch.token_type_ids))[0, -1]  # (V,)
        else:
            h = model(ids, mask, batch.token_type_ids)[0]  # (L, d)
            out = h.mean(0) if model.pooling == "mean" else h[0]  # (d,): before any normalisation
    if isinstance(target, torch.Tensor):  # the encoder default: a fixed direction
        return out @ target
    if isinstance(target, tuple):
        return out[target[0]] - out[target[1]]
    return out[target]


def embedding_out(model, text: str) -> torch.Tensor:
    kept = []
    with torch.no_grad(), model.hooks({embed_name(model): lambda t, name: kept.append(t.clone()) or None}):
        model.trace(text, names=[], **({"target": ""} if hasattr(model, "target_batch") else {}))
    return kept[0][0]  # (L, d)


def default_target(model, text: str, x: torch.Tensor):
    """What target=None means: the top token, or the pooled embedding's own unit direction."""
    with torch.no_grad():
        if model.has_lm_head or hasattr(model, "target_batch"):
            return int(f_at(model, text, x, slice(None)).argmax())
        p = f_at(model, text, x, slice(None))
        return p / p.norm()


def central_fd(model, text, x, target, direction_rows: torch.Tensor, h: float = 1e-5) -> torch.Tensor:
    """``(L,)``: d/dε f(x + ε·D_j) at ε = 0 for each position j, D_j = direction_rows[j] at row j only."""
    out = []
    with torch.no_grad():
        for j in range(x.shape[0]):
            step = torch.zeros_like(x)
            step[j] = direction_rows[j]
            out.append((f_at(model, text, x + h * step, target) - f_at(model, text, x - h * step, target)) / (2 * h))
    return torch.stack(out)


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max())


@pytest.mark.parametrize("name", NAMES)
def test_grad_input_equals_central_finite_differences(models, name):
    m = models(name, torch.float64)
    x = embedding_out(m, TEXT)  # (L, d)
    tgt = default_target(m, TEXT, x)
    a = G.grad_input(m, TEXT)
    assert a.kind == "output" and a.scores.shape == (x.shape[0],) and a.scores.dtype == torch.float64
    # s_j = x_j · ∇_j f = d/dε f(x with row j scaled by 1 + ε)
    fd = central_fd(m, TEXT, x, tgt, x)
    assert rel(a.scores, fd) <= 1e-6, (name, rel(a.scores, fd))
    with torch.no_grad():
        f_x = float(f_at(m, TEXT, x, tgt))
    assert abs(a.details["value"] - f_x) <= 1e-9 * max(1.0, abs(a.details["value"]))
    # a second target: a logit difference / one feature
    pair = (3, 7)
    b = G.grad_input(m, TEXT, target=pair)
    assert b.target == pair
    assert rel(b.scores, central_fd(m, TEXT, x, pair, x)) <= 1e-6


@pytest.mark.parametrize("name", ("gpt2", "deberta_v3"))
def test_grad_input_l2_from_the_full_finite_difference_gradient(models, name):
    """details["l2"] = ‖x_j ⊙ ∂f/∂x_j‖₂, the gradient taken coordinate by coordinate by central differences."""
    m = models(name, torch.float64)
    x = embedding_out(m, TEXT)  # (L, d)
    tgt = default_target(m, TEXT, x)
    grad = torch.zeros_like(x)
    h = 1e-5
    with torch.no_grad():
        for j in range(x.shape[0]):
            for k in range(x.shape[1]):
                e = torch.zeros_like(x)
                e[j, k] = h
                grad[j, k] = (f_at(m, TEXT, x + e, tgt) - f_at(m, TEXT, x - e, tgt)) / (2 * h)
    a = G.grad_input(m, TEXT)
    assert rel(a.details["l2"], (x * grad).norm(dim=-1)) <= 1e-6


@pytest.mark.parametrize("name", NAMES)
def test_ig_integrand_equals_central_finite_differences(models, name):
    """At α = 0.37 on the path from the zero baseline: Σ_d δ_jd ∂f/∂x_jd equals the derivative along δ_j."""
    m = models(name, torch.float64)
    x = embedding_out(m, TEXT)  # (L, d)
    p = G.Prepared(m, TEXT, None, "test")
    assert torch.equal(p.x, x)
    tgt = default_target(m, TEXT, x)
    b = torch.zeros_like(x)
    point = b + 0.37 * (x - b)
    _, grad = p.run(point.unsqueeze(0))  # (1, L, d)
    integrand = ((x - b) * grad[0]).sum(-1)  # (L,)
    fd = central_fd(m, TEXT, point, tgt, x - b)
    assert rel(integrand, fd) <= 1e-6, (name, rel(integrand, fd))


@pytest.mark.parametrize("name", ("minilm", "deberta_v3"))
def test_ig_completeness_at_200_steps(models, name):
    m = models(name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # within 1 %: no warning
        ig = G.integrated_gradients(m, TEXT, steps=200, batch_size=67)
    x = embedding_out(m, TEXT)
    tgt = default_target(m, TEXT, x)
    with torch.no_grad():
        f_x, f_b = float(f_at(m, TEXT, x, tgt)), float(f_at(m, TEXT, torch.zeros_like(x), tgt))
    change = f_x - f_b
    assert abs(float(ig.scores.sum()) - change) <= 1e-3 * abs(change), (name, ig.details)
    assert ig.details["relative_gap"] <= 1e-3
    assert ig.details["value"] == pytest.approx(f_x, rel=1e-5)
    assert ig.details["baseline_value"] == pytest.approx(f_b, rel=1e-5, abs=1e-6)


def test_ig_warns_when_completeness_fails(models):
    """A pre-norm decoder from the zero baseline: the target jumps at 0 (the RMSNorms scale any tiny
    input back up), so even 200 steps leave a gap, and the check says so."""
    m = models("gemma3", torch.float64)
    p = G.Prepared(m, TEXT, None, "test")
    f0, f_tiny = p.values(torch.stack([0 * p.x, 1e-9 * p.x])).tolist()
    assert f0 == 0.0 and abs(f_tiny) > 0.1  # the jump the docstring states
    with pytest.warns(UserWarning, match="baseline=<a token id>"):
        ig = G.integrated_gradients(m, TEXT, steps=200, batch_size=100)
    assert ig.details["relative_gap"] > 0.01


@pytest.mark.parametrize("name", ("gemma3", "llama_gqa"))
def test_ig_from_a_token_baseline_is_complete_on_pre_norm_decoders(models, name):
    """baseline=token id: that token's embedding output at every position (read here from the
    embedding module by a hooked pass of the changed ids), and Σ IG = f(x) − f(b) within 1e-3."""
    m = models(name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ig = G.integrated_gradients(m, TEXT, steps=200, baseline=0, batch_size=100)
    ids = m.encode(TEXT).input_ids
    kept = []
    with torch.no_grad(), m.hooks({"embed.out": lambda t, name: kept.append(t.clone()) or None}):
        m(torch.zeros_like(ids))
    b = kept[0][0]  # (L, d)
    x = embedding_out(m, TEXT)
    tgt = default_target(m, TEXT, x)
    with torch.no_grad():
        change = float(f_at(m, TEXT, x, tgt) - f_at(m, TEXT, b, tgt))
    assert abs(float(ig.scores.sum()) - change) <= 1e-3 * abs(change)
    assert ig.details["baseline"] == "token 0 at every position"
    with pytest.raises(InputError, match="baseline token"):
        G.integrated_gradients(m, TEXT, baseline=10**6)


@pytest.mark.parametrize("rule, power, steps", [("trapezoid", 1.0, 5), ("trapezoid", 3.0, 6), ("midpoint", 2.5, 4)])
def test_ig_rules_and_powers_are_the_written_out_sums(models, rule, power, steps):
    """IG_j = Σ_k w_k Σ_d δ_jd ∂f/∂x_jd(b + α_k δ) with the points and weights written out here
    (trapezoid: u = k/S, weights 1/S halved at the ends; midpoint: u = (k + ½)/S; α = u^p, w·p·u^(p−1)),
    each gradient by autograd of the target written in this file, in float64."""
    m = models("gpt2", torch.float64)
    x = embedding_out(m, TEXT)  # (L, d)
    tgt = default_target(m, TEXT, x)
    if rule == "trapezoid":
        us = [k / steps for k in range(steps + 1)]
        ws = [(0.5 if k in (0, steps) else 1.0) / steps for k in range(steps + 1)]
    else:
        us = [(k + 0.5) / steps for k in range(steps)]
        ws = [1.0 / steps] * steps
    want = torch.zeros(x.shape[0], dtype=torch.float64)
    for u, w in zip(us, ws):
        weight = w * power * u ** (power - 1)
        if weight == 0:
            continue
        e = (u ** power * x).detach().requires_grad_(True)  # the zero baseline: b + α δ = α x
        (g,) = torch.autograd.grad(f_at(m, TEXT, e, tgt), e)
        want += weight * (x * g).sum(-1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # so few steps: the completeness warning is expected
        got = G.integrated_gradients(m, TEXT, steps=steps, rule=rule, power=power, batch_size=3)
    assert rel(got.scores, want) <= 1e-10, rel(got.scores, want)
    assert got.details["rule"] == rule and got.details["power"] == power
    assert got.details["gradients"] == sum(1 for u, w in zip(us, ws) if w * power * u ** (power - 1) > 0)


def test_ig_with_a_given_baseline_is_the_integral(models):
    """Batching changes no number, and a baseline equal to the input gives zero scores."""
    m = models("minilm", torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 10 steps: the completeness warning is expected here
        a = G.integrated_gradients(m, TEXT, steps=10, batch_size=3)
        b = G.integrated_gradients(m, TEXT, steps=10, batch_size=11)
    assert torch.allclose(a.scores, b.scores, rtol=1e-10, atol=1e-12)
    x = embedding_out(m, TEXT)
    same = G.integrated_gradients(m, TEXT, steps=4, baseline=x)
    assert float(same.scores.abs().max()) == 0.0


def chefer_loop(m, text: str, target) -> torch.Tensor:
    """R of Chefer et al. 2021 by loops: the weights and their gradients from a hooked pass of a copy
    whose parameters require grad (no leaf at the embedding)."""
    mc = copy.deepcopy(m).requires_grad_(True)
    prefix = "encoder." if hasattr(mc, "target_batch") else ""
    kept: dict = {}
    with mc.hooks({f"{prefix}layers.*.attn.weights": lambda t, name: kept.__setitem__(name, t)}):
        batch = mc.encode(text)
        if hasattr(mc, "target_batch"):
            start = torch.full((1, 1), mc.config.decoder_start_token_id)
            out = mc.lm_logits(mc(batch.input_ids, batch.attention_mask, decoder_input_ids=start,
                                  decoder_attention_mask=torch.ones_like(start)))[0, -1]
        elif mc.has_lm_head:
            out = mc.lm_logits(mc(batch.input_ids, batch.attention_mask, batch.token_type_ids))[0, -1]
        else:
            out = mc(batch.input_ids, batch.attention_mask, batch.token_type_ids)[0].mean(0)
        value = out @ target if isinstance(target, torch.Tensor) else out[target]
    names = [f"{prefix}layers.{i}.attn.weights" for i in range(mc.config.n_layers)]
    grads = torch.autograd.grad(value, [kept[n] for n in names])
    L = kept[names[0]].shape[-1]
    R = [[1.0 if i == j else 0.0 for j in range(L)] for i in range(L)]
    for n, g in zip(names, grads):
        A, G_ = kept[n][0].detach(), g[0]
        H = A.shape[0]
        Ab = [[sum(max(0.0, float(G_[h, i, j] * A[h, i, j])) for h in range(H)) / H for j in range(L)] for i in range(L)]
        R = [[R[i][j] + sum(Ab[i][k] * R[k][j] for k in range(L)) for j in range(L)] for i in range(L)]
    R_t = torch.tensor(R, dtype=torch.float64)
    return R_t / R_t.sum(-1, keepdim=True)


@pytest.mark.parametrize("name", NAMES)
def test_attn_grad_equals_a_loop_over_weights_and_gradients(models, name):
    m = models(name, torch.float64)
    x = embedding_out(m, TEXT)
    tgt = default_target(m, TEXT, x)
    a = G.attn_grad(m, TEXT)
    ref = chefer_loop(m, TEXT, tgt)
    assert a.kind == "tokens" and a.scores.shape == ref.shape and a.per_layer.shape[0] == m.config.n_layers
    assert rel(a.scores, ref) <= 1e-9, (name, rel(a.scores, ref))
    assert torch.allclose(a.scores.sum(-1), torch.ones(ref.shape[0], dtype=torch.float64))
    first = G.attn_grad(m, TEXT, layer=0)  # accumulated up to layer 0: I + Ā_0, rows normalised
    R0 = torch.eye(ref.shape[0], dtype=torch.float64) + a.per_layer[0]
    assert torch.allclose(first.scores, R0 / R0.sum(-1, keepdim=True), rtol=0, atol=1e-12)


def state(m):
    return ([p.requires_grad for p in m.parameters()], [p.grad for p in m.parameters()],
            sum(len(mod.hooks) for mod in m.modules() if isinstance(mod, HookPoint)))


@pytest.mark.parametrize("method", ("grad_input", "integrated_gradients", "attn_grad"))
@pytest.mark.filterwarnings("ignore:integrated gradients")
def test_the_model_is_left_as_it_was_even_on_error(models, method, monkeypatch):
    m = models("gpt2")
    before = state(m)
    attribute(m, TEXT, method, **({"steps": 3} if method == "integrated_gradients" else {}))
    assert state(m) == before

    def broken(*a, **k):
        raise RuntimeError("boom")
    monkeypatch.setattr(G, "target_values", broken)  # fails inside the hooked pass
    with pytest.raises(RuntimeError, match="boom"):
        attribute(m, TEXT, method, **({"steps": 3} if method == "integrated_gradients" else {}))
    assert state(m) == before


@pytest.mark.parametrize("kw, match", [
    (dict(target=10**6), "out of range"), (dict(target=-1), "out of range"), (dict(target=(2, 2)), "two different"),
    (dict(target=True), "integer"), (dict(target=(1, 2, 3)), "pair"), (dict(layer=0), "layer="),
    (dict(steps=0), "steps"), (dict(steps=2.5), "steps"), (dict(batch_size=0), "batch_size"),
    (dict(baseline=torch.zeros(3)), "baseline"), (dict(spline=3), "no option"),
    (dict(rule="simpson"), "rule='simpson' is not one of the rules"), (dict(power=0.5), "power must be a number"),
    (dict(power=True), "power must be a number"),
])
def test_bad_input_is_one_clear_error(models, kw, match):
    m = models("gpt2")
    with pytest.raises(InputError, match=match):
        attribute(m, TEXT, "integrated_gradients", **kw)


def test_encoder_feature_target_out_of_range(models):
    m = models("minilm")
    with pytest.raises(InputError, match=r"out of range: embedding features are 0\.\.383"):
        attribute(m, TEXT, "grad_input", target=384)


def test_a_model_without_gradients_is_refused_before_any_work(models, monkeypatch):
    m = copy.deepcopy(models("gpt2"))
    m.embed.register_parameter("packed", torch.nn.Parameter(torch.zeros(4, dtype=torch.int8), requires_grad=False))
    ran = []
    monkeypatch.setattr(m, "encode", lambda *a, **k: ran.append(1))
    for method in ("grad_input", "integrated_gradients", "attn_grad"):
        with pytest.raises(InputError, match=f"{method} needs gradients.*torch.int8"):
            attribute(m, TEXT, method)
    assert not ran
    with torch.inference_mode():
        frozen = copy.deepcopy(models("gpt2"))
    with pytest.raises(InputError, match="inference_mode"):
        attribute(frozen, TEXT, "grad_input")


def test_the_dispatcher_refuses_any_method_that_needs_gradients(models, monkeypatch):
    """needs_grad in a registration is enough: attribute() refuses before the method runs."""
    from attnscope.attribution import METHODS, AttributionMethod
    called = []
    monkeypatch.setitem(METHODS, "probe", AttributionMethod("probe", "output", lambda *a, **k: called.append(1),
                                                            words="test", needs_grad=True))
    m = copy.deepcopy(models("gpt2"))
    m.embed.register_parameter("packed", torch.nn.Parameter(torch.zeros(4, dtype=torch.int8), requires_grad=False))
    with pytest.raises(InputError, match="probe needs gradients"):
        attribute(m, TEXT, "probe")
    assert not called


@pytest.mark.filterwarnings("ignore:integrated gradients")
@pytest.mark.parametrize("name", ("minilm", "gpt2", "t5"))
def test_model_attribute_dispatches_to_the_gradient_methods(models, name):
    m = models(name)
    for method in ("grad_input", "attn_grad"):
        a = m.attribute(TEXT, method)
        b = getattr(G, method)(m, TEXT)
        assert a.method == method and torch.allclose(a.scores, b.scores, rtol=1e-6, atol=1e-9)
    ig = m.attribute(TEXT, "integrated_gradients", steps=4)
    assert ig.details["steps"] == 4 and ig.scores.shape == (len(ig.tokens),)


def test_ig_takes_a_numpy_integer_as_a_token_baseline(models):
    """A token id read from NumPy (np.int64, as ``target=`` takes it) is the same baseline as the int."""
    import numpy as np
    m = models("minilm", torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = G.integrated_gradients(m, TEXT, steps=4, baseline=0)
        b = G.integrated_gradients(m, TEXT, steps=4, baseline=np.int64(0))
    assert torch.equal(a.scores, b.scores) and b.details["baseline"] == a.details["baseline"] == "token 0 at every position"
    with pytest.raises(InputError, match="baseline must be"):
        G.integrated_gradients(m, TEXT, steps=4, baseline=np.bool_(True))
