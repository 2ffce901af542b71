"""Half-precision weights are rounded once (issue 29 item 3): on every path that forms the weights
(the lean path a weights trace takes, the explicit steps, the blockwise weights), bfloat16/float16
scores over 1,024 keys give weights within one rounding of the float64 softmax of those same
scores: the exponentials and the row sum accumulate in float32 (explicitly on the explicit and
blockwise paths, inside torch's softmax kernel on the lean one) and the result is rounded once."""

from __future__ import annotations

import pytest
import torch

from attnscope.kernels import blockwise, dense
from attnscope.kernels.qk import Prepared

S = 1024


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_weights_are_one_rounding_from_float64(dtype):
    g = torch.Generator().manual_seed(3)
    scores = (torch.randn(2, 1, 3, S, generator=g) * 2).to(dtype)  # (B, H, L, S): exact in dtype
    eye = torch.eye(S, dtype=dtype)[None, None]  # k = I: q @ kᵀ is the scores themselves, exactly
    want = torch.softmax(scores.double(), dim=-1)  # (B, H, L, S)
    unit = torch.finfo(dtype).eps / 2  # one rounding, relative
    got = {"lean": dense.lean_weights(scores, eye, 1.0, None),
           "steps": dense.steps(scores, eye, None, 1.0, None)["weights"],
           # as attend's weights-on-demand path: the operands to float32 (compute_dtype), the weights back
           "blockwise": blockwise.weights_of(Prepared(scores.float(), eye.float(), 1.0, False), None,
                                             causal=False).to(dtype)}
    for path, w in got.items():
        assert w.dtype == dtype, path
        err = ((w.double() - want).abs() / want.clamp_min(torch.finfo(dtype).tiny)).max()
        assert float(err) <= 1.01 * unit, (path, float(err) / unit)
