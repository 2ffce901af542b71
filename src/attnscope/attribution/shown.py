"""The matrices the viewer's attribution switch and ``plot --attribution`` draw (issue 27 item 3).

Both show the same numbers, taken from :func:`attnscope.attribution.attribute`:

* ``norm`` ``(n_layers, H, L, L)``: Kobayashi et al.'s per-head ``α^h_ij ‖f^h(x_j)‖``
  (``details["heads"]``), each row divided by its sum, as the paper shows them beside the weights
  (a row of zeros stays zeros);
* ``rollout``, ``alti``, ``value_zeroing`` ``(n_layers, L, L)``: for every layer l the method's
  matrix accumulated from layer 0 up to l — what ``attribute(text, method, layer=l).scores`` is —
  from one call (rollout's ``details["rollout"]``; ALTI's and value zeroing's ``per_layer``
  multiplied up with :func:`.decompose.rollout`, their own accumulation).
"""

from __future__ import annotations

import numpy as np
import torch

from . import decompose as DC
from .base import attribute

#: The methods shown, in the switch's order; ``norm`` has one matrix per head, the others one a layer.
SHOWN = ("norm", "rollout", "alti", "value_zeroing")
PER_HEAD = ("norm",)


def row_normalised(m: torch.Tensor) -> torch.Tensor:
    """``m (…, L, L)`` with each row divided by its sum (rows of zeros stay zeros), in float64."""
    m = m.double()
    s = m.sum(-1, keepdim=True)  # (…, L, 1)
    return m / torch.where(s > 0, s, torch.ones_like(s))


def accumulated(per_layer: torch.Tensor) -> torch.Tensor:
    """``(n_layers, L, L)``: for every layer l, ``per_layer`` multiplied from layer 0 up to l."""
    return torch.stack([DC.rollout(per_layer, layer) for layer in range(per_layer.shape[0])])


def shown_matrices(model, text: str, method: str) -> np.ndarray:
    """The float32 array drawn for ``method`` (see the module docstring), on the CPU."""
    a = attribute(model, text, method)
    if method == "norm":
        m = row_normalised(a.details["heads"])  # (n_layers, H, L, L)
    elif method == "rollout":
        m = a.details["rollout"]  # (n_layers, L, L): R_0 … R_last
    else:
        assert a.per_layer is not None  # ALTI and value zeroing have one matrix a layer
        m = accumulated(a.per_layer)  # (n_layers, L, L)
    return m.detach().to("cpu", torch.float32).numpy()
