"""Single- and multi-head attention modules.

``SingleHeadAttention`` is the first article's module (d_k = d_model, returns weights).
``MultiHeadAttention`` is the fourth article's fused form: one (d_model → 3·d_model) projection
computes Q, K and V for every head at once; ``view`` + ``transpose`` split the heads into a batch
dimension ``(B, H, L, d_head)``; attention runs batched over heads; the heads are merged back by
the inverse reshape and mixed by W_O.

Head i is *not* a slice of the input: it is the projection ``x @ W_Q^(i)`` with its own
``(d_model, d_head)`` matrix. :meth:`MultiHeadAttention.head_weights` returns those matrices.

Grouped-query attention (Llama 2 70B, Llama 3, Mistral, Gemma): ``n_kv_heads`` key/value heads,
each shared by ``n_heads / n_kv_heads`` query heads — query head h reads k/v head
``h // (n_heads / n_kv_heads)`` (one k/v head for all: multi-query attention). The projection then
has ``(n_heads + 2·n_kv_heads)·d_head`` rows, and ``d_head`` may differ from ``d_model / n_heads``
(Gemma 3 270M: d_model 640, 4 heads × 256).
"""

from __future__ import annotations

import numbers
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from .. import functional as AF
from ..errors import ConfigError, InputError, ShapeError, fmt_shape
from ..hooks import HookPoint
from ..i18n import error
from ..kernels.memory import BLOCKWISE_MIN_SCORES  # noqa: F401  (kept importable from here)
from ..kernels.steps import STEPS, ModuleHooks, attend
from ..kernels.validate import check_dropout, check_flag, check_positive_int, check_scale
from ..positions import get_position, real_positions
from ..scorings import DEFAULT_COSINE_TEMPERATURE, get_scoring
from .kv_cache import KVCache, cached_causal

Tensor = torch.Tensor


class SingleHeadAttention(nn.Module):
    """One head with d_k = d_model, as in the first article.

    ``forward(x (B, L, d_model)) -> (output (B, L, d_model), weights (B, L, L))``.
    """

    def __init__(self, hidden_size: int = 768, *, bias: bool = True) -> None:
        super().__init__()
        hidden_size = check_positive_int("hidden_size", hidden_size)
        bias = check_flag(bias, "bias")  # bias="no" would be truthy
        self.W_Q = nn.Linear(hidden_size, hidden_size, bias=bias)
        self.W_K = nn.Linear(hidden_size, hidden_size, bias=bias)
        self.W_V = nn.Linear(hidden_size, hidden_size, bias=bias)
        self.d_k = hidden_size

    def forward(self, x: Tensor, mask: Optional[Tensor] = None) -> tuple[Tensor, Tensor]:
        check_input("x", x, self.d_k)
        q = self.W_Q(x)  # (B, L, d)
        k = self.W_K(x)  # (B, L, d)
        v = self.W_V(x)  # (B, L, d)
        return AF.attention(q, k, v, mask, return_weights=True)  # (B, L, d), (B, L, L)


class SharedHeadPoint(HookPoint):
    """The hook point of a k/v step with grouped-query heads: ``add_hook(fn, head=h)`` takes a
    *query* head h and hooks the k/v head it reads, ``h // group``; fn still sees the name with h
    (``layers.0.attn.k[5]``). A replacement changes the shared head, for every query head of its group."""

    def __init__(self, group: int, n_heads: Optional[int] = None) -> None:
        super().__init__()
        self.group, self.n_heads = group, n_heads

    def add_hook(self, fn, dir="fwd", *, head: Optional[int] = None, read_only: bool = False):
        if head is None or self.group == 1 or not callable(fn) or isinstance(head, bool) or not isinstance(head, int) \
                or head < 0:
            return super().add_hook(fn, dir, head=head, read_only=read_only)
        if self.n_heads is not None and head >= self.n_heads:  # else named at the forward as k/v head head // group
            raise error(InputError, "errors.core_hook_query_head", head=head, name=repr(self.name), n=self.n_heads,
                        last=self.n_heads - 1, group=self.group)
        point, asked = self, head

        def named(t: Tensor, name: str):
            return fn(t, f"{point.name}[{asked}]")
        return super().add_hook(named, dir, head=head // self.group, read_only=read_only)


class MultiHeadAttention(nn.Module):
    """Multi-head attention with a fused Q/K/V projection and hook points on every step.

    Args:
        d_model: width of the residual stream.
        n_heads: number of (query) heads.
        n_kv_heads: number of key/value heads (grouped-query attention); None = n_heads.
        head_dim: width of one head; None = ``d_model // n_heads``.
        bias: biases on the projections (on W_qkv; on W_O too unless ``out_bias`` says otherwise).
        out_bias: bias on W_O (None: as ``bias``; Qwen2 has q/k/v biases and none on W_O).
        scale: the factor on q·kᵀ (None: the scoring's, 1/√d_head for "scaled"; Gemma 3 uses
            ``query_pre_attn_scalar^-½``).
        scoring: how scores are formed, a name registered in :mod:`attnscope.scorings`. "cosine"
            gets a learnable temperature per head (Swin V2), "qknorm" a learnable LayerNorm on q
            and k (ViT-22B): the parts a scoring's ``learnable`` entry creates.
        dropout: dropout on the attention weights while training.
        cosine_temperature: initial τ for "cosine".
        position: the config's position scheme (:mod:`attnscope.positions`); one that acts on
            ``"bias"`` with a fixed term (ALiBi) is added here to the scaled scores of
            self-attention, at the hook point ``bias`` (B, H, L, S), with positions that count
            real tokens (padding from ``key_padding_mask``); other schemes act elsewhere.
        score_bias: a ``bias`` hook point for a score term a subclass adds itself (T5's learned
            relative bias, :class:`~attnscope.modules.cross_decoder.Seq2SeqAttention`).
        layer_index: the layer's place in its stack: where its keys go in a :class:`KVCache`.

    Hook points (names relative to this module): ``q`` (B, H, L, d_head), ``k``, ``v``
    (B, H_kv, S, d_head; H_kv = n_kv_heads) — q and
    k as the scoring prepares them, the operands of the dot product (the projections for
    scaled/unscaled/inv_d, after the learnable LayerNorms for qknorm, unit length for cosine), so
    that ``scores == q @ kᵀ`` for every scoring; ``scores``, ``scaled``, ``masked``, ``weights``
    (B, H, L, S); ``z`` (weights·V, (B, H, L, d_head)); ``merged`` (B, L, d_model, heads
    concatenated); ``out`` (after W_O). Every step runs in :func:`attnscope.kernels.steps.attend`.
    """

    # The hook points, made by name in __init__ (a subclass may remake them in its own order).
    q: HookPoint
    k: HookPoint
    v: HookPoint
    scores: HookPoint
    scaled: HookPoint
    masked: HookPoint
    weights: HookPoint
    z: HookPoint
    bias: HookPoint  # only with a position scheme that acts on the scores (ALiBi), or score_bias
    merged: HookPoint
    out: HookPoint

    def __init__(self, d_model: int, n_heads: int, *, n_kv_heads: Optional[int] = None,
                 head_dim: Optional[int] = None, bias: bool = True, out_bias: Optional[bool] = None,
                 scale: Optional[float] = None, scoring: str = "scaled", dropout: float = 0.0,
                 cosine_temperature: float = DEFAULT_COSINE_TEMPERATURE, layer_norm_eps: float = 1e-6,
                 position: Optional[str] = None, score_bias: bool = False, layer_index: int = 0) -> None:
        super().__init__()
        self.layer_index = layer_index
        d_model = check_positive_int("d_model", d_model)
        n_heads = check_positive_int("n_heads", n_heads)
        n_kv = n_heads if n_kv_heads is None else check_positive_int("n_kv_heads", n_kv_heads)
        bias, score_bias = check_flag(bias, "bias"), check_flag(score_bias, "score_bias")  # "no" would be truthy
        out_bias = None if out_bias is None else check_flag(out_bias, "out_bias")
        if head_dim is None and d_model % n_heads != 0:
            raise error(ConfigError, "errors.core_heads_divide", p="", d_model=d_model, n_heads=n_heads,
                        rest=d_model % n_heads)
        if n_heads % n_kv:
            raise error(ConfigError, "errors.core_kv_heads", p="", n_heads=n_heads, n_kv=n_kv)
        sc = get_scoring(scoring)
        dh = d_model // n_heads if head_dim is None else check_positive_int("head_dim", head_dim)
        self.d_model, self.n_heads, self.n_kv_heads, self.d_head = d_model, n_heads, n_kv, dh
        self.group = n_heads // n_kv  # query heads per k/v head
        self.scale = check_scale(scale)  # a finite number, as attention() requires: NaN went by the fused path
        if self.scale is not None and sc.learnable is not None and sc.learnable.temperature is not None:
            # scale replaces the factor 1/τ: the learnable temperature would be made and never read
            raise error(ConfigError, "errors.kernel_module_scale_temperature", scoring=repr(scoring))
        self.scoring, self.dropout = scoring, check_dropout(dropout, "dropout")
        # rows: [W_Q (H·d_head); W_K (H_kv·d_head); W_V (H_kv·d_head)]
        self.W_qkv = nn.Linear(d_model, (n_heads + 2 * n_kv) * dh, bias=bias)
        self.W_O = nn.Linear(n_heads * dh, d_model, bias=bias if out_bias is None else out_bias)
        if sc.learnable is not None:  # e.g. cosine's logit_scale (H, 1, 1), qknorm's q_norm, k_norm
            options = {"cosine_temperature": cosine_temperature, "layer_norm_eps": layer_norm_eps}
            for name, part in sc.learnable.create(n_heads, self.d_head, options).items():
                setattr(self, name, part)
        scheme = get_position(position) if position is not None else None
        if scheme is not None and scheme.acts_on == "bias" and scheme.bias is None:
            raise error(ConfigError, "errors.kernel_learned_bias_scheme", name=repr(position))
        #: ``bias(n_heads, q_pos, k_pos, dtype, device)`` of a bias scheme, else None.
        self.position_bias = scheme.bias if scheme is not None and scheme.acts_on == "bias" else None
        self.position = position
        steps = (*STEPS[:3], "bias", *STEPS[3:]) if self.position_bias is not None or score_bias else STEPS
        for name in (*steps, "merged", "out"):
            setattr(self, name, SharedHeadPoint(self.group, n_heads) if name in ("k", "v") else HookPoint())
        #: NaN/±inf checks naming the step (None: follow attnscope.kernels.checking_finite).
        self.check_finite: Optional[bool] = None

    # ------------------------------------------------------------------------------------------
    @classmethod
    def from_torch(cls, m: nn.MultiheadAttention) -> "MultiHeadAttention":
        """Copy of a ``torch.nn.MultiheadAttention`` with the same weights (scaled scoring), in its
        training or eval mode (dropout acts as in ``m``). Its inputs are ``(B, L, d_model)`` like
        every attnscope module, whatever ``m.batch_first`` says."""
        if not isinstance(m, nn.MultiheadAttention):
            raise error(ConfigError, "errors.kernel_from_torch_type", type=type(m).__name__)
        if not m._qkv_same_embed_dim:
            raise error(ConfigError, "errors.kernel_from_torch_dims")
        if m.bias_k is not None or m.add_zero_attn:
            raise error(ConfigError, "errors.kernel_from_torch_bias_kv")
        has_bias = m.in_proj_bias is not None
        new = cls(m.embed_dim, m.num_heads, bias=has_bias, dropout=m.dropout)
        new = new.to(device=m.in_proj_weight.device, dtype=m.in_proj_weight.dtype).train(m.training)
        with torch.no_grad():
            new.W_qkv.weight.copy_(m.in_proj_weight)
            new.W_O.weight.copy_(m.out_proj.weight)
            if has_bias:
                new.W_qkv.bias.copy_(m.in_proj_bias)
                new.W_O.bias.copy_(m.out_proj.bias)
        return new

    def check_like_weights(self, x: Tensor, context: Optional[Tensor] = None) -> None:
        """ShapeError unless ``x`` (and ``context``) have the dtype and device of the module's
        weights (under autocast, which casts for the projections, any dtype)."""
        w = self.W_qkv.weight
        for name, t in (("x", x), ("context", context)):
            if t is None or (t.dtype == w.dtype and t.device == w.device):
                continue
            if t.device == w.device and torch.is_autocast_enabled(t.device.type):
                continue
            raise error(ShapeError, "errors.kernel_module_dtype", name=name, got=f"{t.dtype} on {t.device}",
                        want=f"{w.dtype} on {w.device}")

    def head_weights(self, i: int) -> dict[str, Optional[Tensor]]:
        """Head i's own matrices in ``x @ W`` convention.

        Returns ``W_Q``, ``W_K``, ``W_V`` (d_model, d_head), their biases ``b_Q``, ``b_K``,
        ``b_V`` (d_head,) or None, and ``W_O`` (d_head, d_model): the rows of W_O that head i's
        output is multiplied with (the output is Σ_i z_i @ W_O^(i) + b_O). With grouped-query
        heads, W_K and W_V are those of the shared k/v head ``i // group``.
        """
        if isinstance(i, bool) or not isinstance(i, numbers.Integral):
            raise error(ConfigError, "errors.not_integer", what="head index", value=repr(i))
        if not 0 <= i < self.n_heads:
            raise error(ConfigError, "errors.kernel_head_index", i=i, n=self.n_heads, last=self.n_heads - 1)
        i = int(i)
        dh, H, j = self.d_head, self.n_heads, i // self.group
        W, b = self.W_qkv.weight, self.W_qkv.bias  # ((H + 2 H_kv)·d_head, d), (…,)
        k0, v0 = H * dh, (H + self.n_kv_heads) * dh  # first rows of W_K and W_V
        rows = [slice(i * dh, (i + 1) * dh), slice(k0 + j * dh, k0 + (j + 1) * dh), slice(v0 + j * dh, v0 + (j + 1) * dh)]
        out: dict[str, Optional[Tensor]] = {}
        for name, r in zip(("Q", "K", "V"), rows):
            out[f"W_{name}"] = W[r].T  # (d_model, d_head)
            out[f"b_{name}"] = None if b is None else b[r]  # (d_head,)
        out["W_O"] = self.W_O.weight[:, i * dh:(i + 1) * dh].T  # (d_head, d_model)
        return out

    # ------------------------------------------------------------------------------------------
    def split_heads(self, t: Tensor, n_heads: Optional[int] = None) -> Tensor:
        """(B, L, n·d_head) → (B, n, L, d_head) (n = ``n_heads`` by default): a view and a transpose."""
        B, L, _ = t.shape
        return t.view(B, L, n_heads or self.n_heads, self.d_head).transpose(1, 2)  # (B, n, L, d_head)

    def merge_heads(self, t: Tensor) -> Tensor:
        """(B, H, L, d_head) → (B, L, d_model): heads concatenated along features."""
        B, H, L, dh = t.shape
        return t.transpose(1, 2).reshape(B, L, H * dh)  # (B, L, d_model)

    def project(self, x: Tensor, context: Optional[Tensor] = None) -> tuple[Tensor, Tensor, Tensor]:
        """Q from x and K, V from ``context`` (x itself for self-attention): (B, L, H·d_head) and
        (B, S, H_kv·d_head) twice."""
        dq, dkv = self.n_heads * self.d_head, self.n_kv_heads * self.d_head
        if context is None:
            return self.W_qkv(x).split((dq, dkv, dkv), dim=-1)  # (B, L, ·) × 3
        W, b = self.W_qkv.weight, self.W_qkv.bias
        q = F.linear(x, W[:dq], None if b is None else b[:dq])  # (B, L, H·d_head)
        k, v = F.linear(context, W[dq:], None if b is None else b[dq:]).split(dkv, dim=-1)  # 2 × (B, S, H_kv·d_head)
        return q, k, v

    def build_mask(self, B: int, L: int, S: int, key_padding_mask: Optional[Tensor],
                   attn_mask: Optional[Tensor], device: torch.device) -> Optional[Tensor]:
        """Combine the masks into one, broadcastable to (B, H, L, S), in SDPA's semantics."""
        mask = None
        if attn_mask is not None:
            if not isinstance(attn_mask, torch.Tensor):
                raise error(ShapeError, "errors.kernel_attn_mask_type", type=type(attn_mask).__name__)
            if attn_mask.dim() == 3:
                out = AF.broadcast_shapes(attn_mask.shape, (B, L, S))
                if out is None or tuple(out) != (B, L, S):
                    raise error(ShapeError, "errors.kernel_attn_mask_3d", B=B, H=self.n_heads, L=L, S=S,
                                got=fmt_shape(attn_mask.shape))
                attn_mask = attn_mask.unsqueeze(1)  # (B, 1, L, S): one mask per sample, all heads
            AF.check_mask(attn_mask, L, S, torch.Size((B, self.n_heads)), name="attn_mask")
            mask = attn_mask
        if key_padding_mask is not None:
            if not isinstance(key_padding_mask, torch.Tensor) or key_padding_mask.shape != (B, S):
                got = (fmt_shape(key_padding_mask.shape) if isinstance(key_padding_mask, torch.Tensor)
                       else type(key_padding_mask).__name__)
                raise error(ShapeError, "errors.kernel_key_padding_shape", B=B, S=S, got=got)
            if key_padding_mask.dtype == torch.bool:
                keep = ~key_padding_mask.to(device)[:, None, None, :]  # (B, 1, 1, S)
                if mask is None:
                    mask = keep
                elif mask.dtype == torch.bool:
                    mask = mask & keep
                else:
                    mask = mask.masked_fill(~keep, float("-inf"))
            elif key_padding_mask.is_floating_point():
                add = key_padding_mask.to(device)[:, None, None, :]  # (B, 1, 1, S), added
                if mask is None:
                    mask = add
                elif mask.dtype == torch.bool:
                    mask = torch.zeros(mask.shape, dtype=add.dtype, device=device).masked_fill(~mask, float("-inf")) + add
                else:
                    mask = mask + add
            else:
                raise error(ShapeError, "errors.kernel_key_padding_dtype", dtype=key_padding_mask.dtype)
        return mask

    def score_bias(self, B: int, L: int, S: int, key_padding_mask: Optional[Tensor], like: Tensor) -> Tensor:
        """The position scheme's score term ``(B|1, H, L, S)`` in ``like``'s dtype and device, through
        the hook point ``bias`` (recorded per text, ``(B, H, L, S)``). Keys at ``0 … S − 1``, or
        numbered among the real tokens when a bool ``key_padding_mask`` marks padding; the
        queries are the last L keys."""
        assert self.position_bias is not None
        if key_padding_mask is not None and key_padding_mask.dtype == torch.bool:
            k_pos = real_positions(~key_padding_mask.to(like.device))  # (B, S)
        else:
            k_pos = torch.arange(S, device=like.device)[None]  # (1, S)
        bias = self.position_bias(self.n_heads, k_pos[:, S - L:], k_pos, like.dtype, like.device)  # (B|1, H, L, S)
        return self.bias(bias.expand(B, -1, -1, -1)) if self.bias.hooks else bias

    def temperature(self) -> Optional[Tensor]:
        """τ of a scoring with a learnable temperature (cosine: ``(H, 1, 1)``), else None."""
        learn = get_scoring(self.scoring).learnable
        return None if learn is None or learn.temperature is None else learn.temperature(self)

    def forward(self, x: Tensor, context: Optional[Tensor] = None, *,
                key_padding_mask: Optional[Tensor] = None, attn_mask: Optional[Tensor] = None,
                causal: bool = False, need_weights: bool = False, cache: Optional[KVCache] = None):
        """Self-attention over ``x (B, L, d_model)``, or cross-attention over ``context (B, S, d_model)``.

        Args:
            key_padding_mask: ``(B, S)``, True = padding (ignored), as in ``nn.MultiheadAttention``.
            attn_mask: bool (True = attend) or float (added), shape (L, S), (B, L, S) or
                (B, H, L, S) — the semantics of ``attnscope.attention`` / SDPA. Note that
                ``nn.MultiheadAttention``'s boolean ``attn_mask`` means the opposite.
            causal: query i attends to keys 0..i only.
            need_weights: also return the weights ``(B, H, L, S)``, before dropout (per head;
                ``nn.MultiheadAttention`` returns them after dropout, averaged over heads by default).
            cache: self-attention after ``cache.length`` earlier positions (generation): x's keys and
                values join the cache, the queries (at the last L positions) attend all S, and
                ``causal`` and ALiBi count from the cache's start; the masks then span S keys.
        Returns:
            ``out (B, L, d_model)``, or ``(out, weights)``.
        """
        check_input("x", x, self.d_model)
        if context is not None:
            check_input("context", context, self.d_model)
            if context.shape[0] != x.shape[0]:
                raise error(ShapeError, "errors.kernel_context_batch", context_batch=context.shape[0], x_batch=x.shape[0],
                            x=fmt_shape(x.shape), context=fmt_shape(context.shape))
        causal = check_flag(causal)
        self.check_like_weights(x, context)
        B, L, _ = x.shape
        q, k, v = self.project(x, context)
        q = self.split_heads(q)  # (B, H, L, d_head)
        k = self.split_heads(k, self.n_kv_heads)  # (B, H_kv, S, d_head)
        v = self.split_heads(v, self.n_kv_heads)  # (B, H_kv, S, d_head)
        if cache is not None and context is None:  # the keys so far, then x's
            k, v = cache.update(self.layer_index, k, v)  # (B, H_kv, S, d_head)
        S = k.shape[-2]
        mask = self.build_mask(B, L, S, key_padding_mask, attn_mask, x.device)
        if cache is not None and context is None:  # SDPA's is_causal is top-left: queries at S − L … S − 1
            mask, causal = cached_causal(mask, causal, L, S, x.device)
        bias = None
        if self.position_bias is not None and context is None:
            bias = self.score_bias(B, L, S, key_padding_mask, q)  # (B|1, H, L, S)
        return self.attend_heads(q, k, v, mask, causal=causal, bias=bias, need_weights=need_weights, params=self,
                                 hooks=ModuleHooks(self))

    def active_hooks(self) -> Optional[ModuleHooks]:
        """The steps' hook points while one of them has a hook, else None: the step function's lean
        path (no per-step bookkeeping)."""
        return ModuleHooks(self) if any(getattr(self, s).hooks for s in STEPS) else None

    def attend_heads(self, q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor], *, hooks: Optional[ModuleHooks],
                     need_weights: bool, causal: bool = False, bias: Optional[Tensor] = None,
                     params: Optional[nn.Module] = None):
        """The steps after the heads' q ``(B, H, L, d_head)``, k, v ``(B, H_kv, S, d_head)``: attention
        (:func:`~attnscope.kernels.steps.attend`; ``params``: the scoring's learnable parts), ``merged``,
        ``out`` → ``(B, L, d_model)``, and the weights ``(B, H, L, S)`` with ``need_weights``."""
        need_weights = check_flag(need_weights, "need_weights")  # 'no' would be truthy: the weights asked for
        z, weights = attend(q, k, v, mask, causal=causal, scoring=self.scoring, scale=self.scale, params=params,
                            bias=bias, dropout_p=self.dropout if self.training else 0.0, need_weights=need_weights,
                            hooks=hooks, check_finite=self.check_finite)  # (B, H, L, d_head)
        merged = self.merged(self.merge_heads(z))  # (B, L, H·d_head)
        out = self.out(self.W_O(merged))  # (B, L, d_model)
        return (out, weights) if need_weights else out


def check_input(name: str, x: Tensor, d_model: int) -> None:
    """ShapeError unless ``x`` is a floating tensor of shape ``(B, L, d_model)``."""
    if not isinstance(x, torch.Tensor):
        raise error(ShapeError, "errors.kernel_not_tensor", name=name, type=type(x).__name__)
    if not x.is_floating_point():
        raise error(ShapeError, "errors.kernel_module_float", name=name, dtype=x.dtype)
    if x.dim() != 3 or x.shape[-1] != d_model:
        raise error(ShapeError, "errors.kernel_module_input_shape", name=name, d_model=d_model, shape=fmt_shape(x.shape))
