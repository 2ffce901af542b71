"""Patched copies start at their patched layer from the corrupted run's stream: the (copy, layer)
evaluations reported equal those counted by a hook on every layer and the formula; the values are
those of each copy run alone through the whole model (torch.equal at batch size 1, where no
batched matrix product rounds differently); SmolLM2's 270 heads take ≤ 55 % of a full rerun."""

import pytest
import torch

import attnscope
from attnscope.patching import patch
from attnscope.testing import tiny as testing
from attnscope.tokenizer import Batch

CLEAN = "I like cats. I like dogs. Cats and dogs like"
CORRUPTED = "I like dogs. I like cats. Cats and dogs like"


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    return attnscope.load(testing.tiny_gpt2(tmp_path_factory.mktemp("gpt2")))


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    from tests.models.decoders.tiny import llama_gqa
    return attnscope.load(llama_gqa(tmp_path_factory.mktemp("llama") / "m"))


def counted(model, run):
    """``run()``'s result and the (copy, layer) pairs every layer module was called on."""
    rows = [0]

    def count(module, args, out):
        rows[0] += out.shape[0]  # (copies, L, d): what the layer computed
    handles = [layer.register_forward_hook(count) for layer in model.layers]
    try:
        out = run()
    finally:
        for h in handles:
            h.remove()
    return out, rows[0]


def alone(model, clean, corrupted, name_of, put_of, patches, a, w):
    """Each patch in a run of its own: the corrupted prompt, one hook, the whole model."""
    ids = model.encode(corrupted).input_ids
    one = Batch(ids, torch.ones_like(ids), torch.zeros_like(ids), [[""] * ids.shape[1]], [""])
    out = []
    for l, j in patches:
        hidden = model.trace(one, names=[], hooks={name_of(l): put_of(l, j)}).output  # (1, L, d)
        with torch.no_grad():
            logits = model.lm_logits(hidden[:, -1])
        out.append(float(logits[0, a].double() - logits[0, w].double()))
    return torch.tensor(out, dtype=torch.float64)


@pytest.mark.parametrize("which", ["gpt2", "llama"])
def test_heads_count_and_equal_each_copy_alone(which, gpt2, llama):
    model = gpt2 if which == "gpt2" else llama
    clean, corrupted, a, w = CLEAN, CORRUPTED, " cats", " dogs"
    if which == "llama":
        clean, corrupted = "The quick brown fox jumps over the lazy dog.", "The quick brown dog jumps over the lazy fox."
        a, w = " the", "x"
    n, H = model.config.n_layers, model.config.n_heads
    for bs in (1, 3, 32):
        r, seen = counted(model, lambda bs=bs: patch(model, clean, corrupted, a, w, batch_size=bs))
        # each copy through the layers from its own up, plus the clean and corrupted runs
        assert r.layer_evaluations == seen == H * sum(n - l for l in range(n)) + 2 * n
        assert r.layer_evaluations_full == (n * H + 2) * n
    tr = model.trace(clean, names="layers.*.attn.z")

    def put_of(l, h):
        src = tr[f"layers.{l}.attn.z"][:, h]

        def put(z, name):
            z = z.clone()
            z[:, h] = src
            return z
        return put
    ai, wi = r.tokens["answer"]["id"], r.tokens["wrong"]["id"]
    want = alone(model, clean, corrupted, lambda l: f"layers.{l}.attn.z", put_of,
                 [(l, h) for l in range(n) for h in range(H)], ai, wi).view(n, H)
    r1 = patch(model, clean, corrupted, a, w, batch_size=1)
    assert torch.equal(r1.values, want)
    torch.testing.assert_close(r.values, want, rtol=0, atol=1e-5)  # batched: up to the products' rounding


@pytest.mark.parametrize("site", ["resid_pre", "resid_mid", "resid_post"])
def test_residual_sites_count_and_equal_each_copy_alone(site, gpt2):
    from attnscope.patching import site_name
    n, L = gpt2.config.n_layers, len(gpt2.encode(CLEAN).tokens[0])
    r, seen = counted(gpt2, lambda: patch(gpt2, CLEAN, CORRUPTED, " cats", " dogs", what="residual", site=site,
                                          batch_size=1, layers=[1]))
    assert r.layer_evaluations == seen == L * (n - 1) + 2 * n
    tr = gpt2.trace(CLEAN, names=site_name(site, 1))
    src = tr[site_name(site, 1)]

    def put_of(l, p):
        def put(x, name):
            x = x.clone()
            x[:, p] = src[:, p]
            return x
        return put
    want = alone(gpt2, CLEAN, CORRUPTED, lambda l: site_name(site, l), put_of, [(1, p) for p in range(L)],
                 r.tokens["answer"]["id"], r.tokens["wrong"]["id"])
    assert torch.equal(r.values[1], want)


def test_the_count_is_in_the_json(gpt2, tmp_path):
    import json
    r = patch(gpt2, CLEAN, CORRUPTED, " cats", " dogs", layers=[1])
    d = json.loads(r.save(tmp_path / "p.json").read_text(encoding="utf-8"))
    n, H = gpt2.config.n_layers, gpt2.config.n_heads
    assert d["layer_evaluations"] == H * (n - 1) + 2 * n and d["layer_evaluations_full"] == (H + 2) * n


@pytest.mark.real_model
def test_smollm2_heads_take_at_most_55_percent_of_a_full_rerun():
    model = attnscope.load("smollm2-135m")
    r, seen = counted(model, lambda: patch(model, "When Mary and John went to the store, John gave a drink to",
                                           "When John and Mary went to the store, John gave a drink to",
                                           " Mary", " John"))
    assert r.values.shape == (30, 9) and not torch.isnan(r.values).any()
    assert r.layer_evaluations == seen == 9 * sum(30 - l for l in range(30)) + 2 * 30 == 4245
    assert r.layer_evaluations_full == 272 * 30
    assert r.layer_evaluations / r.layer_evaluations_full <= 0.55


@pytest.mark.parametrize("start", [1, 2])
def test_a_run_that_starts_at_a_later_layer_keeps_each_layers_own_rope_tables(tmp_path, start):
    """Gemma 3's layers differ in RoPE base (sliding 10⁴, full 10⁶): a stack cut to start at layer
    ``start`` must still give each layer its own table, so a prompt patched with its own activations
    gives its own metric at every layer (it gave 0.0035 off from layer 1 on: layer 2 got layer 0's)."""
    from tests.models.decoders.tiny import gemma3
    model = attnscope.load(gemma3(tmp_path / "gemma3"))
    text = "The quick brown fox jumps over the lazy dog."
    r = patch(model, text, text, 3, 5, what="residual", site="resid_pre", layers=[start], batch_size=4)
    torch.testing.assert_close(r.values[start], torch.full_like(r.values[start], r.clean), rtol=0, atol=1e-5)
