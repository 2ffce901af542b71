"""Path patching against a brute-force loop written here: the sender's corrupted − clean output
``Δ = (z_corr − z_clean)_h W_O^h`` is carried by hand to each receiver (the residual stream, with the
MLPs between recomputed by calling their modules, or left alone when frozen), the receiver's q/k/v
projection of that stream is computed from its own weight rows, and one plain hook on the receiver's
projection puts it in a clean run. Float64 models, so the two agree to far below 1e-6."""

import shutil

import numpy as np
import pytest
import torch

import attnscope
from attnscope.errors import InputError
from attnscope.patching import path_patch, path_sweep
from attnscope.patching.runs import PromptGroup
from attnscope.testing import tiny as testing

CLEANS = ["I like cats. I like dogs. Cats and dogs like", "I like dogs. I like cats. Cats and dogs like"]
CORRUPTS = CLEANS[::-1]  # each prompt's corrupted one is the other
FOX = ["The quick brown fox jumps over the lazy dog."], ["The quick brown dog jumps over the lazy fox."]


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    """A 3-layer GPT-2 (the builder's is 2 layers: one layer between sender and receiver is wanted)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    src = testing.tiny_gpt2(tmp_path_factory.mktemp("g2"))
    dst = tmp_path_factory.mktemp("g3")
    cfg = GPT2Config.from_pretrained(src)
    cfg.n_layer = 3
    torch.manual_seed(7)
    m = GPT2LMHeadModel(cfg)
    g = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for name, p in m.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            p.copy_(1.0 + 0.1 * noise if name.endswith("weight") and ".ln_" in name else 0.15 * noise)
    m.save_pretrained(str(dst))
    for f in src.iterdir():
        if not (dst / f.name).exists():
            shutil.copy(f, dst / f.name)
    return attnscope.load(dst, dtype=torch.float64)


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    from tests.models.decoders.tiny import llama_gqa
    return attnscope.load(llama_gqa(tmp_path_factory.mktemp("llama") / "m"), dtype=torch.float64)


def group_of(model, cleans, corrupts, answer, wrong):
    a = torch.cat([model.encode(t).input_ids for t in cleans])
    b = torch.cat([model.encode(t).input_ids for t in corrupts])
    n = len(cleans)
    return PromptGroup(a, b, torch.full((n,), answer), torch.full((n,), wrong), "test")


def ld(model, hidden, g):
    logits = model.lm_logits(hidden[:, -1])
    return (logits[torch.arange(len(g.answer)), g.answer] - logits[torch.arange(len(g.answer)), g.wrong]).detach().numpy()


def brute_force(model, g, sender, receivers, mlp):
    """The metric per prompt, path patched by hand (see the module docstring)."""
    n = model.config.n_layers
    ls, hs = sender
    names = [f"layers.{i}.{s}" for i in range(n) for s in ("attn.z", "attn_resid", "out")] + ["embed.out"]
    def batch(ids):
        k, L = ids.shape
        return attnscope.tokenizer.Batch(ids, torch.ones_like(ids), torch.zeros_like(ids), [[""] * L] * k, [""] * k)
    with torch.no_grad():
        clean = model.trace(batch(g.clean), names=names)
        corr = model.trace(batch(g.corrupted), names=names)
        W_O = model.layers[ls].attn.head_weights(hs)["W_O"]  # (d_head, d)
        delta = (corr[f"layers.{ls}.attn.z"][:, hs] - clean[f"layers.{ls}.attn.z"][:, hs]) @ W_O  # (n, L, d)
        # the stream after each layer with Δ carried: frozen heads add their clean output, MLPs recomputed or not
        stream = {}
        x = clean[f"layers.{ls}.attn_resid"] + delta
        for i in range(ls, n):
            if i > ls:
                x = stream[i - 1] + (clean[f"layers.{i}.attn_resid"] - clean[f"layers.{i - 1}.out"])
            layer = model.layers[i]
            if mlp == "recompute":
                x = x + layer.ffn(layer.ln2(x))
            else:
                x = x + (clean[f"layers.{i}.out"] - clean[f"layers.{i}.attn_resid"])
            stream[i] = x
        if receivers == "logits":
            return ld(model, model.ln_f(stream[n - 1]), g)
        hooks = {}
        for lr, hr, kind in receivers:
            layer = model.layers[lr]
            w = layer.attn.head_weights(hr)
            x_in = layer.ln1(stream[lr - 1])  # (n, L, d)
            proj = x_in @ w[f"W_{kind.upper()}"] + (0 if w[f"b_{kind.upper()}"] is None else w[f"b_{kind.upper()}"])
            point = {"q": "q_proj", "k": "k_proj", "v": "v"}[kind] if model.family != "gpt2" else kind
            hooks[f"layers.{lr}.attn.{point}[{hr}]"] = lambda t, _n, p=proj: p
        with model.hooks(hooks):
            hidden = model(g.clean, torch.ones_like(g.clean), torch.zeros_like(g.clean))
        return ld(model, hidden, g)


def token_id(model, text):
    (i,) = model.tokenizer.backend.encode(text, add_special_tokens=False).ids
    return i


@pytest.mark.parametrize("mlp", ["recompute", "freeze"])
def test_path_patching_equals_the_brute_force_loop_on_gpt2(gpt2, mlp):
    g = group_of(gpt2, CLEANS, CORRUPTS, token_id(gpt2, " cats"), token_id(gpt2, " dogs"))
    cases = [((0, 1), "logits"), ((1, 3), "logits"), ((0, 2), [(2, 1, "q")]), ((0, 0), [(1, 3, "k"), (2, 0, "v")]),
             ((1, 2), [(2, 2, "q"), (2, 3, "k"), (2, 3, "v")])]
    moved = 0
    for sender, receivers in cases:
        r = path_patch(gpt2, [g], sender=sender, receivers=receivers, mlp=mlp)
        want = brute_force(gpt2, g, sender, receivers, mlp)
        np.testing.assert_allclose(r.per_prompt[sender].numpy(), want, atol=1e-6, rtol=0)
        assert r.values[sender] == pytest.approx(want.mean(), abs=1e-6)
        moved += float(np.abs(want - r.clean).max()) > 1e-3
    assert moved >= 4  # the paths carry something: the test can fail


def test_grouped_query_heads_and_rotary_on_llama(llama):
    g = group_of(llama, *FOX, token_id(llama, " the"), token_id(llama, "x"))
    for mlp in ("recompute", "freeze"):
        for sender, receivers in (((0, 5), [(1, 2, "q")]), ((0, 1), [(1, 6, "k"), (1, 3, "v")]), ((0, 7), "logits")):
            r = path_patch(llama, [g], sender=sender, receivers=receivers, mlp=mlp)
            np.testing.assert_allclose(r.per_prompt[sender].numpy(), brute_force(llama, g, sender, receivers, mlp),
                                       atol=1e-6, rtol=0)


def test_the_sweep_is_the_single_patches_and_the_pair_form(gpt2):
    a, w = token_id(gpt2, " cats"), token_id(gpt2, " dogs")
    g = group_of(gpt2, CLEANS, CORRUPTS, a, w)
    sweep = path_sweep(gpt2, [g], receivers=[(2, 1, "q")])
    assert torch.isnan(sweep.values[2]).all() and not torch.isnan(sweep.values[:2]).any()
    for s in [(0, 3), (1, 0)]:
        single = path_patch(gpt2, [g], sender=s, receivers=[(2, 1, "q")])
        assert float(single.values[s]) == pytest.approx(float(sweep.values[s]), abs=1e-12)
    pair = path_patch(gpt2, CLEANS[0], CORRUPTS[0], sender=(0, 3), receivers="logits", answer=" cats", wrong=" dogs")
    np.testing.assert_allclose(pair.per_prompt[(0, 3)].numpy(), brute_force(gpt2, g, (0, 3), "logits", "recompute")[:1],
                               atol=1e-6)
    one = group_of(gpt2, CLEANS[:1], CORRUPTS[:1], a, w)
    assert pair.clean == pytest.approx(float(ld(gpt2, gpt2.run(CLEANS[:1]), one)[0]), abs=1e-9)
    assert [t[0] for t in sweep.top(3)] == [f"{i // 4}.{i % 4}" for i in torch.argsort(
        torch.nan_to_num(sweep.values - sweep.clean, nan=np.inf).flatten())[:3].tolist()]


@pytest.mark.parametrize("kw, words", [
    (dict(sender=(0, 9), receivers="logits"), "out of range"),
    (dict(sender=(5, 0), receivers="logits"), "out of range"),
    (dict(sender=(1, 0), receivers=[(1, 2, "q")]), "not after the sender"),
    (dict(sender=(1, 0), receivers=[(0, 2, "q")]), "not after the sender"),
    (dict(sender=(0, 0), receivers=[(1, 2, "x")]), "kind one of q, k, v"),
    (dict(sender=(0, 0), receivers=[(1, 2, "q"), (1, 2, "q")]), "given twice"),
    (dict(sender=(0, 0), receivers=[]), "empty"),
    (dict(sender=(0, 0), receivers="logit"), "logits"),
    (dict(sender="0.0", receivers="logits"), "not a head"),
    (dict(sender=(0, 0), receivers="logits", mlp="keep"), "recompute, freeze"),
])
def test_bad_input_is_one_clear_sentence(gpt2, kw, words):
    g = group_of(gpt2, CLEANS[:1], CORRUPTS[:1], 1, 2)
    with pytest.raises(InputError, match=words):
        path_patch(gpt2, [g], **kw)


def test_an_empty_list_of_senders_is_refused(gpt2):
    """path_sweep(senders=[]) ran the clean and corrupted prompts and returned a grid of NaN (every
    head 'not a sender here'), as if the sweep had been done. One sentence now."""
    g = group_of(gpt2, CLEANS[:1], CORRUPTS[:1], 1, 2)
    with pytest.raises(InputError, match="the list of senders is empty"):
        path_sweep(gpt2, [g], senders=[])


def test_gemma3_receivers_in_a_layer_of_another_rope_base(tmp_path):
    """Gemma 3's layers 0, 1 are sliding (RoPE base 10⁴), layer 2 full (10⁶): the second run starts
    at the receiver's layer, which must keep its own rotary table (it got layer 0's: 0.0056 off here).
    The reference: two full runs with hooks — every head but the sender frozen at clean, the receiver's
    q/k recorded; then the clean run with that q/k written in."""
    from tests.models.decoders.tiny import gemma3
    m = attnscope.load(gemma3(tmp_path / "gemma3"), dtype=torch.float64)
    n = m.config.n_layers
    g = group_of(m, *FOX, 3, 5)

    def run(ids, hooks, names=()):
        b = attnscope.tokenizer.Batch(ids, torch.ones_like(ids), torch.zeros_like(ids), [[""] * ids.shape[1]], [""])
        return m.trace(b, names=list(names), hooks=hooks)
    zs = [f"layers.{i}.attn.z" for i in range(n)]
    clean, corr = run(g.clean, {}, zs), run(g.corrupted, {}, zs)
    for kind in ("q", "k"):
        hooks = {f"layers.{i}.attn.z": (lambda t, _n, i=i: clean[f"layers.{i}.attn.z"]) for i in range(1, n)}

        def sender(t, _n):
            z = clean["layers.0.attn.z"].clone()
            z[:, 1] = corr["layers.0.attn.z"][:, 1]
            return z
        hooks["layers.0.attn.z"] = sender
        j = 2 if kind == "q" else 2 // (m.config.n_heads // m.config.kv_heads)
        got = run(g.clean, hooks, [f"layers.2.attn.{kind}"])[f"layers.2.attn.{kind}"][:, j]

        def put(t, _n, got=got, j=j):
            t = t.clone()
            t[:, j] = got
            return t
        want = ld(m, run(g.clean, {f"layers.2.attn.{kind}": put}).output, g)
        r = path_patch(m, [g], sender=(0, 1), receivers=[(2, 2, kind)])
        np.testing.assert_allclose(r.per_prompt[(0, 1)].numpy(), want, atol=1e-9, rtol=0)


def test_numpy_integers_name_heads_as_python_ints_do(gpt2):
    """Heads from np.argwhere / argmax are numpy integers: (np.int64(0), np.int64(1)) was refused as
    'is not a head: give (layer, head), two integers' (the circuits' functions take them)."""
    a, w = token_id(gpt2, " cats"), token_id(gpt2, " dogs")
    g = group_of(gpt2, CLEANS, CORRUPTS, a, w)
    want = path_patch(gpt2, [g], sender=(0, 2), receivers=[(2, 1, "q")])
    got = path_patch(gpt2, [g], sender=(np.int64(0), np.int64(2)), receivers=[(np.int64(2), np.int32(1), "q")])
    assert np.array_equal(got.values.numpy(), want.values.numpy(), equal_nan=True) and got.receivers == [(2, 1, "q")]
