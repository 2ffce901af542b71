"""A trace keeps ``scaled``, ``masked`` and ``weights`` as the call that made them and computes them
again on read: bit for bit (torch.equal) the tensors the forward used, as a recorder attached to
the same pass sees them — every scoring, every family kind, padded batches, heads; the bytes a
full trace holds drop by those matrices; hooks that change a step keep it as a tensor."""

import dataclasses

import pytest
import torch

import attnscope
from attnscope.hooks import Recorder, name_hook_points
from attnscope.kernels.backend import MATRIX_STEPS

TEXTS = ["The cat sat on the mat, and then it looked at the dog for a long while.", "Attention, please!"]
SOURCE = ["The quick brown fox jumps over the lazy dog.", "Hi"]
TARGET = ["A fox jumped.", "Hello there, friend"]


class Grab(Recorder):
    """A recorder (so the trace trusts its block) that keeps a copy of what the forward used."""

    def __call__(self, t, name):
        self.sink[name] = t.clone()


def traced_and_seen(model, *args, names=None, **kw):
    """A trace of ``args`` and, from the same pass, a copy of every L×S step of every attention block."""
    seen: dict = {}
    points = name_hook_points(model)
    handles = [p.add_hook(Grab(seen)) for n, p in points.items() if n.rpartition(".")[2] in MATRIX_STEPS]
    try:
        tr = model.trace(*args, names=names, **kw)
    finally:
        for h in handles:
            h.remove()
    return tr, seen


def check_derived(tr, seen):
    steps = [n for n in tr.names if n.rpartition(".")[2] in ("scaled", "masked", "weights")]
    assert steps and set(steps) <= set(tr.derived), sorted(set(steps) - set(tr.derived))[:3]
    for n in steps:
        got = tr[n]
        assert got.dtype == seen[n].dtype and torch.equal(got, seen[n]), n
    return steps


def materialised_nbytes(model, *args):
    """The bytes of the same full trace with every step kept as a tensor (a no-op hook on each
    block's scores makes the trace keep its steps as they are)."""
    blocks = {n.rpartition(".")[0] for n in model.hook_names if n.endswith(".scores")}
    tr = model.trace(*args, hooks={f"{b}.scores": (lambda t, n: None) for b in blocks})
    assert not tr.derived
    return tr.nbytes


@pytest.mark.parametrize("scoring", list(attnscope.SCORINGS))
def test_every_scoring_reads_back_the_forwards_bits(scoring, tiny_models):
    base = tiny_models["bert"]
    model = type(base)(dataclasses.replace(base.config, scoring=scoring), base._family, tokenizer=base.tokenizer).eval()
    tr, seen = traced_and_seen(model, TEXTS)
    check_derived(tr, seen)
    for h in range(model.config.n_heads):  # a head of a derived step: its slice, exactly
        assert torch.equal(tr.step(1, "weights", h), seen["layers.1.attn.weights"][:, h])


@pytest.mark.parametrize("which", ["minilm", "bert", "roberta", "gpt2", "deberta_v3", "deberta_v2", "deberta_c2p",
                                   "albert", "distilbert", "electra", "xlm_roberta"])
def test_every_encoder_family(which, minilm, tiny_models, encoders):
    model = minilm if which == "minilm" else tiny_models.get(which) or encoders[which]
    tr, seen = traced_and_seen(model, TEXTS)
    steps = check_derived(tr, seen)
    assert len(steps) == 3 * model.config.n_layers
    full = materialised_nbytes(model, TEXTS)
    one = seen["layers.0.attn.weights"].numel() * 4  # one L×S matrix of one layer
    # at least scaled and weights of every layer are not held any more (masked too where padded)
    assert full - tr.nbytes >= 2 * model.config.n_layers * one * 0.95, (full, tr.nbytes)


@pytest.mark.parametrize("which", ["llama_gqa", "llama_mqa", "qwen2_window", "mistral_window", "gemma3"])
def test_every_decoder_kind(which, decoders):
    model = decoders[which]
    texts = [" ".join(["words"] * 12), "short"]  # past every sliding window; padded
    tr, seen = traced_and_seen(model, texts)
    steps = check_derived(tr, seen)
    assert len(steps) == 3 * model.config.n_layers
    assert tr.nbytes < materialised_nbytes(model, texts)
    h = model.config.n_heads - 1  # a query head of the last k/v group
    assert torch.equal(tr.weights(0, heads=h), seen["layers.0.attn.weights"][:, h])


@pytest.mark.parametrize("which", ["t5", "t5_v11", "bart"])
def test_encoder_decoder_models(which, seq2seq):
    model = seq2seq[which]
    tr, seen = traced_and_seen(model, SOURCE, TARGET)
    steps = check_derived(tr, seen)
    assert any(".cross_attn." in n for n in steps) and any(".self_attn." in n for n in steps)
    assert tr.nbytes < materialised_nbytes(model, SOURCE, TARGET)


def test_a_recorded_head_of_a_derived_step(minilm):
    names = ["layers.2.attn.scores", "layers.2.attn.weights[3]", "layers.2.attn.masked[1]"]
    tr, seen = traced_and_seen(minilm, TEXTS, names=names)
    assert set(tr.derived) == {"layers.2.attn.weights[3]", "layers.2.attn.masked[1]"}
    assert torch.equal(tr["layers.2.attn.weights[3]"], seen["layers.2.attn.weights"][:, 3])
    assert torch.equal(tr["layers.2.attn.masked[1]"], seen["layers.2.attn.masked"][:, 1])


def test_without_the_scores_the_steps_stay_tensors(minilm):
    """Kept as a call, weights would hold the scores: as much as the weights themselves."""
    tr = minilm.trace(TEXTS, names=["layers.0.attn.weights", "layers.0.attn.scaled"])
    assert tr.derived == []


def test_a_hook_that_replaces_a_step(minilm):
    half = lambda t, n: t * 0.5  # noqa: E731
    tr = minilm.trace(TEXTS, hooks={"layers.1.attn.scaled": half})
    plain = minilm.trace(TEXTS)  # every layer on the explicit path, as in the hooked trace
    assert torch.equal(tr["layers.1.attn.scaled"], plain["layers.1.attn.scaled"] * 0.5)
    assert not any(n.startswith("layers.1.") for n in tr.derived)
    assert any(n.startswith("layers.2.") for n in tr.derived)  # other layers as before
    w = torch.softmax(tr["layers.1.attn.masked"], dim=-1)
    torch.testing.assert_close(tr["layers.1.attn.weights"], w, rtol=0, atol=1e-6)


def test_a_hook_that_changes_a_step_in_place(minilm):
    """A hook may scale the tensor in place and return None: the trace must show what it left."""
    def in_place(t, n):
        t.mul_(0.5)
    tr, seen = traced_and_seen(minilm, TEXTS, hooks={"layers.1.attn.scaled": in_place})
    # the copy was taken before the hook ran (× 0.5 is exact); the weights after
    assert torch.equal(tr["layers.1.attn.scaled"], seen["layers.1.attn.scaled"] * 0.5)
    assert torch.equal(tr["layers.1.attn.weights"], seen["layers.1.attn.weights"])
    with minilm.hooks({"layers.1.attn.masked": in_place}):  # attached outside the trace too
        tr, seen = traced_and_seen(minilm, TEXTS)
    assert torch.equal(tr["layers.1.attn.masked"], seen["layers.1.attn.masked"])


def test_grad_keeps_the_tensors_in_the_graph(minilm):
    tr = minilm.trace("hello world", grad=True)
    assert tr.derived == [] and tr["layers.0.attn.weights"].requires_grad
    (g,) = torch.autograd.grad(tr.output.sum(), tr["layers.0.attn.weights"])
    assert g.shape == tr["layers.0.attn.weights"].shape


def test_residual_aliases_are_one_tensor(minilm, tiny_models):
    """post-LN: a layer's output is the next one's input; pre-LN: ffn_resid is out. Stored once."""
    tr = minilm.trace(TEXTS)
    assert tr["layers.0.out"].data_ptr() == tr["layers.1.attn_in"].data_ptr()
    assert tr["embed.out"].data_ptr() == tr["layers.0.attn_in"].data_ptr()
    g = tiny_models["gpt2"].trace(TEXTS)
    assert g["layers.0.ffn_resid"].data_ptr() == g["layers.0.out"].data_ptr()
