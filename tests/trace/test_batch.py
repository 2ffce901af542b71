"""A list of texts runs as one right-padded batch; on real tokens every intermediate equals the
text run alone, padded keys get -inf before and 0 after the softmax."""

import pytest
import torch

TEXTS = ["The cat sat on the mat.", "Attention, please!", "Hi"]


@pytest.mark.parametrize("which", ["minilm", "roberta", "gpt2"])
def test_batch_equals_texts_alone_on_real_tokens(which, minilm, tiny_models):
    model = minilm if which == "minilm" else tiny_models[which]
    batch = model.trace(TEXTS)
    assert batch.tokens == [model.encode(t).tokens[0] for t in TEXTS]
    L = batch.input_ids.shape[1]
    for b, text in enumerate(TEXTS):
        alone = model.trace(text)
        n = batch.lengths[b]
        assert alone.lengths == [n]
        for name in model.hook_names:
            a, t = alone[name][0], batch[name][b]
            if name.split(".")[-1] in ("scores", "scaled", "masked", "weights"):
                t, a = t[:, :n, :n], a[:, :n, :n]
                finite = torch.isfinite(a)
                assert torch.equal(finite, torch.isfinite(t)), name
                a, t = a.masked_fill(~finite, 0), t.masked_fill(~finite, 0)
            elif name.split(".")[-1] in ("q", "k", "v", "z"):
                t, a = t[:, :n], a[:, :n]
            else:
                t, a = t[:n], a[:n]
            tol = 1e-5 * max(1.0, a.abs().max().item())
            assert (t - a).abs().max().item() <= tol, (b, name)
        pad = batch.attention_mask[b] == 0
        if pad.any():
            assert torch.isneginf(batch["layers.0.attn.masked"][b][..., pad]).all()
            assert batch["layers.0.attn.weights"][b][..., pad].eq(0).all()
    assert batch.input_ids.shape == (3, L) and batch.attention_mask.sum(1).tolist() == batch.lengths


def test_roberta_numbers_positions_after_padding_idx(tiny_models):
    model = tiny_models["roberta"]
    tr = model.trace(["a b c d e", "a"], names=["embed.positions"])
    table = model.embed.position_embedding.weight
    n = tr.lengths
    assert torch.equal(tr["embed.positions"][0], table[2:2 + n[0]])  # padding_idx 1 → positions 2, 3, …
    assert torch.equal(tr["embed.positions"][1, :n[1]], table[2:2 + n[1]])
    assert torch.equal(tr["embed.positions"][1, n[1]:], table[1].expand(n[0] - n[1], -1))  # padding: padding_idx
