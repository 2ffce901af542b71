"""Token, segment and position embeddings.

``embed.out = LayerNorm(token + segment + position)`` for BERT; GPT-2 has no segments and no
LayerNorm here. Sinusoidal encodings are those of "Attention Is All You Need":
``PE[pos, 2i] = sin(pos / 10000^(2i/d))``, ``PE[pos, 2i+1] = cos(pos / 10000^(2i/d))``.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from ..config import TransformerConfig
from ..errors import ConfigError
from ..hooks import HookPoint
from ..i18n import error
from ..kernels.validate import check_row_ids, check_token_ids, check_vocabulary
from ..positions import get_position, sinusoidal_positions  # noqa: F401  (sinusoidal_positions: public here too)

Tensor = torch.Tensor


class TermHooks(nn.Module):
    """An embedding module's hook points, one per term it has (the trace names are the hook points)."""

    tokens: HookPoint
    segments: HookPoint
    positions: HookPoint
    out: HookPoint

    def add_term_hooks(self) -> None:
        """Make ``tokens``, ``segments`` (when there is a ``segment_embedding``), ``positions`` (when
        there is a ``position_embedding``) and ``out``, in this order: the trace names follow the
        ``named_modules`` order."""
        self.tokens = HookPoint()
        if self.segment_embedding is not None:
            self.segments = HookPoint()
        if self.position_embedding is not None:
            self.positions = HookPoint()
        self.out = HookPoint()


class Embeddings(TermHooks):
    """ids ``(B, L)`` → vectors ``(B, L, d_model)``.

    Hook points: ``tokens``, ``segments``, ``positions`` (each (B, L, d_model) or (1, L, d_model)),
    ``out`` (after the sum, LayerNorm and dropout).
    """

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        c = config
        self.config = c
        self.token_embedding = nn.Embedding(c.vocab_size, c.d_model, padding_idx=None)
        self.segment_embedding = nn.Embedding(c.type_vocab_size, c.d_model) if c.type_vocab_size > 0 else None
        scheme = get_position(c.position)
        # a fixed score bias (ALiBi) is added by each layer's attention; nothing to add here
        if scheme.acts_on != "embeddings" and (scheme.acts_on, scheme.bias is None) != ("bias", False):
            raise error(ConfigError, "errors.kernel_embeddings_scheme", name=repr(c.position), acts_on=scheme.acts_on)
        # learned: nn.Embedding (weights "position_embedding.weight"); sinusoidal: a fixed table
        self.position_embedding = scheme.build(c) if scheme.acts_on == "embeddings" else None
        self.norm = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps) if c.embed_norm else None
        self.drop = nn.Dropout(c.dropout)
        # a hook point for each term there is (the trace names are the hook points: GPT-2 has no segments)
        self.add_term_hooks()

    def forward(self, input_ids: Tensor, token_type_ids: Optional[Tensor] = None,
                position_ids: Optional[Tensor] = None) -> Tensor:
        c = self.config
        check_token_ids(input_ids, max_positions=c.context_limit)
        B, L = input_ids.shape
        check_vocabulary(input_ids, c.vocab_size)
        x = self.tokens(self.token_embedding(input_ids))  # (B, L, d)
        if self.segment_embedding is not None:
            if token_type_ids is None:
                token_type_ids = torch.zeros_like(input_ids)
            else:
                check_row_ids(token_type_ids, "token_type_ids", B, L, c.type_vocab_size)
            x = x + self.segments(self.segment_embedding(token_type_ids))  # (B, L, d)
        if self.position_embedding is not None:
            if position_ids is None:
                position_ids = (torch.arange(L, device=input_ids.device) + c.position_offset)[None]  # (1, L)
            else:
                check_row_ids(position_ids, "position_ids", B, L, c.max_positions + c.position_offset)
            pos = self.position_embedding(position_ids).to(x.dtype)  # (B|1, L, d)
            x = x + self.positions(pos)
        if self.norm is not None:
            x = self.norm(x)
        return self.out(self.drop(x))  # (B, L, d)
