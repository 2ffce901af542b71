"""Which kernel computes an attention call: one pure function of plain facts.

=====================  ==========================================================================
backend                what it is
=====================  ==========================================================================
``fused``              ``torch.nn.functional.scaled_dot_product_attention`` on the prepared q, k
``fused_lse``          the device's fused kernel that also returns the log-sum-exp per query, and
                       its fused backward from it (CPU flash, CUDA memory-efficient)
``blockwise``          the online-softmax kernel of :mod:`attnscope.kernels.blockwise`: O(L·d)
``explicit``           the steps one by one (scores, scaled, masked, weights), each hookable
``weights_on_demand``  weights written blockwise into the one L×S result, then ``weights @ v``
=====================  ==========================================================================

:func:`choose_backend` is the whole policy; ``tests/kernels/test_backend.py`` pins it as a table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

FUSED = "fused"
FUSED_LSE = "fused_lse"
BLOCKWISE = "blockwise"
EXPLICIT = "explicit"
WEIGHTS_ON_DEMAND = "weights_on_demand"

BACKENDS = (FUSED, FUSED_LSE, BLOCKWISE, EXPLICIT, WEIGHTS_ON_DEMAND)

#: The steps that only exist as L×S matrices.
MATRIX_STEPS = ("scores", "scaled", "masked", "weights")


@dataclass(frozen=True)
class Facts:
    """What the choice depends on.

    Attributes:
        weights: the caller wants the softmax weights back.
        hooked: the L×S steps (of :data:`MATRIX_STEPS`) that a hook reads or replaces in full.
        fusable: SDPA can form these scores: prepared q, k and a factor constant over keys.
        grad: autograd must flow through the result.
        fits: the explicit path's L×S matrices fit in memory now.
        long: L·S per head is at least ``BLOCKWISE_MIN_SCORES``.
        lse: the log-sum-exp per query is wanted (blockwise APIs, the ring).
        flash_lse: the device's fused log-sum-exp kernel can take these inputs (a device and
            dtype it serves, no dropout, nothing empty); see :func:`.fused.flash_lse_ok`.
        mask_grad: a mask or bias needs its gradient (the fused backward gives none).
    """

    weights: bool = False
    hooked: frozenset = field(default_factory=frozenset)
    fusable: bool = True
    grad: bool = False
    fits: bool = True
    long: bool = False
    lse: bool = False
    flash_lse: bool = False
    mask_grad: bool = False


def choose_backend(f: Facts) -> str:
    """The backend for ``f``; see the module's table and the rules below, in order.

    1. The log-sum-exp is wanted: the fused lse kernel if it can take the inputs and no mask
       needs its gradient (its backward serves q, k, v), else blockwise.
    2. Neither weights nor an L×S step wanted: fused if SDPA can form the scores; otherwise
       blockwise when the input is long or the matrices would not fit, explicit when short.
    3. scores, scaled or masked wanted: explicit (each step exists on its own).
    4. Only the weights: blockwise weights on demand for inference that would not fit,
       else explicit (the lean form: no scores kept apart).
    """
    if f.lse:
        return FUSED_LSE if f.flash_lse and f.fusable and not f.mask_grad else BLOCKWISE
    if not f.weights and not f.hooked:
        if f.fusable:
            return FUSED
        return BLOCKWISE if f.long or not f.fits else EXPLICIT
    if set(f.hooked) - {"weights"}:
        return EXPLICIT
    if not f.grad and not f.fits:
        return WEIGHTS_ON_DEMAND
    return EXPLICIT
