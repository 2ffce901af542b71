"""choose_backend is the whole dispatch policy: pinned here as a table of facts → backend."""

import pytest

from attnscope.kernels.backend import BACKENDS, Facts, choose_backend

W = frozenset({"weights"})
S = frozenset({"scores"})
ALL = frozenset({"scores", "scaled", "masked", "weights"})

TABLE = [
    # weights hooked   fusable grad   fits   long   lse    flash  [mask_grad] → backend
    (False, frozenset(), True, False, True, False, False, False, "fused"),
    (False, frozenset(), True, True, True, False, False, False, "fused"),       # SDPA has a backward
    (False, frozenset(), True, False, False, True, False, False, "fused"),      # long: SDPA keeps no L×S
    (False, frozenset(), False, False, True, False, False, False, "explicit"),  # τ per key, short
    (False, frozenset(), False, False, True, True, False, False, "blockwise"),  # τ per key, long
    (False, frozenset(), False, True, False, False, False, False, "blockwise"),  # τ per key, would not fit
    (True, frozenset(), True, False, True, False, False, False, "explicit"),
    (True, frozenset(), True, False, False, True, False, False, "weights_on_demand"),
    (True, frozenset(), True, True, False, True, False, False, "explicit"),    # gradients need the steps
    (False, W, True, False, True, False, False, False, "explicit"),
    (False, W, True, False, False, False, False, False, "weights_on_demand"),
    (False, S, True, False, False, False, False, False, "explicit"),           # scores exist only explicitly
    (True, ALL, True, True, True, False, False, False, "explicit"),
    (False, frozenset(), True, False, True, False, True, True, "fused_lse"),
    (False, frozenset(), True, False, True, False, True, False, "blockwise"),  # flash cannot take them
    (False, frozenset(), True, True, True, False, True, True, "fused_lse"),    # the fused backward serves q, k, v
    (False, frozenset(), True, True, True, False, True, True, True, "blockwise"),  # ... but gives a mask no gradient
    (False, frozenset(), True, False, True, False, True, True, True, "blockwise"),  # (the fact alone decides)
    (False, frozenset(), False, False, True, False, True, True, "blockwise"),   # τ per key
    (False, frozenset(), False, True, True, True, True, True, "blockwise"),     # τ per key, long, with grad
]
TABLE = [row if len(row) == 10 else (*row[:8], False, row[8]) for row in TABLE]


@pytest.mark.parametrize("weights, hooked, fusable, grad, fits, long, lse, flash, mask_grad, expected", TABLE)
def test_table(weights, hooked, fusable, grad, fits, long, lse, flash, mask_grad, expected):
    f = Facts(weights=weights, hooked=hooked, fusable=fusable, grad=grad, fits=fits, long=long, lse=lse,
              flash_lse=flash, mask_grad=mask_grad)
    assert choose_backend(f) == expected


def test_every_backend_is_reachable_and_the_choice_is_pure():
    assert {row[-1] for row in TABLE} == set(BACKENDS)
    f = Facts(weights=True, fits=False)
    assert choose_backend(f) == choose_backend(f) == "weights_on_demand"
