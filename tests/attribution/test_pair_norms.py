"""The compiled pair loop (attnscope.attribution.pair_norms) against a float64 product written here
— rows outside each column's reach left as they were, an odd feature count, several K — and its
fallbacks: switched off, a failing compiler, tensors it does not take (the caller then runs torch ops)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnscope.attribution import pair_norms as PN


def case(K: int, Lj: int, Li: int, d: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    W = torch.randn(K, Lj, Li, generator=g)
    G = torch.randn(K, Lj, d, generator=g)
    y = torch.randn(Li, d, generator=g)
    rows = torch.rand(Li, generator=g) + 0.5
    first = torch.tensor([min(j, Li - 1) // 2 for j in range(Lj)], dtype=torch.int32)
    stop = torch.tensor([min(Li, j + 3) for j in range(Lj)], dtype=torch.int32)
    return W, G, y, rows, first, stop


def reference(W, G, y, rows, l1: bool) -> np.ndarray:
    """(L_j, L_i) in float64: t_ij = rows_i · Σ_g W[g, j, i] G[g, j, :]."""
    t = np.einsum("gji,gjd->jid", W.double().numpy(), G.double().numpy())  # (L_j, L_i, d)
    if rows is not None:
        t = t * rows.double().numpy()[None, :, None]
    if l1:
        return np.abs(y.double().numpy()[None] - t).sum(-1)
    return np.sqrt((t ** 2).sum(-1))


@pytest.mark.parametrize("scaled", [True, False], ids=["rows", "no-rows"])
@pytest.mark.parametrize("K,d", [(1, 7), (4, 16), (9, 33), (12, 384), (3, 70)])
@pytest.mark.parametrize("l1", [True, False], ids=["alti", "globenc"])
def test_the_loop_is_the_definition_inside_each_reach_and_leaves_the_rest(K, d, l1, scaled):
    """Features in whole tiles (64 with AVX-512, 16 with AVX, 8 otherwise) and past them (7, 33, 70),
    rows in tiles of 4 and the ones left over."""
    assert PN.compiler() is not None, "no C compiler: install cc/gcc (or set CC) to test the compiled loop"
    W, G, y, rows, first, stop = case(K, 11, 9, d)
    rows = rows if scaled else None
    out = torch.full((11, 9), -7.0)
    assert PN.pair_norms(W, G, y, rows, first, stop, l1, out), PN.last_failure
    want = reference(W, G, y, rows, l1)
    for j in range(11):
        a, b = int(first[j]), int(stop[j])
        np.testing.assert_allclose(out[j, a:b].double().numpy(), want[j, a:b], rtol=2e-6, atol=2e-5 * np.sqrt(d))
        assert (out[j, :a] == -7).all() and (out[j, b:] == -7).all()


@pytest.mark.parametrize("l1", [True, False], ids=["alti", "globenc"])
def test_subnormal_weights_count_as_zero_and_the_thread_keeps_its_float_mode(l1):
    """Weights below 2^-126 (a peaked softmax's, MiniLM's first layer at 510 tokens) are read as 0
    while the loop runs (the mode that spares each multiply-add a microcode assist), which moves no
    result beyond float32 rounding; afterwards this thread makes subnormals again."""
    W, G, y, rows, first, stop = case(12, 11, 9, 40, seed=3)
    tiny = torch.finfo(torch.float32).tiny
    W[:, ::2] = torch.rand(W[:, ::2].shape) * tiny  # half the columns: subnormal (or zero) weights only
    assert ((W != 0) & (W.abs() < tiny)).any()
    out = torch.full((11, 9), -7.0)
    assert PN.pair_norms(W, G, y, rows, first, stop, l1, out), PN.last_failure
    want = reference(W, G, y, rows, l1)
    for j in range(11):
        a, b = int(first[j]), int(stop[j])
        np.testing.assert_allclose(out[j, a:b].double().numpy(), want[j, a:b], rtol=2e-6, atol=1e-4)
    half = torch.tensor([tiny], dtype=torch.float32) / 2  # made after the call, on the same thread
    assert float(half) != 0.0 and float(half * 1.0) == float(half)


def cpu_has(*features: str) -> bool:
    return set(features) <= set(PN.cpu_features().split())


@pytest.mark.parametrize("march,needs", [("x86-64-v3", ("avx2", "fma")), ("x86-64", ())], ids=["avx2", "sse"])
def test_the_narrower_vector_builds_are_the_definition_too(march, needs, monkeypatch, tmp_path):
    """The loop as a machine without AVX-512 compiles it (vectors of 8 floats with AVX, 4 without:
    the other branch of its tile sizes), against the same float64 product, rows and features left
    over included."""
    import platform

    if platform.machine().lower() not in ("x86_64", "amd64") or not cpu_has(*needs):
        pytest.skip(f"-march={march} builds run on x86-64 CPUs with {needs or 'SSE2'} only")  # not this machine
    monkeypatch.setenv("ATTNSCOPE_CACHE", str(tmp_path))
    monkeypatch.setattr(PN, "LIBRARIES", {})
    monkeypatch.setattr(PN, "flags", lambda: PN.FLAGS + [f"-march={march}"])
    for K, d in [(12, 384), (3, 70), (5, 9)]:
        W, G, y, rows, first, stop = case(K, 11, 10, d, seed=K)
        for l1 in (True, False):
            out = torch.full((11, 10), -7.0)
            assert PN.pair_norms(W, G, y, rows, first, stop, l1, out), PN.last_failure
            want = reference(W, G, y, rows, l1)
            for j in range(11):
                a, b = int(first[j]), int(stop[j])
                np.testing.assert_allclose(out[j, a:b].double().numpy(), want[j, a:b], rtol=2e-6,
                                           atol=2e-5 * np.sqrt(d))
                assert (out[j, :a] == -7).all() and (out[j, b:] == -7).all()
    assert list((tmp_path / "kernels").glob("pair_norms-k12-*.so"))


def test_switched_off_or_other_tensors_fall_back(monkeypatch):
    W, G, y, rows, first, stop = case(3, 4, 4, 5)
    out = torch.zeros(4, 4)
    monkeypatch.setenv("ATTNSCOPE_COMPILED", "0")
    assert not PN.pair_norms(W, G, y, rows, first, stop, True, out)
    monkeypatch.delenv("ATTNSCOPE_COMPILED")
    assert not PN.pair_norms(W.double(), G.double(), y.double(), rows, first, stop, True, out.double())
    assert not PN.usable(y.to("meta"))
    assert (out == 0).all()


def test_a_compiler_that_fails_falls_back_and_says_why(monkeypatch, tmp_path):
    monkeypatch.setenv("CC", "/bin/false")
    monkeypatch.setenv("ATTNSCOPE_CACHE", str(tmp_path))
    monkeypatch.setattr(PN, "LIBRARIES", {})
    W, G, y, rows, first, stop = case(5, 4, 4, 6)
    out = torch.zeros(4, 4)
    assert not PN.pair_norms(W, G, y, rows, first, stop, True, out)
    assert "failed" in (PN.last_failure or "")
    assert (out == 0).all() and not list(tmp_path.rglob("*.so"))


def test_the_library_is_cached_by_source_compiler_and_cpu(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTNSCOPE_CACHE", str(tmp_path))
    monkeypatch.setattr(PN, "LIBRARIES", {})
    assert PN.library(6) is not None, PN.last_failure
    built = list((tmp_path / "kernels").glob("pair_norms-k6-*.so"))
    assert len(built) == 1
    monkeypatch.setattr(PN, "LIBRARIES", {})
    stamp = built[0].stat().st_mtime_ns
    assert PN.library(6) is not None  # a second process: loaded, not compiled again
    assert built[0].stat().st_mtime_ns == stamp and len(list((tmp_path / "kernels").glob("*.so"))) == 1


@pytest.mark.parametrize("pattern", ["full", "causal", "window", "gaps"])
def test_columns_transpose_and_reach_as_the_torch_rule_does(pattern):
    """The compiled transpose equals W.transpose(1, 2) bit for bit, and each column's reach equals
    attnscope.attribution.pairs.reach's (some weight nonzero, or the diagonal) on masks of each kind,
    sizes of every kind (45 × 45 by 5 heads)."""
    from attnscope.attribution.pairs import reach

    g = torch.Generator().manual_seed(1)
    K, L = 5, 45
    W = torch.rand(K, L, L, generator=g)
    i, j = torch.arange(L)[:, None], torch.arange(L)[None, :]
    keep = {"full": torch.ones(L, L, dtype=torch.bool), "causal": j <= i, "window": (j <= i) & (j > i - 6),
            "gaps": (j <= i) & ((i + j) % 7 != 3)}[pattern]
    W = W * keep
    W[:, 10, :] = 0  # a row with no weight at all: only its diagonal is reached
    got = PN.columns(W)
    assert got is not None, PN.last_failure
    Wc, first, stop = got
    assert torch.equal(Wc, W.transpose(1, 2).contiguous())
    want_first, want_stop = reach(W.transpose(1, 2))
    assert first.tolist() == want_first and stop.tolist() == want_stop
