"""leave_one_out (attnscope.attribution.occlusion) against the model run on each shortened token
sequence, one at a time, through the public API (sentence_embedding, logits) in the test."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attnscope.errors import InputError
from attnscope.tokenizer import Batch

TEXT = "The cat sat on the mat."


def shortened(model, j: int) -> Batch:
    """The text's token ids with token j removed, as a one-text Batch."""
    b = model.encode(TEXT)
    keep = [k for k in range(b.input_ids.shape[1]) if k != j]
    tokens = [t for k, t in enumerate(b.tokens[0]) if k != j]
    return Batch(b.input_ids[:, keep], b.attention_mask[:, keep], b.token_type_ids[:, keep], [tokens], [TEXT])


def next_logits(model, batch) -> torch.Tensor:
    """(V,): the next-token logits the target reads (T5: the decoder's first prediction)."""
    if model.config.kind == "seq2seq":
        return model.logits(batch, "")[0, 0]
    return model.logits(batch)[0, -1]


@pytest.mark.parametrize("name", ["gpt2", "gemma3", "t5", "bart"])
def test_language_models_drop_of_the_logit(tiny, name):
    model = tiny(name)
    n = len(model.encode(TEXT).tokens[0])
    with torch.no_grad():
        full = next_logits(model, model.encode(TEXT))
        drops = [next_logits(model, shortened(model, j)) for j in range(n)]
    top = int(full.argmax())
    a = model.attribute(TEXT, "leave_one_out")
    assert a.kind == "output" and a.target == top and a.scores.shape == (n,)
    expected = torch.stack([full[top] - d[top] for d in drops])
    worst = (a.scores - expected).abs().max().item()
    assert worst <= 1e-5, worst  # measured ≤ 1.5e-7 (T5), 0 (GPT-2, Gemma 3, BART)
    b = (top + 1) % full.shape[0]
    diff = model.attribute(TEXT, "leave_one_out", target=(top, b)).scores
    expected = torch.stack([(full[top] - full[b]) - (d[top] - d[b]) for d in drops])
    assert (diff - expected).abs().max().item() <= 1e-5
    assert torch.allclose(model.attribute(TEXT, "leave_one_out", target=top).scores, a.scores)


@pytest.mark.parametrize("which", ["minilm", "deberta_v3"])
def test_encoders_pooled_embedding_along_its_own_direction(minilm, tiny, which):
    """The target every output method reads (attribution.target): the pooled embedding before
    normalisation, projected on the full text's own unit direction; the cosine distance in details."""
    model = minilm if which == "minilm" else tiny(which)
    n = len(model.encode(TEXT).tokens[0])
    with torch.no_grad():
        full = model.sentence_embedding(TEXT, normalize=False)[0]
        rows = [model.sentence_embedding(shortened(model, j), normalize=False)[0] for j in range(n)]
    u = full / full.norm()
    a = model.attribute(TEXT, "leave_one_out")
    expected = torch.stack([(full - r) @ u for r in rows])
    assert (a.scores - expected).abs().max().item() <= 1e-5 * full.norm().item()
    cosine = torch.stack([1 - F.cosine_similarity(full, r, dim=0) for r in rows])
    assert (a.details["cosine_distance"] - cosine).abs().max().item() <= 1e-5
    assert a.details["cosine_distance"].min() >= -1e-6 and a.details["cosine_distance"].max() > 0
    k = 5
    feature = model.attribute(TEXT, "leave_one_out", target=k).scores
    assert (feature - torch.stack([full[k] - r[k] for r in rows])).abs().max().item() <= 1e-5


def test_more_tokens_than_one_chunk(minilm, monkeypatch):
    """The shortened texts run in chunks: a text longer than one chunk gives the same scores as
    each shortened text run alone."""
    from attnscope.attribution import occlusion
    monkeypatch.setattr(occlusion, "CHUNK", 4)
    n = len(minilm.encode(TEXT).tokens[0])
    assert n > 2 * occlusion.CHUNK
    with torch.no_grad():
        full = minilm.sentence_embedding(TEXT, normalize=False)[0]
        expected = torch.stack([(full - minilm.sentence_embedding(shortened(minilm, j), normalize=False)[0]) @ full
                                for j in range(n)]) / full.norm()
    assert (minilm.attribute(TEXT, "leave_one_out").scores - expected).abs().max().item() <= 1e-5 * full.norm().item()


@pytest.mark.parametrize("target, words", [
    (10 ** 6, r"target 1000000 is out of range: token ids are 0\.\.\d+"),
    (-1, "target -1 is out of range"),
    ((1, 10 ** 6), "target 1000000 is out of range"),
    ((1, 2, 3), r"a target pair is \(a, b\) .* got 3 values"),
    ("cat", "target token id must be an integer, got 'cat'"),
])
def test_decoder_bad_target(tiny, target, words):
    with pytest.raises(InputError, match=words):
        tiny("gpt2").attribute(TEXT, "leave_one_out", target=target)


def test_encoder_bad_target_and_layer(minilm):
    with pytest.raises(InputError, match=r"target 384 is out of range: embedding features are 0\.\.383"):
        minilm.attribute(TEXT, "leave_one_out", target=384)
    with pytest.raises(InputError, match="explains the model's output, not a layer"):
        minilm.attribute(TEXT, "leave_one_out", layer=2)
    with pytest.raises(InputError, match="512"):
        minilm.attribute("word " * 600, "leave_one_out")
    with pytest.raises(InputError, match="one text"):
        minilm.attribute(None, "leave_one_out")


def test_one_token_is_one_clear_error(tiny):
    with pytest.raises(InputError, match="needs at least two tokens .* the text 'a' has 1"):
        tiny("gpt2").attribute("a", "leave_one_out")
