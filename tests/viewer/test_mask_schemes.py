"""The viewer's data carries each layer's mask scheme (its layer type) besides its window: a
Gemma 3 local layer's keys are hidden as the model's own mask hides them, and a mask scheme the
page cannot draw (not a causal window) is refused in one sentence instead of drawn wrong."""

import dataclasses

import numpy as np
import pytest
import torch

import attnscope
from attnscope import InputError
from attnscope.positions import PositionScheme, register_position, unregister_position
from attnscope.reference import window_mask
from attnscope.viewer import data
from attnscope.viewer.run import view_data

TEXT = "A sliding window keeps each token's view to the most recent few tokens."


@pytest.fixture(scope="module")
def gemma3(tmp_path_factory):
    from tests.models.decoders import tiny as T
    return attnscope.load(T.gemma3(tmp_path_factory.mktemp("mask-schemes") / "gemma3"))


def test_each_layer_carries_its_mask_scheme_and_window(gemma3):
    cfg = view_data(gemma3, TEXT)["config"]
    assert cfg["masks"] == ["sliding", "sliding", "full"] and cfg["windows"] == [6, 6, None]
    tr = gemma3.trace(TEXT, names=["layers.*.attn.weights"])
    n = tr.length(0)
    assert n > 2 * 6  # long enough that the window hides keys
    for layer in range(3):
        # the page's rule (keys k ≤ q, fewer than `window` back) is the model's mask of that layer
        page = window_mask(n, n, cfg["windows"][layer])
        np.testing.assert_array_equal(page, tr.mask(layer, text=0)[0].numpy())
        hidden = tr[f"layers.{layer}.attn.weights"][0][:, ~page]  # (H, hidden keys)
        assert hidden.numel() > 0 and float(hidden.abs().max()) == 0.0
    # a local layer hides more than causality does, the global one exactly causality
    assert (~window_mask(n, n, 6)).sum() > (~window_mask(n, n, None)).sum()


def _chunked(q_pos, k_pos, window=None):  # keys up to the query, in the query's chunk of 4
    q, k = q_pos[..., :, None], k_pos[..., None, :]
    return (k <= q) & (q // 4 == k // 4)


def test_a_mask_the_page_cannot_draw_is_refused(gemma3):
    register_position(PositionScheme(name="test_chunked", acts_on="mask", mask=_chunked,
                                     mask_np=lambda q, k, w=None: _chunked(np.asarray(q), np.asarray(k))))
    try:
        config = dataclasses.replace(gemma3.config, layer_types=["sliding", "test_chunked", "full"])
        assert torch.equal(_chunked(torch.arange(6), torch.arange(6))[5], torch.tensor([0, 0, 0, 0, 1, 1]).bool())
        with pytest.raises(InputError, match="layer 1's mask scheme 'test_chunked' hides other keys than a causal "
                                             "window; the viewer's page draws causal windows only"):
            data.layer_masks(config, 10)
        assert data.layer_masks(config, 4) == ["sliding", "test_chunked", "full"]  # one chunk: still causal
    finally:
        unregister_position("test_chunked")
