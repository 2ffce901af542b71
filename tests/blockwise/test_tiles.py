"""What makes it memory-efficient: no tensor of L×S elements is ever allocated (checked by
watching every allocation), and causal attention never computes tiles above the diagonal."""

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from attnscope.blockwise import attention_weights, blockwise_attention
from attnscope.kernels.blockwise.tiles import Tiles


class LargestAllocation(TorchDispatchMode):
    """Records the largest number of elements of any tensor an op returns."""

    def __init__(self):
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor):
                self.largest = max(self.largest, t.numel())
        return out


def test_no_score_matrix_is_allocated():
    H, L, d = 2, 1024, 16
    q, k, v = (torch.randn(1, H, L, d) for _ in range(3))
    mask = torch.ones(1, 1, 1, L, dtype=torch.bool)  # a key mask (B, 1, 1, S): O(S), not O(L·S)
    for scoring in ("cosine", "inv_d"):
        with LargestAllocation() as watch:
            blockwise_attention(q, k, v, mask, scoring=scoring, block_size=(128, 256), kernel="online")
        # one tile of scores (H·128·256) is the largest thing (q, k, v are H·L·d = half of it);
        # the L×S matrix would be H·L·L, 32 times more
        assert watch.largest == H * 128 * 256, (scoring, watch.largest)
    with LargestAllocation() as watch:
        w = attention_weights(q, k, heads=1, queries=slice(0, 100), block_size=(128, 64))
    assert w.shape == (1, 100, L) and watch.largest == 100 * L  # the result, nothing larger


def test_causal_skips_tiles_above_the_diagonal(monkeypatch):
    seen = []
    real = Tiles.scores
    monkeypatch.setattr(Tiles, "scores", lambda self, ti, tj, rel: seen.append((ti, tj, rel)) or real(self, ti, tj, rel))
    q, k, v = (torch.randn(1, 1, 1024, 8) for _ in range(3))
    blockwise_attention(q, k, v, causal=True, block_size=256, kernel="online")
    assert sorted((ti, tj) for ti, tj, _ in seen) == [(i, j) for i in range(4) for j in range(i + 1)]
    assert {rel for ti, tj, rel in seen if ti == tj} == {"part"} and {rel for ti, tj, rel in seen if ti != tj} == {"full"}
    seen.clear()
    blockwise_attention(q, k, v, causal=False, block_size=256, kernel="online")
    assert len(seen) == 16
