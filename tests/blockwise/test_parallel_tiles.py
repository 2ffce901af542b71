"""With several torch threads the query tiles run side by side on single-threaded workers; the
result is the sequential one, the workers really run one thread each, and the process's own
thread count is left as it was."""

import torch

import attnscope.blockwise as BW
import attnscope.kernels.blockwise.pool as tile_pools
import attnscope.kernels.fused as fused


def test_parallel_equals_sequential(monkeypatch):
    monkeypatch.setattr(fused, "flash_lse_ok", lambda *a: False)  # this tests attnscope's own kernel
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 2048, 32, generator=g) for _ in range(3))
    mask = torch.rand(1, 1, 1, 2048, generator=g) > 0.1
    before = torch.get_num_threads()
    seq = [BW.blockwise_attention(q, k, v, mask, causal=c, scoring="cosine", return_lse=True) for c in (False, True)]
    seq_w = BW.attention_weights(q, k, mask, heads=[1, 0], queries=slice(0, 1500))
    used = []
    real = tile_pools.lane_pool
    monkeypatch.setattr(tile_pools, "lane_pool", lambda n: used.append(n) or real(n))
    try:
        torch.set_num_threads(2)
        par = [BW.blockwise_attention(q, k, v, mask, causal=c, scoring="cosine", return_lse=True) for c in (False, True)]
        par_w = BW.attention_weights(q, k, mask, heads=[1, 0], queries=slice(0, 1500))
        assert torch.get_num_threads() == 2  # the process setting survives the workers' own
        pool = real(2)
        assert sorted(pool.submit(torch.get_num_threads).result() for _ in range(6)) == [1] * 6
    finally:
        torch.set_num_threads(before)
    assert len(used) == 2 + 2  # forward ×2, weights: lse pass + fill pass
    for (o1, l1), (o2, l2) in zip(seq, par):
        torch.testing.assert_close(o2, o1, rtol=0, atol=1e-6)
        torch.testing.assert_close(l2, l1, rtol=0, atol=1e-5)
    torch.testing.assert_close(par_w, seq_w, rtol=0, atol=1e-7)
