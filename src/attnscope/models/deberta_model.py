"""The loaded DeBERTa-v2/v3 encoder (the family's config and weight names: :mod:`.families.deberta_v2`)."""

from __future__ import annotations

from typing import Optional

import torch

from ..modules.deberta import DebertaConfig, DebertaEncoder
from .base import check_mask
from .model import Model

Tensor = torch.Tensor


class DebertaModel(Model, DebertaEncoder):
    """A loaded DeBERTa-v2/v3 encoder: :class:`~attnscope.models.Model` (tokenizer, trace, hooks,
    sentence embeddings) on a :class:`~attnscope.modules.deberta.DebertaEncoder`."""

    config: DebertaConfig

    # As Model.forward: token ids, masks and positions where the stack's base takes hidden states.
    def forward(self, input_ids: Tensor, attention_mask: Optional[Tensor] = None,  # type: ignore[override]
                token_type_ids: Optional[Tensor] = None, position_ids: Optional[Tensor] = None) -> Tensor:
        """Token ids ``(B, L)`` → last hidden states ``(B, L, d_model)``; ``attention_mask`` 1 = real token."""
        check_mask(input_ids, attention_mask)
        with self.lock:
            return self.forward_stack(input_ids, attention_mask, token_type_ids, position_ids)  # (B, L, d)
