"""The factored attention block (attnscope.attribution.factored) against the float64 loop of
test_norm_alti (each layer's block rerun per source token from the weights): its written-out parts
and output, and GlobEnc's and ALTI's matrices (attnscope.attribution.pairs) by the compiled loop and by torch ops
in chunks of three columns by five rows (several chunks a layer; in Gemma 3's window-6 layers and
the causal ones a chunk's rows start after 0 or end before L, and a block of rows no column of a
chunk reaches is skipped), and through the written-out path (a recipe whose attention reads mixed tokens would take it)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

import attnscope.threads as threads
from attnscope.attribution import decompose as DC
from attnscope.attribution import factored as FA
from attnscope.attribution import pair_norms as PN
from attnscope.attribution import pairs as PA
from tests.attribution.test_norm_alti import TEXT, forward_f64, parts_np, rows

NAMES = ["minilm", "llama_gqa", "gemma3", "olmo2", "t5", "gpt2"]


@pytest.fixture(scope="module")
def models(minilm, tiny):
    return {name: minilm if name == "minilm" else tiny(name) for name in NAMES}


def f64(t) -> np.ndarray:
    return t.detach().double().cpu().numpy()


def reference(T: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """GlobEnc's and ALTI's rows of one layer from the float64 parts, rows normalised."""
    alti = np.maximum(np.abs(y).sum(-1)[:, None] - np.abs(y[:, None] - T).sum(-1), 0.0)
    return {"globenc": rows(np.linalg.norm(T, axis=-1)), "alti": rows(alti)}


def normalised(m) -> np.ndarray:
    return rows(f64(m))


@pytest.mark.parametrize("compiled", [False, True], ids=["torch", "compiled"])
@pytest.mark.parametrize("name", NAMES)
def test_factored_blocks_in_chunks_are_the_definitions(models, name, compiled):
    model = models[name]
    stack = DC.stack_of(model, "the test")
    tr = model.trace(TEXT, names=FA.trace_names(stack), **stack.trace_kw)  # only what the walk reads
    f = forward_f64(model)
    for i in range(stack.n_layers):
        T, y = parts_np(model, i, f)  # (L, L, d), (L, d)
        L, d = y.shape
        block = FA.walk(stack, tr, i)
        assert isinstance(block, FA.Factored) and block.W.shape[0] > 0
        D = f64(block.written())  # (L, L + 1, d)
        scale = max(1.0, np.abs(T).max())
        assert np.abs(D[:, :L] - T).max() < 2e-5 * scale, (name, i)
        assert np.abs(D.sum(1) - y).max() < 2e-5 * max(1.0, np.abs(y).max())
        assert np.abs(f64(block.total()) - y).max() < 2e-5 * max(1.0, np.abs(y).max())
        want = reference(T, y)
        if compiled:  # the compiled loop (built here: the tests need a C compiler, as users of it do)
            assert PN.compiler() is not None, "no C compiler: install cc/gcc (or set CC) to test the compiled loop"
            assert PN.library(block.W.shape[0]) is not None, PN.last_failure
            got = PA.block_matrices(block, ("globenc", "alti"))
        else:  # 3 columns a chunk by blocks of 5 rows: several row blocks, some skipped in causal layers
            got = PA.block_matrices(block, ("globenc", "alti"), elements=15 * d, rows=5, compiled=False)
        for m in ("globenc", "alti"):
            np.testing.assert_allclose(normalised(got[m]), want[m], atol=2e-5, err_msg=f"{name} layer {i} {m}")


@pytest.mark.parametrize("name", ["minilm", "gemma3"])
def test_the_written_out_path_is_the_definitions(models, name):
    model = models[name]
    stack = DC.stack_of(model, "the test")
    tr = model.trace(TEXT, names=DC.trace_names(stack))
    f = forward_f64(model)
    for i in range(stack.n_layers):
        T, y = parts_np(model, i, f)
        L, d = y.shape
        D = DC.decompose_layer(stack, tr, i)[DC.block_end(DC.recipe_of(stack, i))]
        got = PA.block_matrices(FA.Written(D), ("globenc", "alti"), elements=2 * L * d)
        for m, ref in reference(T, y).items():
            np.testing.assert_allclose(normalised(got[m]), ref, atol=2e-5, err_msg=f"{name} layer {i} {m}")


def test_causal_rows_reach_only_earlier_columns(models):
    """In a causal layer row i's chunk stops at column i + 1 (the later tokens' T_i(x_j) is 0 and so are
    both matrices there); in Gemma 3's window-6 layers the early columns are skipped too."""
    for name, window in (("gpt2", None), ("gemma3", 6)):
        model = models[name]
        stack = DC.stack_of(model, "the test")
        tr = model.trace(TEXT, names=FA.trace_names(stack))
        first, stop = PA.reach(FA.walk(stack, tr, 0).W)
        L = len(first)
        assert stop == list(range(1, L + 1))
        if window is not None:
            assert first == [max(0, i - window + 1) for i in range(L)]


@pytest.mark.parametrize("name", ["minilm", "gemma3"])
def test_the_layers_run_side_by_side_in_lanes_with_the_same_matrices(models, name, monkeypatch):
    """With two torch threads ``model.attribute`` reads its layers in two lanes (one core each);
    every layer's matrix is still the float64 definition's."""
    model = models[name]
    ran_in: list[str] = []
    real = PA.block_matrices

    def spy(*args, **kw):
        ran_in.append(threading.current_thread().name)
        return real(*args, **kw)
    monkeypatch.setattr(PA, "block_matrices", spy)
    f = forward_f64(model)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        got = {m: model.attribute(TEXT, m).per_layer for m in ("globenc", "alti")}
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    n = len(got["alti"])
    assert len(ran_in) == 2 * n and all(t.startswith(threads.LANE_PREFIX) for t in ran_in)
    for i in range(n):
        want = reference(*parts_np(model, i, f))
        for m in ("globenc", "alti"):
            np.testing.assert_allclose(f64(got[m][i]), want[m], atol=2e-5, err_msg=f"{name} layer {i} {m}")
