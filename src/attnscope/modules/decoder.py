"""Decoder layers and stacks of the Llama kind (Llama, Qwen2, Qwen3, Mistral, Gemma 3, OLMo 2).

One layer is the recipe ``config.norm`` names (:mod:`attnscope.recipe`); ``pre`` (Llama), with
``sandwich``'s (Gemma's) two extra norms in brackets (``post_block``, OLMo 2, keeps those and drops
the two before the blocks)::

    attn_in        = RMSNorm_1(x)
    [attn_post_norm = RMSNorm(Attn(attn_in))]        Gemma's sandwich norm
    attn_resid     = x + Attn(attn_in)  [or + attn_post_norm]
    ffn_in         = RMSNorm_2(attn_resid)
    ffn.gate       = act(W_gate ffn_in)               silu (SwiGLU) or gelu_tanh (GeGLU)
    ffn.hidden     = ffn.gate ⊙ W_up ffn_in
    ffn.out        = W_down ffn.hidden
    [ffn_post_norm = RMSNorm(ffn.out)]
    ffn_resid      = attn_resid + ffn.out  [or + ffn_post_norm]
    out            = ffn_resid

The names mean what they mean in the encoder families (``attn_in`` enters attention, ``ffn_in``
enters the MLP, ``out`` leaves the layer); only the norms differ. The positions come from the
registry (:mod:`attnscope.positions`): the stack has ``config.position``'s q/k transform make its
tables once per pass (one per base: Gemma's sliding layers have their own) and each layer type's
mask scheme its mask once, and hands both to every layer; the attention turns q and k with the
scheme's ``rotate``.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, cast

import torch
from torch import nn

from ..config import DecoderConfig
from ..errors import InputError
from ..hooks import HookPoint
from ..i18n import error
from ..kernels.validate import check_token_ids, check_vocabulary
from ..positions import causal_window_mask, get_position
from .decoder_attention import DecoderAttention, KVCache
from .encoder import activation_fn
from .layer import RecipeLayer
from .rmsnorm import RMSNorm

Tensor = torch.Tensor


class DecoderEmbeddings(nn.Module):
    """ids ``(B, L)`` → ``(B, L, d)``: hook points ``tokens`` (the rows) and ``out`` (× ``embed_scale``:
    √d_model in Gemma, in the weights' dtype as transformers rounds it; 1 elsewhere)."""

    def __init__(self, config: DecoderConfig) -> None:
        super().__init__()
        self.config = config
        self.token_embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.tokens, self.out = HookPoint(), HookPoint()

    def forward(self, input_ids: Tensor) -> Tensor:
        c = self.config
        check_token_ids(input_ids)
        check_vocabulary(input_ids, c.vocab_size)
        x = self.tokens(self.token_embedding(input_ids))  # (B, L, d)
        if c.embed_scale != 1.0:
            x = x * torch.tensor(c.embed_scale, dtype=torch.float32).to(x.dtype)
        return self.out(x)  # (B, L, d)


class GatedFeedForward(nn.Module):
    """``W_2 (act(W_gate x) ⊙ W_up x)`` (Shazeer 2020); ``W_1`` holds ``[W_gate; W_up]`` (2·d_ff, d)
    so that both come from one matrix product. Hook points ``gate``, ``hidden`` (B, L, d_ff), ``out``."""

    def __init__(self, config: DecoderConfig) -> None:
        super().__init__()
        c = config
        self.d_ff = c.d_ff
        self.W_1 = nn.Linear(c.d_model, 2 * c.d_ff, bias=c.mlp_bias)  # rows: [W_gate; W_up]
        self.W_2 = nn.Linear(c.d_ff, c.d_model, bias=c.mlp_bias)
        self.act = activation_fn(c.activation)
        self.gate, self.hidden, self.out = HookPoint(), HookPoint(), HookPoint()

    def forward(self, x: Tensor) -> Tensor:
        g, u = self.W_1(x).split(self.d_ff, dim=-1)  # (B, L, d_ff) × 2
        h = self.hidden(self.gate(self.act(g)) * u)  # (B, L, d_ff)
        return self.out(self.W_2(h))  # (B, L, d_model)


def rms_norm(c: DecoderConfig) -> RMSNorm:
    """One RMSNorm over d_model as the family defines it (ε, Gemma's offset, OLMo 2's rounding)."""
    return RMSNorm(c.d_model, c.layer_norm_eps, offset=c.norm_offset, weight_first=c.norm_weight_first)


class DecoderLayer(RecipeLayer):
    """The layer of the recipe ``config.norm`` names (``pre``: Llama; ``sandwich``: Gemma; ``post_block``:
    OLMo 2) with RMSNorms, :class:`DecoderAttention` and the gated MLP (see the module docstring).

    ``forward(x, cos, sin, *, mask=None, causal=True, cache=None, need_weights=False)``: ``x (B, L, d)``
    → ``(B, L, d)`` (and the weights ``(B, H, L, S)`` with ``need_weights``); the rest goes to
    :meth:`DecoderAttention.forward`.
    """

    # the modules the recipe registers by name (each norm where the recipe has it), for a type checker
    attn: DecoderAttention
    ffn: GatedFeedForward
    ln1: RMSNorm
    ln2: RMSNorm
    ln_attn_post: RMSNorm
    ln_ffn_post: RMSNorm

    def __init__(self, config: DecoderConfig, index: int) -> None:
        c = config
        attn = DecoderAttention(c.d_model, c.n_heads, n_kv_heads=c.n_kv_heads, head_dim=c.head_dim,
                                bias=c.bias, out_bias=c.out_bias, scale=c.query_scale, dropout=c.attn_dropout,
                                layer_index=index, qk_norm_eps=c.layer_norm_eps if c.qk_norm else None,
                                qk_norm_span=c.qk_norm_span, norm_offset=c.norm_offset,
                                norm_weight_first=c.norm_weight_first)
        super().__init__(c.norm, attn=attn, ffn=GatedFeedForward(c), dropout=c.dropout, norm=lambda: rms_norm(c))
        self.index, self.window, self.rope = index, c.window(index), c.rope(index)
        self.mask_scheme = get_position(c.layer_type(index))  # its mask, by the layer's type


class TransformerDecoder(nn.Module):
    """Embeddings, the decoder layers and the final RMSNorm: ids ``(B, L)`` → ``(B, L, d_model)``.

    Hook point names are the module paths (``embed.out``, ``layers.3.attn.q_proj``,
    ``layers.3.attn.weights``, ``final_norm``); see :mod:`attnscope.trace` for the table.
    """

    def __init__(self, config: DecoderConfig) -> None:
        super().__init__()
        c = self.config = config
        self.embed = DecoderEmbeddings(c)
        self.layers = nn.ModuleList(DecoderLayer(c, i) for i in range(c.n_layers))
        self.ln_f = rms_norm(c)
        self.final_norm = HookPoint()
        rotary: Any = get_position(c.position).build(c)  # the q/k transform: tables(position_ids, dtype), rotate
        self.rotary = rotary
        for layer in cast("Sequence[DecoderLayer]", self.layers):
            layer.attn.rotate = rotary.rotate

    def decode(self, input_ids: Tensor, *, attention_mask: Optional[Tensor] = None,
               position_ids: Optional[Tensor] = None, cache: Optional[KVCache] = None,
               need_weights: bool = False):
        """The stack on ``input_ids (B, L)`` that follow ``cache.length`` cached positions.

        ``attention_mask (B, S)`` (S = cached + L; 1 = real token) hides padded keys; a query at a
        padded position still sees itself, so that its (meaningless) row stays finite. Returns the
        hidden states after the final norm ``(B, L, d)``, and with ``need_weights`` also the list
        of every layer's weights ``(B, H, L, S)``.
        """
        past = cache.length if cache is not None else 0
        B, L = input_ids.shape
        x = self.embed(input_ids)  # (B, L, d)
        if position_ids is None:
            position_ids = torch.arange(past, past + L, device=x.device)[None]  # (1, L)
        tables = self.rotary.tables(position_ids, x.dtype)  # per layer (cos, sin), each (B|1, 1, L, d_head)
        layers = cast("Sequence[DecoderLayer]", self.layers)
        kinds = {l.mask_scheme.name: l for l in layers}  # one layer of each type: one mask each
        masks = {name: self.mask_for(l.window, B, L, past, attention_mask, x.device, mask=l.mask_scheme.mask)
                 for name, l in kinds.items()}
        weights = []
        for layer in layers:
            cos, sin = tables[layer.index]  # by the layer's own index: the stack may run from a later layer
            mask, causal = masks[layer.mask_scheme.name]
            x = layer(x, cos, sin, mask=mask, causal=causal, cache=cache, need_weights=need_weights)  # (B, L, d)
            if need_weights:
                x, w = x
                weights.append(w)
        if cache is not None:
            cache.advance(L)
        x = self.final_norm(self.ln_f(x))  # (B, L, d)
        return (x, weights) if need_weights else x

    @staticmethod
    def mask_for(window: Optional[int], B: int, L: int, past: int, attention_mask: Optional[Tensor],
                 device, mask: Optional[Callable] = None) -> tuple[Optional[Tensor], bool]:
        """``(mask, causal)`` for queries at ``past … past + L − 1`` over keys ``0 … past + L − 1``:
        SDPA's ``is_causal`` when nothing else hides a key (no padding, the window wider than the
        text), no mask at all for one new token, else a bool mask ``(B|1, 1, L, S)`` from the layer's
        mask scheme's ``mask(q_pos, k_pos, window)`` (default: causal, within the window)."""
        S = past + L
        reaches = window is not None and S > window  # some key is farther than the window
        pad = attention_mask is not None and not bool(attention_mask.bool().all())
        if not pad and not reaches:
            if past == 0:
                return None, True
            if L == 1:
                return None, False
        q_pos = torch.arange(past, S, device=device)
        k_pos = torch.arange(S, device=device)
        allowed = (mask or causal_window_mask)(q_pos, k_pos, window if reaches else None)[None, None]  # (1, 1, L, S)
        if pad and attention_mask is not None:  # pad implies a mask
            if attention_mask.shape != (B, S):
                raise error(InputError, "errors.kernel_attention_mask_cached", B=B, S=S, got=tuple(attention_mask.shape))
            real = attention_mask.to(device).bool()[:, None, None, :]  # (B, 1, 1, S)
            allowed = (allowed & real) | (q_pos[:, None] == k_pos[None, :])  # (B, 1, L, S)
        return allowed, False
