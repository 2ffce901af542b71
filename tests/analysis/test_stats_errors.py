"""Bad inputs to the statistics raise ShapeError naming the argument and the shapes."""

import pytest
import torch

from attnscope.analysis.stats import attention_sums
from attnscope.errors import ShapeError

from .patterns import batch, fill, uniform


def test_weights_must_be_square_4d():
    am, kinds = batch([3])
    with pytest.raises(ShapeError, match=r"weights must be a floating tensor of shape \(B, H, L, L\), got \(1, 3, 3\)"):
        attention_sums(torch.rand(1, 3, 3), am, kinds)
    with pytest.raises(ShapeError, match=r"self-attention weights .* got \(1, 1, 3, 4\)"):
        attention_sums(torch.rand(1, 1, 3, 4), am, kinds)
    with pytest.raises(ShapeError, match="floating"):
        attention_sums(torch.ones(1, 1, 3, 3, dtype=torch.long), am, kinds)


def test_mask_and_kinds_shapes():
    w = fill([3], uniform)
    am, kinds = batch([3])
    with pytest.raises(ShapeError, match=r"attention_mask must have shape \(B, L\) = \(1, 3\), got \(1, 4\)"):
        attention_sums(w, torch.ones(1, 4), kinds)
    with pytest.raises(ShapeError, match=r"kinds\['sep'\] must have shape \(B, L\) = \(1, 3\), got \(3\)"):
        attention_sums(w, am, dict(kinds, sep=torch.ones(3, dtype=torch.bool)))
    with pytest.raises(ShapeError, match="unknown token kind 'comma'"):
        attention_sums(w, am, dict(kinds, comma=torch.ones(1, 3, dtype=torch.bool)))
