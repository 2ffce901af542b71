"""The worked calculations of a half-precision model (issue 29 item 3): ``explain`` given a model
loaded in bfloat16 or float16 prints what it prints for the same checkpoint loaded in float32, every
digit, and so do ``check``'s rows of a real model — its float64 numbers come from the checkpoint's
weights read again, not from their rounding (which would move them: checked below) — while the half
model itself keeps half the weight bytes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnscope
from attnscope.errors import InputError
from attnscope.explain import explain
from attnscope.explain.row import model_row_data
from attnscope.models.precision import full_precision
from attnscope.reference_model import forward
from attnscope.testing import tiny

TEXT = "The cat sat on the mat because it was tired."


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    return tiny.tiny_gpt2(tmp_path_factory.mktemp("gpt2"))


def _same(a, b) -> bool:
    """Equal to the bit: arrays and tensors by their values, containers item by item."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return bool(a == b)


def _nbytes(m) -> int:
    return sum(p.numel() * p.element_size() for p in m.parameters())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_explain_of_a_half_model_prints_the_float32_models_numbers(dtype, gpt2_dir):
    full, half = attnscope.load(gpt2_dir), attnscope.load(gpt2_dir, dtype=dtype)
    assert _nbytes(half) * 2 == _nbytes(full)
    # the rounded weights would move the float64 numbers: what the lessons must not show
    f32, f16 = forward(full, TEXT, upto=1), forward(half, TEXT, upto=1)
    assert not np.array_equal(f32["layers.1.attn.weights"], f16["layers.1.attn.weights"])
    for kw in (dict(layer=1, head=0, token="mat"), dict(layer=1, head=1, token="it", path=True),
               dict(token="it", attribution="rollout")):
        a = explain(text=TEXT, model=full, **kw)
        b = explain(text=TEXT, model=half, **kw)
        for fmt in ("markdown", "json"):
            assert a.render(fmt) == b.render(fmt), (kw, fmt)
    # check's rows of a real model are these numbers (check.problem reads model_row_data)
    ra, rb = model_row_data(TEXT, full, 1, 0, "mat"), model_row_data(TEXT, half, 1, 0, "mat")
    assert ra.keys() == rb.keys() and all(_same(ra[k], rb[k]) for k in ra if k != "model")
    assert full_precision(full) is full
    twin = full_precision(half)
    assert twin.dtype == torch.float32 and all(torch.equal(p, q) for p, q in zip(full.parameters(), twin.parameters()))


def test_a_half_model_not_made_by_load_is_refused(gpt2_dir):
    half = attnscope.load(gpt2_dir, dtype=torch.bfloat16)
    del half.load_source
    with pytest.raises(InputError, match="was not made by attnscope.load"):
        explain(text=TEXT, model=half, layer=0, head=0, token="cat")
