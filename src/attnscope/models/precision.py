"""Half precision and the worked calculations: :func:`full_precision`.

``load(…, dtype=torch.bfloat16 | torch.float16)`` rounds every weight to 8 (bfloat16) or 11
(float16) significant bits: half the memory, and a forward pass within that dtype's own error
(tests/models/test_half_precision.py). The worked calculations (``explain``) promise more: every
number they show is computed in float64 from the checkpoint's weights, with the model's own float32
trace set beside it. Recomputed from rounded weights those numbers would move in their third or
fourth digit, so a lesson given a half-precision model reads the checkpoint again, in float32 on the
CPU, and works with that model instead: it prints what it prints for a model loaded in float32,
digit for digit. (``check`` reads its models from the file's ``model:`` folder, always in float32.)
"""

from __future__ import annotations

import torch

from ..errors import InputError
from ..i18n import error
from .loader import load

#: The dtypes whose models the worked calculations do not compute with.
HALF = (torch.float16, torch.bfloat16)

def is_half(model) -> bool:
    """Are ``model``'s weights float16 or bfloat16?"""
    return getattr(model, "dtype", None) in HALF


def full_precision(model):
    """``model`` itself unless its weights are half precision; then the same checkpoint loaded again
    in float32 on the CPU (``load(model.load_source)``: the weights as the file has them), for
    numbers that must not depend on how the model was loaded. InputError when ``model`` was not made
    by :func:`attnscope.load` (nothing says where its checkpoint is)."""
    if not is_half(model):
        return model
    if not hasattr(model, "load_source"):
        raise error(InputError, "errors.h3_half_no_source", name=getattr(model, "name", "?"),
                    dtype=str(model.dtype).replace("torch.", ""))
    return load(model.load_source, dtype=torch.float32)


__all__ = ["HALF", "full_precision", "is_half"]
