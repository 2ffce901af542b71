"""PyTorch's fused kernels on prepared inputs: SDPA, and the fused kernels that also return the
log-sum-exp per query (with their backward from it).

Every scoring reaches here as ``q', k'`` and a scale (see :mod:`attnscope.kernels.qk`), so the
fused kernel serves them all.

The log-sum-exp kernels, per device:

=======  ==========================================================  ===========================
device   forward (out, lse)                                          backward from the saved lse
=======  ==========================================================  ===========================
CPU      ``aten._scaled_dot_product_flash_attention_for_cpu``         ``…_for_cpu_backward``
CUDA     ``aten._scaled_dot_product_efficient_attention`` (a bias     ``…_efficient_attention_
         and float32 lse; float64 is not served)                     backward``
CUDA,    SDPA's own choice (``torch._fused_sdp_choice``): ``aten.     ``…_backward`` of the same
half     _scaled_dot_product_cudnn_attention`` or ``…_flash_            kernel
         attention`` (no mask or bias; causal only for L = S)
=======  ==========================================================  ===========================

Each is what SDPA itself runs there, so a log-sum-exp costs SDPA's time: with the memory-efficient
kernel alone, half-precision inputs took 2.5–3.7× SDPA's time on an H200 (benchmarks/cuda_check.py),
because SDPA runs another kernel for them. The kernels want
4-D inputs of one head size: other leading shapes are flattened, unequal ``d_k``/``d_v`` are
zero-padded (zero columns change neither the scores nor the kept output columns). The backward
takes no gradient of the lse, so one is folded in by one more column (see :func:`lse_backward`).
A query that sees no key gets out 0 and lse −∞ (the CPU kernel itself reports lse 0 there).
"""

from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn.functional as F

from .dense import additive_as, combine_masks
from .validate import broadcast_shapes

Tensor = torch.Tensor


def sdpa_mask(mask: Optional[Tensor], bias: Optional[Tensor], L: int, S: int, *, causal: bool,
              dtype: torch.dtype, device: torch.device) -> tuple[Optional[Tensor], bool]:
    """``(attn_mask, is_causal)`` for SDPA. SDPA refuses ``is_causal`` together with a mask, and
    wants a float mask in q's dtype: fold and convert only then. A mask of fewer than 2 dims
    (``(S,)``: one key mask for every query) gets leading 1s, which SDPA needs (it indexes dim −2)."""
    if mask is not None and mask.dim() < 2:
        mask = mask.reshape((1,) * (2 - mask.dim()) + tuple(mask.shape))  # (1|…, S|1)
    if bias is not None or (causal and mask is not None):
        return combine_masks(mask, L, S, causal=causal, dtype=dtype, device=device, bias=bias), False
    if mask is not None and mask.dtype != torch.bool and mask.dtype != dtype:
        mask = additive_as(mask, dtype)
    return mask, causal


def sdpa(q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor], *, causal: bool, scale: Optional[float],
         dropout_p: float = 0.0, bias: Optional[Tensor] = None, groups: int = 1) -> Tensor:
    """``scaled_dot_product_attention(q, k, v)`` → ``(..., L, d_v)``; ``groups > 1``: k and v
    have H/groups heads (grouped-query attention, SDPA's ``enable_gqa``)."""
    attn_mask, is_causal = sdpa_mask(mask, bias, q.shape[-2], k.shape[-2], causal=causal, dtype=q.dtype,
                                      device=q.device)
    gqa = {"enable_gqa": True} if groups > 1 else {}  # torch before 2.5 has no such argument
    return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p,
                                          is_causal=is_causal, scale=scale, **gqa)


# ----------------------------------------------------------------------------------------------
# the fused kernels with log-sum-exp
# ----------------------------------------------------------------------------------------------

#: The dtypes each device's log-sum-exp kernel takes (CUDA's memory-efficient kernel: no float64).
LSE_DTYPES = {"cpu": (torch.float16, torch.bfloat16, torch.float32, torch.float64),
              "cuda": (torch.float16, torch.bfloat16, torch.float32)}
LSE_OPS = {"cpu": "_scaled_dot_product_flash_attention_for_cpu", "cuda": "_scaled_dot_product_efficient_attention"}
#: CUDA's memory-efficient kernel wants head sizes and bias rows aligned (as SDPA pads them).
CUDA_HEAD_ALIGN, CUDA_BIAS_ALIGN, CUDA_LSE_ALIGN = 8, 16, 32
#: CUDA's half-precision kernels: the dtypes, the largest head size, and SDPA's numbers for them
#: (torch.nn.attention.SDPBackend: FLASH_ATTENTION 1, CUDNN_ATTENTION 3).
CUDA_HALF_DTYPES, CUDA_HALF_MAX_HEAD = (torch.float16, torch.bfloat16), 256
CUDA_HALF_KERNELS = {1: "flash", 3: "cudnn"}


def half_kernel(q: Tensor, k: Tensor, v: Tensor, *, causal: bool, scale: float) -> Optional[str]:
    """``"flash"`` or ``"cudnn"`` where SDPA itself runs that kernel on these CUDA half-precision
    ``(B, H, ·, D)`` operands with nothing masked, else None (the memory-efficient kernel then).
    Causal only for L = S: flash aligns its causal mask to the bottom right where L ≠ S."""
    if not (q.device.type == "cuda" and q.dtype in CUDA_HALF_DTYPES and q.shape[-1] <= CUDA_HALF_MAX_HEAD
            and (not causal or q.shape[-2] == k.shape[-2]) and hasattr(torch, "_fused_sdp_choice")):
        return None
    name = CUDA_HALF_KERNELS.get(int(torch._fused_sdp_choice(q, k, v, None, 0.0, causal, scale=scale)))
    return name if name and hasattr(torch.ops.aten, f"_scaled_dot_product_{name}_attention_backward") else None


def flash_lse_ok(q: Tensor, k: Tensor, v: Optional[Tensor], dropout_p: float = 0.0) -> bool:
    """Can the device's fused log-sum-exp kernel (forward and backward) take these inputs?

    It wants a device and dtype of :data:`LSE_DTYPES`, no dropout, and non-empty lengths and
    head sizes (the CPU kernel crashes on L = 0 or S = 0). Leading dims may broadcast; unequal
    ``d_k``/``d_v`` are padded.
    """
    dev = q.device.type
    if dropout_p > 0.0 or q.dtype not in LSE_DTYPES.get(dev, ()) or q.dim() < 2 or k.dim() < 2:
        return False
    if k.dtype != q.dtype or k.device != q.device or (v is not None and (v.dtype != q.dtype or v.device != q.device)):
        return False
    name = LSE_OPS[dev]
    if not (hasattr(torch.ops.aten, name) and hasattr(torch.ops.aten, name + "_backward")):
        return False
    L, S, d = q.shape[-2], k.shape[-2], q.shape[-1]
    if min(L, S, d) == 0 or k.shape[-1] != d or (v is not None and (v.dim() < 2 or v.shape[-2] != S or v.shape[-1] == 0)):
        return False
    return broadcast_shapes(q.shape[:-2], k.shape[:-2], *([] if v is None else [v.shape[:-2]])) is not None


def no_key_visible(add: Tensor, causal: bool, L: int) -> Tensor:
    """``(…, L|1)`` True for a query that sees no key under the additive mask ``(…, L|1, S)``
    (and causality, top-left aligned)."""
    allowed = ~torch.isneginf(add)  # (…, L|1, S)
    if not causal:
        return ~allowed.any(dim=-1)
    S = add.shape[-1]
    if add.shape[-2] == 1:  # a key mask: query i sees a key iff one of keys 0..i is allowed
        seen = allowed.cummax(dim=-1).values  # (…, 1, S)
        return ~seen[..., 0, :].index_select(-1, torch.arange(L, device=add.device).clamp(max=S - 1))
    keep = torch.ones(L, S, dtype=torch.bool, device=add.device).tril()
    return ~(allowed & keep).any(dim=-1)


class LseProblem:
    """One call of the log-sum-exp kernel: the operands as the kernel wants them, and back.

    ``q (…, L, d_k)``, ``k (…, S, d_k)``, ``v (…, S, d_v)`` broadcast to one leading shape
    ``lead``, which is flattened to the kernel's ``(B, H)``; head sizes are zero-padded to one
    ``D``. ``add`` is the additive mask (bias included) broadcastable to ``(…, L, S)``;
    ``causal`` is top-left aligned; ``scale`` multiplies ``q kᵀ``.
    """

    def __init__(self, q: Tensor, k: Tensor, v: Tensor, add: Optional[Tensor], *, causal: bool,
                 scale: float) -> None:
        self.L, self.S, self.d_k, self.d_v = q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]
        shapes = [q.shape[:-2], k.shape[:-2], v.shape[:-2]]
        if add is not None:
            add = add.reshape((1,) * (2 - add.dim()) + tuple(add.shape)) if add.dim() < 2 else add
            shapes.append(add.shape[:-2])
        self.lead = torch.broadcast_shapes(*shapes)
        n = len(self.lead)
        self.bh = (math.prod(self.lead[:-1]), self.lead[-1]) if n else (1, 1)
        self.cuda = q.device.type == "cuda"
        D = max(self.d_k, self.d_v)
        self.D = D + (-D) % CUDA_HEAD_ALIGN if self.cuda else D
        self.causal, self.scale = causal, scale
        self.dead = None if add is None else self._dead(add)
        self.add = None if add is None else self._mask(add)
        self.q, self.k, self.v = self.operand(q, self.L), self.operand(k, self.S), self.operand(v, self.S)
        self.half = None if add is not None else half_kernel(self.q, self.k, self.v, causal=causal, scale=scale)
        self.half_saved: Optional[list] = None  # what that kernel's forward hands its backward

    def operand(self, t: Tensor, n: int) -> Tensor:
        """``(…, n, d)`` → ``(B, H, n, D)``: broadcast, flattened (a copy only where flattening
        broadcast dims needs one), zero-padded; rows contiguous (the CPU kernel reads a row with
        stride 1 whatever the tensor's stride says, as SDPA's own check presumes)."""
        if t.shape[-1] > 1 and t.stride(-1) != 1:
            t = t.contiguous()
        t = t.expand(*self.lead, n, t.shape[-1])
        if len(self.lead) != 2:
            t = t.reshape(*self.bh, n, t.shape[-1])
        return F.pad(t, (0, self.D - t.shape[-1])) if t.shape[-1] != self.D else t

    def rows(self, t: Tensor) -> Tensor:
        """``(…, L)`` → ``(B, H, L)``."""
        t = t.expand(*self.lead, self.L)
        return t if len(self.lead) == 2 else t.reshape(*self.bh, self.L)

    def _mask(self, add: Tensor) -> Tensor:
        L, S = self.L, self.S
        if self.cuda and (add.shape[-1] != S or add.stride(-1) != 1 or (add.dim() > 1 and add.stride(-2) % CUDA_BIAS_ALIGN)):
            # SDPA's own preparation for this kernel: rows aligned in memory, then broadcast
            buf = add.new_empty(*add.shape[:-1], S + (-S) % CUDA_BIAS_ALIGN)
            buf[..., :S] = add
            add = buf[..., :S]
        add = add.expand(*self.lead, L, S)
        return add if len(self.lead) == 2 else add.reshape(*self.bh, L, S)

    def _dead(self, add: Tensor) -> Optional[Tensor]:
        """``(B, H, L)`` True where a query sees no key, or None where every query sees one.
        Computed on the compact mask (a key mask stays O(S))."""
        if add.shape[-1] != self.S:
            add = add.expand(*add.shape[:-1], self.S)
        dead = no_key_visible(add, self.causal, self.L)  # (…, L|1)
        return self.rows(dead) if bool(dead.any()) else None

    def forward(self) -> tuple[Tensor, Tensor]:
        """``out (B, H, L, D)``, ``lse (B, H, L)`` (no autograd); out 0, lse −∞ where dead."""
        q, k, v, add = self.q, self.k, self.v, self.add
        if self.half == "flash":
            # (out, lse, cum_seq_q, cum_seq_k, max_q, max_k, philox seed, philox offset, debug mask)
            out, lse, *rest = torch.ops.aten._scaled_dot_product_flash_attention(
                q, k, v, 0.0, self.causal, False, scale=self.scale)
            self.half_saved = [*rest[:6], lse.shape]
        elif self.half == "cudnn":  # the same outputs; lse may carry a trailing 1
            out, lse, *rest = torch.ops.aten._scaled_dot_product_cudnn_attention(
                q, k, v, None, True, 0.0, self.causal, False, scale=self.scale)
            self.half_saved = [*rest[:6], lse.shape]
            lse = lse.reshape(*q.shape[:2], self.L)
        elif self.cuda:
            out, lse, _, _ = torch.ops.aten._scaled_dot_product_efficient_attention(
                q, k, v, add, True, 0.0, self.causal, scale=self.scale)
            lse = lse[..., :self.L]  # the kernel pads its rows to a multiple of 32
        else:
            out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
                q, k, v, 0.0, self.causal, attn_mask=add, scale=self.scale)
        if self.dead is not None:
            lse = lse.masked_fill(self.dead, float("-inf"))
            out = out.masked_fill(self.dead[..., None], 0.0)
        return out, lse

    def backward(self, d_out: Tensor, out: Tensor, lse: Tensor,
                 d_lse: Optional[Tensor] = None) -> tuple[Tensor, Tensor, Tensor]:
        """Gradients of the kernel's q, k, v ``(B, H, ·, D)`` from ``d_out``, the saved (or, in the
        ring, the merged) ``out (B, H, L, D)`` and ``lse (B, H, L)``, and ``d_lse`` (or None).

        The kernels compute dS = P ∘ (dO Vᵀ − D) with P = exp(S − lse) and D = rowsum(dO ∘ out).
        The lse's gradient adds P ∘ d_lse, i.e. D − d_lse in place of D: one more column with
        v = 0, dO = 1 and out = −d_lse gives exactly that and leaves dO Vᵀ alone.
        """
        q, k, v = self.q, self.k, self.v
        lse = lse.masked_fill(torch.isneginf(lse), float("inf"))  # dead rows: P = exp(s − ∞) = 0
        d_out, out = d_out.to(q.dtype), out.to(q.dtype)  # the ring's merged out is float32 for half inputs
        if d_lse is not None:
            extra = CUDA_HEAD_ALIGN if self.cuda else 1
            q, k, v = (F.pad(t, (0, extra)) for t in (q, k, v))
            out_col = out.new_zeros(*out.shape[:-1], extra)
            out_col[..., 0] = -d_lse
            do_col = torch.zeros_like(out_col, dtype=d_out.dtype)
            do_col[..., 0] = 1.0
            out, d_out = torch.cat([out, out_col], dim=-1), torch.cat([d_out, do_col], dim=-1)
        if self.half_saved is not None and d_lse is None:
            # an lse gradient (one more column) and the ring's backward (a fresh problem) take the
            # memory-efficient kernel below: the backward needs out and lse alone, whichever kernel
            # made them, and only this case was checked on CUDA (benchmarks/cuda_check.py)
            cum_q, cum_k, max_q, max_k, seed, offset, lse_shape = self.half_saved
            lse = lse.float().reshape(lse_shape).contiguous()
            if self.half == "flash":
                dq, dk, dv = torch.ops.aten._scaled_dot_product_flash_attention_backward(
                    d_out.contiguous(), q, k, v, out.contiguous(), lse, cum_q, cum_k, max_q, max_k, 0.0, self.causal,
                    seed, offset, scale=self.scale)
            else:
                dq, dk, dv = torch.ops.aten._scaled_dot_product_cudnn_attention_backward(
                    d_out.contiguous(), q, k, v, out.contiguous(), lse, seed, offset, None, cum_q, cum_k, max_q, max_k,
                    0.0, self.causal, scale=self.scale)
        elif self.cuda:
            lse_p = F.pad(lse.float(), (0, (-self.L) % CUDA_LSE_ALIGN)).contiguous()
            seed = torch.zeros((), dtype=torch.int64)  # unused without dropout
            dq, dk, dv, _ = torch.ops.aten._scaled_dot_product_efficient_attention_backward(
                d_out, q, k, v, self.add, out, lse_p, seed, seed, 0.0, [True, True, True, False], self.causal,
                scale=self.scale)
        else:
            dq, dk, dv = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
                d_out, q, k, v, out, lse.to(torch.float64 if q.dtype == torch.float64 else torch.float32), 0.0, self.causal,
                attn_mask=self.add, scale=self.scale)
        D = self.D
        return dq[..., :D], dk[..., :D], dv[..., :D]

    def result(self, out: Tensor, lse: Tensor) -> tuple[Tensor, Tensor]:
        """``(B, H, L, D)``, ``(B, H, L)`` → ``out (*lead, L, d_v)``, ``lse (*lead, L)`` (float32
        for half inputs)."""
        out = out[..., :self.d_v] if self.D != self.d_v else out
        if len(self.lead) != 2:
            out, lse = out.reshape(*self.lead, self.L, self.d_v), lse.reshape(*self.lead, self.L)
        return out, lse.float() if lse.dtype in (torch.float16, torch.bfloat16) else lse

    def grads(self, dq: Tensor, dk: Tensor, dv: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Kernel-shaped gradients → ``(*lead, ·, d)``."""
        def back(t: Tensor, d: int) -> Tensor:
            t = t[..., :d] if t.shape[-1] != d else t
            return t if len(self.lead) == 2 else t.reshape(*self.lead, *t.shape[-2:])
        return back(dq, self.d_k), back(dk, self.d_k), back(dv, self.d_v)


class LseFn(torch.autograd.Function):
    """The fused kernel with its fused backward from the saved lse: gradients for q, k, v
    (the mask gets none; callers send a mask that needs one elsewhere)."""

    @staticmethod
    def forward(ctx, q, k, v, problem):
        out, lse = problem.forward()
        ctx.save_for_backward(out, lse)
        ctx.problem = problem
        ctx.set_materialize_grads(False)
        return out, lse

    @staticmethod
    def backward(ctx, d_out, d_lse):
        out, lse = ctx.saved_tensors
        if d_out is None:
            d_out = torch.zeros_like(out)
        dq, dk, dv = ctx.problem.backward(d_out, out, lse, d_lse)
        return dq, dk, dv, None


def flash_lse(q: Tensor, k: Tensor, v: Optional[Tensor], mask: Optional[Tensor], *, causal: bool,
              scale: float, bias: Optional[Tensor] = None) -> tuple[Optional[Tensor], Tensor]:
    """``out (*lead, L, d_v)`` (None without v) and ``lse (*lead, L)`` from the device's fused
    kernel; differentiable in q, k, v by the fused backward (not in the mask or bias).

    A query that sees no key gets out 0 and lse −∞. lse is float32 for half inputs.
    """
    L, S = q.shape[-2], k.shape[-2]
    add = combine_masks(mask, L, S, causal=False, dtype=q.dtype, device=q.device, bias=bias)
    if add is not None:
        add = add.detach()
    p = LseProblem(q, k, k if v is None else v, add, causal=causal, scale=scale)
    if v is not None and torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        # the kernel's operands are views (expand, reshape, pad) of q, k, v: autograd maps back
        out, lse = LseFn.apply(p.q, p.k, p.v, p)
    else:
        with torch.no_grad():
            out, lse = p.forward()
    out, lse = p.result(out, lse)
    return (None if v is None else out), lse
