"""The tuned lens against float64 NumPy written from the formulas: each point's affine map, the
final norm and the unembedding applied by hand to the traced stream; identity maps are the logit
lens bit for bit; training lowers the loss; files round-trip bit for bit and a file made for
another model, or damaged, is refused in one sentence."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import torch

import attnscope
import tests.models.decoders.tiny  # noqa: F401  (registers the decoder families)
from attnscope.analysis.corpus import python_docs_paragraphs
from attnscope.errors import InputError
from attnscope.lens import logit_lens
from attnscope.lens.tuned import identity_lens, load_tuned_lens, model_fingerprint, tuned_lens
from attnscope.lens.tuned_train import held_out_kl, train_tuned_lens
from tests.lens.test_lens import TEXT, W_U, f64, final_norm_np, log_softmax


@pytest.fixture(scope="module")
def tiny(tiny_family):
    return tiny_family


def random_lens(model, seed: int = 0):
    """Maps near the identity with a visible twist: A = I + 0.2·G/√d, b = 0.3·g (seeded)."""
    lens = identity_lens(model)
    g = torch.Generator().manual_seed(seed)
    P, d, _ = lens.weight.shape
    lens.weight = lens.weight + 0.2 * torch.randn(P, d, d, generator=g) / d ** 0.5
    lens.bias = 0.3 * torch.randn(P, d, generator=g)
    return lens


def stream_np(m, text) -> list[np.ndarray]:
    """Every point's stream (L, d) in float64, read from a trace by name: the embedding is what the
    first residual sum adds attention's output to."""
    n = m.config.n_layers
    names = [f"layers.{i}.{s}" for i in range(n) for s in ("attn_resid", "out")]
    tr = m.trace(text if not isinstance(text, str) else [text], names=names + ["layers.0.attn.out"])
    emb = f64(tr["layers.0.attn_resid"][0]) - f64(tr["layers.0.attn.out"][0])
    return [emb] + [f64(tr[name][0]) for name in names]


@pytest.mark.parametrize("name", ("gpt2", "llama_gqa"))
def test_tuned_logits_are_the_affine_map_then_norm_and_unembedding(tiny, name):
    m32 = tiny(name)
    lens = random_lens(m32)
    A, b = lens.weight.double().numpy(), lens.bias.double().numpy()
    m64 = copy.deepcopy(m32).to(torch.float64)  # same fingerprint: the float32 weights, exactly
    for m, tol in ((m64, 1e-6), (m32, 1e-5)):  # float32: its own rounding only; the KL is float32 in both
        r = tuned_lens(m, TEXT, lens, keep_logits=True)
        hs = stream_np(m, TEXT)  # each point (L, d), float64 from the model's own trace
        final = log_softmax(final_norm_np(m, hs[-1]) @ W_U(m).T)  # (L, V): the model's own, no map
        for j, h in enumerate(hs):
            want = final_norm_np(m, h @ A[j].T + b[j]) @ W_U(m).T  # (L, V)
            got = r.logits[j].double().numpy()
            assert np.abs(got - want).max() <= tol * np.abs(want).max(), (name, m.dtype, j)
            kl = (np.exp(final) * (final - log_softmax(want))).sum(-1)
            np.testing.assert_allclose(r.kl[j].double().numpy(), kl, atol=2e-5)


def test_identity_maps_are_exactly_the_logit_lens(tiny):
    m = tiny("llama_gqa")
    a = logit_lens(m, TEXT, keep_logits=True)
    b = tuned_lens(m, TEXT, identity_lens(m), keep_logits=True)
    for field in ("logits", "top_ids", "top_probs", "target_ids", "target_prob", "target_rank", "kl"):
        assert torch.equal(getattr(a, field), getattr(b, field)), field


@pytest.mark.parametrize("optimizer, lr", [("sgd", 0.5), ("adam", 3e-3)])
def test_training_lowers_the_loss_and_keeps_the_model(tiny, optimizer, lr):
    m = tiny("llama_gqa")
    before = {k: v.clone() for k, v in m.state_dict().items()}
    grads = [p.requires_grad for p in m.parameters()]
    # batch = texts: every step sees the same 4 texts, so the losses are comparable step to step
    lens, losses = train_tuned_lens(m, texts=4, held_out=3, length=16, steps=8, batch=4, lr=lr, optimizer=optimizer,
                                    seed=1)
    assert losses[-1] < 0.9 * losses[0], losses
    assert torch.equal(lens.weight[-1], torch.eye(m.config.d_model)) and not lens.bias[-1].any()
    assert not torch.equal(lens.weight[0], torch.eye(m.config.d_model))
    assert all(torch.equal(v, before[k]) for k, v in m.state_dict().items())
    assert [p.requires_grad for p in m.parameters()] == grads  # as they were
    s = lens.settings
    assert (s["model"], s["fingerprint"], s["steps"], s["lr"], s["seed"], s["corpus"]) == \
        (m.name, model_fingerprint(m), 8, lr, 1, "builtin:python-docs")
    assert s["attnscope"] == attnscope.__version__ and len(s["held_out_indices"]) == 3


def test_held_out_kl_is_the_formula_on_the_cut_texts(tiny):
    m = tiny("gpt2")
    lens = random_lens(m, seed=3)
    lens.settings.update(held_out_indices=[5, 9], length=12)
    res = held_out_kl(m, lens)
    texts = python_docs_paragraphs()
    A, b = lens.weight.double().numpy(), lens.bias.double().numpy()
    for row in res["texts"]:
        batch = m.encode([texts[row["index"]][1]], truncate=True, max_length=12)
        hs = stream_np(m, batch)
        assert row["tokens"] == hs[0].shape[0] == 12
        final = log_softmax(final_norm_np(m, hs[-1]) @ W_U(m).T)
        for j, h in enumerate(hs):
            for key, x in (("logit", h), ("tuned", h @ A[j].T + b[j])):
                lp = log_softmax(final_norm_np(m, x) @ W_U(m).T)
                assert row[key][j] == pytest.approx((np.exp(final) * (final - lp)).sum(-1).mean(), rel=1e-4, abs=1e-6)


def test_held_out_kl_of_a_lens_without_held_out_texts_or_for_another_model_is_refused(tiny):
    """held_out_kl(model, identity_lens(model)) stopped with KeyError: 'held_out_indices'; a lens of
    another model's weights (same shapes) was measured as if it were this one's. One sentence each."""
    m = tiny("llama_gqa")
    with pytest.raises(InputError, match="this lens's settings name none"):
        held_out_kl(m, identity_lens(m))
    lens, _ = train_tuned_lens(m, texts=1, held_out=1, length=4, steps=1, batch=1)
    other = copy.deepcopy(m)
    with torch.no_grad():
        other.ln_f.weight.add_(0.01)  # other weights, same shapes
    with pytest.raises(InputError, match="not on these weights"):
        held_out_kl(other, lens)


def test_a_length_past_the_models_positions_is_refused_naming_length(tiny):
    """train_tuned_lens(length=129) on a 128-position model (the CLI's --length) stopped with the
    tokenizer's 'max_length must be an integer in [1, 128]', an option nobody gave."""
    m = tiny("llama_gqa")
    assert m.config.max_positions == 128
    with pytest.raises(InputError, match=r"^length 129 is more than .* reads: .* at most the model's 128 positions$"):
        train_tuned_lens(m, texts=1, held_out=1, length=129, steps=1, batch=1)


def test_the_split_is_seeded_and_disjoint():
    from attnscope.lens.tuned_train import split_builtin
    train, held = split_builtin(50, 10, seed=4)
    assert (train, held) == split_builtin(50, 10, seed=4) and held == split_builtin(7, 10, seed=4)[1]
    assert not set(train) & set(held) and len(set(train)) == 50
    texts = [python_docs_paragraphs()[i][1] for i in train + held]
    assert len(set(texts)) == 60  # no text is in both
    assert split_builtin(50, 10, seed=5)[1] != held


def test_save_and_load_round_trip_every_bit(tiny, tmp_path):
    m = tiny("llama_gqa")
    lens = random_lens(m)
    lens.settings["lr"] = 0.1 + 0.2  # a float that must come back exactly
    lens.save(tmp_path / "l.safetensors")
    back = load_tuned_lens(tmp_path / "l.safetensors", m)
    assert torch.equal(back.weight.view(torch.int32), lens.weight.view(torch.int32))
    assert torch.equal(back.bias.view(torch.int32), lens.bias.view(torch.int32))
    assert back.points == lens.points and back.settings == lens.settings


def test_refusals_are_one_sentence(tiny, tmp_path):
    from safetensors.torch import save_file
    m = tiny("llama_gqa")
    lens = identity_lens(m)
    lens.save(tmp_path / "ok.safetensors")
    with pytest.raises(InputError, match="no such file"):
        load_tuned_lens(tmp_path / "nope.safetensors", m)
    (tmp_path / "junk.safetensors").write_bytes(b"not a safetensors file at all")
    with pytest.raises(InputError, match="cannot be read as safetensors"):
        load_tuned_lens(tmp_path / "junk.safetensors", m)
    save_file({"weight": torch.zeros(2)}, str(tmp_path / "other.safetensors"))
    with pytest.raises(InputError, match="is not a tuned lens written by attnscope"):
        load_tuned_lens(tmp_path / "other.safetensors", m)
    meta = {"format": "attnscope-tuned-lens", "version": "1", "points": json.dumps(lens.points),
            "settings": json.dumps(lens.settings)}
    save_file({"weight": lens.weight[:, :, :-1].contiguous(), "bias": lens.bias}, str(tmp_path / "bad.safetensors"),
              metadata=meta)
    with pytest.raises(InputError, match=r"holds weight \(5, 64, 63\) and bias \(5, 64\) for 5 points"):
        load_tuned_lens(tmp_path / "bad.safetensors", m)
    with pytest.raises(InputError, match="holds maps for 5 points of width 64, made for .*; .* has 5 points of width 32"):
        load_tuned_lens(tmp_path / "ok.safetensors", tiny("gpt2"))
    other = copy.deepcopy(m)
    with torch.no_grad():
        other.ln_f.weight.add_(0.01)  # other weights, same shapes
    with pytest.raises(InputError, match="was trained on .* not on these weights"):
        load_tuned_lens(tmp_path / "ok.safetensors", other)
    with pytest.raises(InputError, match="not on these weights"):
        tuned_lens(other, TEXT, lens)
    for kw, words in (({"lr": 0.0}, "learning rate 0.0"), ({"steps": 0}, "steps 0 must be"),
                      ({"texts": 10 ** 6}, "do not fit")):
        with pytest.raises(InputError, match=words):
            train_tuned_lens(m, **kw)
