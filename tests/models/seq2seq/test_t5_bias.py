"""T5's relative position bias: log buckets as transformers computes them, one learned number per
head and bucket, the same matrix in every layer of a stack, no score scaling."""

import numpy as np
import torch

from attnscope.modules.t5_bias import t5_bucket, t5_bucket_np


def test_buckets_equal_transformers_and_the_numpy_twin():
    from transformers.models.t5.modeling_t5 import T5Attention

    rel = torch.arange(-300, 301)
    for bidirectional in (True, False):
        for n, dist in ((32, 128), (8, 20), (6, 10)):
            theirs = T5Attention._relative_position_bucket(rel, bidirectional=bidirectional, num_buckets=n,
                                                           max_distance=dist)
            ours = t5_bucket(rel, bidirectional=bidirectional, num_buckets=n, max_distance=dist)
            assert torch.equal(ours, theirs)
            assert np.array_equal(t5_bucket_np(rel.numpy(), bidirectional=bidirectional, num_buckets=n,
                                               max_distance=dist), theirs.numpy())
    # the decoder's buckets: every later key in bucket 0 (it is masked anyway), the past spread out
    assert t5_bucket(torch.tensor([5, 0, -1, -7]), bidirectional=False, num_buckets=32, max_distance=128).tolist() \
        == [0, 0, 1, 7]


def test_bias_is_learned_per_bucket_and_shared_by_the_layers(seq2seq):
    model = seq2seq["t5"]
    src = "translate English to German: The cat sat on the mat and looked at every token."
    tr = model.trace(src, "Die Katze", names=["encoder.layers.*.attn.*", "decoder.layers.*.self_attn.*"])
    S, T = tr.lengths[0], tr.target_lengths[0]
    W = model.encoder.rel_bias.embedding.weight.detach()  # (buckets, H)
    i, j = np.meshgrid(np.arange(S), np.arange(S), indexing="ij")
    buckets = t5_bucket_np(j - i, bidirectional=True, num_buckets=8, max_distance=20)
    assert buckets.max() == 7 and buckets.min() == 0, "the text should reach the last buckets"
    want = W[torch.from_numpy(buckets)].permute(2, 0, 1)  # (H, S, S)
    for layer in range(model.config.n_layers):
        bias = tr[f"encoder.layers.{layer}.attn.bias"][0]
        assert torch.equal(bias, want)
        scores = tr[f"encoder.layers.{layer}.attn.scores"]
        assert torch.equal(tr[f"encoder.layers.{layer}.attn.scaled"], scores)  # T5 does not scale
        assert (tr[f"encoder.layers.{layer}.attn.masked"] - (scores + bias)).abs().max() <= 1e-6
    Wd = model.decoder.rel_bias.embedding.weight.detach()
    i, j = np.meshgrid(np.arange(T), np.arange(T), indexing="ij")
    dec = Wd[torch.from_numpy(t5_bucket_np(j - i, bidirectional=False, num_buckets=8, max_distance=20))]
    for layer in range(model.config.n_decoder_layers):
        assert torch.equal(tr[f"decoder.layers.{layer}.self_attn.bias"][0], dec.permute(2, 0, 1))
    assert "decoder.layers.0.cross_attn.bias" not in model.hook_names  # cross-attention has no position bias


def test_weights_on_demand(seq2seq):
    model = seq2seq["t5"]
    pairs = (["a b c d e f g", "the quick brown fox"], ["x y", "z z z z z"])
    full = model.trace(*pairs, names=["*weights"])
    lean = model.trace(*pairs, names=["*.q", "*.k", "*.bias"])
    for attention, n in (("encoder", 2), ("self", 3), ("cross", 3)):
        for layer in range(n):
            for b in range(2):
                want = full.weights(layer, attention=attention, text=b)
                assert (lean.weights(layer, attention=attention, text=b) - want).abs().max() <= 3e-6
                assert (lean.weights(layer, heads=1, queries=[0], attention=attention, text=b) - want[1, [0]]).abs().max() <= 3e-6
