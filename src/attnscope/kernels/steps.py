"""The one definition of attention that every torch path runs.

:func:`attend` takes q, k, v (and masks, a scoring, hooks) and runs, in order::

    q', k'  = prepare(q, k)            the scoring's preparation (a module's LayerNorms, …)
    hook q, k, v                       the dot product's operands: scores = q @ kᵀ exactly
    backend = choose_backend(facts)    fused | blockwise | explicit | weights_on_demand
    scores, scaled, masked, weights    hooked one by one on the explicit path
    z       = weights @ v              hook z

``attnscope.attention``, ``attention_steps``, ``blockwise`` weights and the modules all call it;
the kernels it dispatches to never name a scoring. Room for what comes next is in its
arguments: k and v may have fewer heads than q (grouped-query attention: one k/v head serves
``H / H_kv`` query heads), and ``bias`` is an additive score term broadcastable to
``(..., L, S)`` (relative position bias, ALiBi), added after scaling, before the mask.

Hooks are a :class:`StepHooks` (its five methods); :class:`ModuleHooks` reads an
attention module's :class:`~attnscope.hooks.HookPoint` s and its per-head taps.
"""

from __future__ import annotations

from typing import Optional, Union

import torch
import torch.nn.functional as F
from torch import nn

from ..scorings import DEFAULT_EPS
from . import blockwise, dense, fused, memory
from .backend import BLOCKWISE, FUSED, MATRIX_STEPS, WEIGHTS_ON_DEMAND, Facts, choose_backend
from .finite import (
    ATTENTION_OUTPUT,
    SCALED,
    WEIGHTS,
    check_inputs,
    check_output,
    check_overflow,
    check_scaled,
    finite_checks_on,
)
from .qk import Prepared, check_factor, fold_factor, prepare
from .validate import broadcast_shapes, kv_groups

Tensor = torch.Tensor

#: Every step a hook can see, in order.
STEPS = ("q", "k", "v", "scores", "scaled", "masked", "weights", "z")

#: The facts of a call without weights or hooks whose scores SDPA can form.
PLAIN = Facts()


class StepHooks:
    """What :func:`attend` asks of its hooks; this base is a call without any (:data:`NO_HOOKS`)."""

    def active(self, step: str) -> bool:
        """Does a hook want the whole tensor of ``step`` (so that it must exist in full)?"""
        return False

    def heads(self, step: str) -> list[int]:
        """Heads (dim 1) whose slice of ``step`` is wanted alone."""
        return []

    def __call__(self, step: str, t: Tensor) -> Tensor:
        """The whole tensor through its hooks (the result replaces it)."""
        return t

    def heads_only(self, step: str, t: Tensor, heads: list[int]) -> None:
        """``t (B, len(heads), …)``: ``step`` computed for ``heads`` only, beside a kernel that
        never formed it (read only: the output does not depend on it)."""

    def free(self, step: str, t: Tensor) -> bool:
        """Does no hook keep ``t``'s memory, the tensor ``step``'s hooks gave back (so that the next
        step may be written over it)?"""
        return True  # nobody saw it


NO_HOOKS = StepHooks()


class RecordSteps(StepHooks):
    """Wants every L×S step in full and keeps each one: ``attention_steps``' hooks."""

    def __init__(self) -> None:
        self.steps: dict[str, Tensor] = {}

    def active(self, step: str) -> bool:
        return step in MATRIX_STEPS

    def __call__(self, step: str, t: Tensor) -> Tensor:
        self.steps[step] = t
        return t

    def free(self, step: str, t: Tensor) -> bool:
        return False  # kept


class ModuleHooks(StepHooks):
    """The hook points of an attention module (attributes named after :data:`STEPS`).

    A step's whole tensor goes through its hook point when any hook is attached (head hooks see
    their slice of it). Heads that only read-only hooks want (:attr:`HookPoint.heads`) of an L×S
    step that the chosen kernel never forms are computed aside and handed to
    :meth:`HookPoint.forward_heads`.
    """

    def __init__(self, module: nn.Module) -> None:
        self.m = module

    def active(self, step: str) -> bool:
        return getattr(self.m, step).active

    def heads(self, step: str) -> list[int]:
        return getattr(self.m, step).heads

    def __call__(self, step: str, t: Tensor) -> Tensor:
        point = getattr(self.m, step)
        return point(t) if point.hooks else t  # an idle hook point would cost nn.Module.__call__

    def heads_only(self, step: str, t: Tensor, heads: list[int]) -> None:
        getattr(self.m, step).forward_heads(t, heads)

    def free(self, step: str, t: Tensor) -> bool:
        """No hook on ``step``, or only whole-tensor recorders whose sink kept the call that made
        ``t``, not its memory (a trace's: :meth:`attnscope.hooks.Recorder.releases`)."""
        return all(h.head is None and callable(getattr(h.fn, "releases", None)) and h.fn.releases(t)
                   for h in getattr(self.m, step).hooks)


def attend(q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor] = None, *, causal: bool = False,
           scoring="scaled", scale: Optional[float] = None, temperature: Union[None, float, Tensor] = None,
           params: Optional[nn.Module] = None, bias: Optional[Tensor] = None, dropout_p: float = 0.0,
           need_weights: bool = False, hooks: Optional[StepHooks] = None, check_finite: Optional[bool] = None,
           eps: float = DEFAULT_EPS) -> tuple[Tensor, Optional[Tensor]]:
    """Attention of ``q (..., H, L, d_k)`` over ``k (..., H_kv, S, d_k)``, ``v (..., H_kv, S, d_v)``.

    Arguments are those of :func:`attnscope.attention` (validated by the caller), plus:
        params: the module holding the scoring's learnable parts.
        bias: additive score term broadcastable to ``(..., L, S)``, added before the mask.
        need_weights: return the weights (else they are None unless a hook made them exist).
        hooks: a :class:`StepHooks`.
    Returns:
        ``z (..., H, L, d_v)`` and ``weights (..., H, L, S)`` or None.
    """
    finite = finite_checks_on(check_finite)
    if hooks is None and not need_weights and not finite:
        # The common call (a model's forward, attention() without weights): the facts are those
        # of Facts() unless the factor varies over keys; spare the rest of the bookkeeping.
        p = prepare(q, k, scoring, scale=scale, temperature=temperature, params=params, eps=eps)
        if not p.per_key and choose_backend(PLAIN) == FUSED:
            g = kv_groups(q, k)
            if isinstance(p.factor, Tensor):
                check_factor(p.factor, q.shape[:-2], q.shape[-2], k.shape[-2])
            qf, sc = fold_factor(p)
            return fused.sdpa(qf, p.k, v, mask, causal=causal, scale=sc, dropout_p=dropout_p, bias=bias, groups=g), None
    hooks = NO_HOOKS if hooks is None else hooks
    if finite:
        check_inputs(q, k, v, mask, temperature)
    p = prepare(q, k, scoring, scale=scale, temperature=temperature, params=params, eps=eps)
    q, k, v = hooks("q", p.q), hooks("k", p.k), hooks("v", v)  # (…, L|S, d)
    p = Prepared(q, k, p.factor, p.per_key)
    g = kv_groups(q, k)
    L, S = q.shape[-2], k.shape[-2]
    k_lead = k.shape[:-2] if g == 1 else (*k.shape[:-3], q.shape[-3])
    lead = broadcast_shapes(q.shape[:-2], k_lead, v.shape[:-2] if g == 1 else k_lead)
    if isinstance(p.factor, Tensor):
        check_factor(p.factor, lead, L, S)
    grad = torch.is_grad_enabled() and any(isinstance(t, Tensor) and t.requires_grad
                                           for t in (q, k, v, mask, bias, p.factor))
    hooked = frozenset(s for s in MATRIX_STEPS if hooks.active(s))
    # Whether the L×S matrices fit is only asked (a look at free memory) where it can matter.
    fits = True
    if need_weights or hooked or p.per_key:
        fits = memory.dense_fits(3 * memory.matrix_bytes(lead, L, S, q.element_size()), q.device)
    facts = Facts(weights=need_weights, hooked=hooked, fusable=not p.per_key, grad=grad, fits=fits,
                  long=L * S >= memory.BLOCKWISE_MIN_SCORES)
    backend = choose_backend(facts)
    weights: Optional[Tensor] = None
    formed: frozenset[str] = frozenset()
    if backend == FUSED:
        qf, sc = fold_factor(p)
        z = fused.sdpa(qf, k, v, mask, causal=causal, scale=sc, dropout_p=dropout_p, bias=bias, groups=g)
    elif backend == BLOCKWISE:
        z = _blockwise(p, v, mask, g, causal=causal, dropout_p=dropout_p, bias=bias)
    else:
        def repeated() -> tuple[Tensor, Tensor]:
            return blockwise.repeat_kv(k, g), blockwise.repeat_kv(v, g)  # (…, H, S, d)
        if backend == WEIGHTS_ON_DEMAND:
            kk, vv = repeated()
            cdt = blockwise.compute_dtype(q.dtype)
            w = blockwise.weights_of(Prepared(q.to(cdt), kk.to(cdt), p.factor, p.per_key), mask, causal=causal,
                                     bias=bias).to(q.dtype)  # (…, H, L, S)
            weights, formed = hooks("weights", w), frozenset({"weights"})
            z = torch.matmul(F.dropout(weights, p=dropout_p) if dropout_p > 0.0 else weights, vv)  # (…, L, d_v)
        else:
            add = dense.combine_masks(mask, L, S, causal=causal, dtype=q.dtype, device=q.device, bias=bias,
                                      reuse=True)  # read only below: the layers share a causal mask
            if hooked - {"weights"} or finite:
                kk, vv = repeated()
                st = dense.steps(q, kk, vv, p.factor, add, hook=hooks, dropout_p=dropout_p,
                                 check=(lambda s: check_scaled(s, q.dtype)) if finite else None, free=hooks.free,
                                 check_scores=check_overflow if q.dtype in dense.LOW_PRECISION else None)
                z, weights, formed = st["z"], st["weights"], frozenset(MATRIX_STEPS)
            else:  # only the weights: the lean form, k and v not repeated for grouped heads
                same_lead = q.shape[:-3] == k.shape[:-3] == v.shape[:-3]
                gl = g if same_lead else 1
                kl, vl = (k, v) if gl > 1 else repeated()
                # half precision: an overflow of the scaled scores is named, as the steps name it
                half = (lambda s: check_overflow(s, SCALED)) if q.dtype in dense.LOW_PRECISION else None
                weights = hooks("weights", dense.lean_weights(q, kl, p.factor, add, groups=gl,
                                                              check_scaled=half))  # (…, H, L, S)
                formed = frozenset({"weights"})
                z = dense.grouped_mix(F.dropout(weights, p=dropout_p) if dropout_p > 0.0 else weights, vl, gl)
    pending = {s: hooks.heads(s) for s in MATRIX_STEPS if s not in formed}
    if any(pending.values()):
        _heads_aside(p, g, mask, bias, causal, hooks, {s: h for s, h in pending.items() if h})
    z = hooks("z", z)  # (…, H, L, d_v)
    if finite:
        check_output(ATTENTION_OUTPUT, z)
        check_output(WEIGHTS, weights)
    return z, weights


def _blockwise(p: Prepared, v: Tensor, mask: Optional[Tensor], g: int, *, causal: bool, dropout_p: float,
               bias: Optional[Tensor]) -> Tensor:
    cdt = blockwise.compute_dtype(p.q.dtype)
    pb = Prepared(p.q.to(cdt), blockwise.repeat_kv(p.k, g).to(cdt), p.factor, p.per_key)
    z, _ = blockwise.run(pb, blockwise.repeat_kv(v, g).to(cdt), mask, causal=causal, dropout_p=dropout_p, bias=bias)
    assert z is not None  # None only without v
    return z.to(p.q.dtype)  # (…, L, d_v)


def _heads_aside(p: Prepared, g: int, mask: Optional[Tensor], bias: Optional[Tensor], causal: bool,
                 hooks: StepHooks, pending: dict[str, list[int]]) -> None:
    """The L×S steps of a few heads (dim 1), computed beside a kernel that did not form them,
    so that one head costs about 1/H of the explicit path."""
    heads = sorted(set().union(*pending.values()))
    q, k = p.q, p.k  # (B, H, L, d), (B, H_kv, S, d)
    B, H, L = q.shape[0], q.shape[1], q.shape[-2]
    S = k.shape[-2]
    idx = torch.tensor(heads, device=q.device)
    qh = q.index_select(1, idx)  # (B, h, L, d)
    kh = k.index_select(1, idx // g) if k.shape[1] != 1 else k  # (B, h, S, d)
    factor = p.factor
    if isinstance(factor, Tensor) and factor.dim() >= 3 and factor.shape[-3] == H:
        factor = factor.index_select(factor.dim() - 3, idx)
    add = dense.combine_masks(mask, L, S, causal=False, dtype=q.dtype, device=q.device, bias=bias)
    if add is not None and add.dim() == 4 and add.shape[1] == H:
        add = add.index_select(1, idx)  # a per-head mask: the same heads
    ph = Prepared(qh, kh, factor, p.per_key)
    n_bytes = 4 * memory.matrix_bytes((B, len(heads)), L, S, q.element_size())  # the 4 steps
    if set(pending) == {"weights"} and not memory.dense_fits(n_bytes, q.device):
        # A text too long for the steps: two blockwise passes (row max, then exp(score − max) / row sum)
        # write the weights into the one (B, h, L, S) matrix held.
        cdt = blockwise.compute_dtype(q.dtype)
        w = blockwise.weights_of(Prepared(qh.to(cdt), kh.to(cdt), factor, p.per_key), add, causal=causal)
        hooks.heads_only("weights", w.to(q.dtype), heads)
        return
    if causal:
        c = dense.combine_masks(None, L, S, causal=True, dtype=q.dtype, device=q.device)
        assert c is not None  # causal=True always gives a mask
        add = c if add is None else add + c
    st = dense.steps(ph.q, ph.k, None, ph.factor, add)
    for step in pending:
        hooks.heads_only(step, st[step], heads)
