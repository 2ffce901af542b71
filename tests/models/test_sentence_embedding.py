"""MiniLM's sentence embedding is sentence-transformers' pipeline: mean over real tokens of the
last hidden states, then L2 normalisation (read from the folder's modules.json)."""

import pytest
import torch

from attnscope.errors import InputError

TEXTS = ["A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby."]


def test_mean_pooled_and_normalised_like_sentence_transformers(minilm, hf_models):
    assert (minilm.pooling, minilm.normalize) == ("mean", True)
    hf = hf_models("minilm")
    batch = minilm.encode(TEXTS)
    with torch.no_grad():
        h = hf(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
               token_type_ids=batch.token_type_ids).last_hidden_state.double()
        emb = minilm.sentence_embedding(TEXTS)
    # the reference, in float64, one text at a time over its own tokens only
    for b, n in enumerate(batch.lengths):
        mean = h[b, :n].mean(dim=0)
        ref = mean / mean.norm()
        assert (emb[b].double() - ref).abs().max().item() <= 1e-6
    assert emb.shape == (3, 384)


def test_related_sentences_are_closer(minilm):
    with torch.no_grad():
        e = minilm.sentence_embedding(TEXTS)
    sim = e @ e.T
    assert sim[0, 1] > sim[0, 2] and sim[0, 1] > sim[1, 2]


def test_pooling_without_normalisation(minilm):
    with torch.no_grad():
        raw = minilm.sentence_embedding(TEXTS, normalize=False)
        unit = minilm.sentence_embedding(TEXTS)
    assert torch.allclose(raw / raw.norm(dim=-1, keepdim=True), unit, atol=1e-6)
    assert not torch.allclose(raw.norm(dim=-1), torch.ones(3))


def test_pool_with_a_mask_of_another_shape_is_one_sentence(minilm):
    """Model.pool (public: the pooling of sentence_embedding) with a mask of another shape failed
    inside torch ('The size of tensor a (3) must match the size of tensor b (4)'), and with None as
    "'NoneType' object has no attribute 'to'"."""
    hidden = torch.zeros(1, 3, minilm.config.d_model)
    for mask, got in ((torch.ones(1, 4), r"\(1, 4\)"), (None, "None")):
        with pytest.raises(InputError, match=rf"^attention_mask must have the shape of input_ids \(1, 3\), got {got}$"):
            minilm.pool(hidden, mask)
    assert torch.equal(minilm.pool(hidden + 1, torch.ones(1, 3)), torch.ones(1, minilm.config.d_model))
