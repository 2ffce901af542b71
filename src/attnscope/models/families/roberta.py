"""RoBERTa: BERT's architecture and weight names (prefix ``roberta.``), with three differences.

* Positions are numbered from ``padding_idx + 1`` (= 2): the position table has
  ``max_position_embeddings`` = 514 rows for 512 usable positions, and padded tokens get position
  ``padding_idx``, as ``create_position_ids_from_input_ids`` in ``transformers`` does.
* One segment type (``type_vocab_size`` = 1), LayerNorm eps 1e-5.
* Byte-level BPE tokenizer with ``<s> … </s>`` and padding id 1.

See :mod:`attnscope.models.families.bert` for the weight-name table.
"""

from __future__ import annotations

import torch

from ...config import TransformerConfig
from ...errors import ModelLoadError
from ...i18n import error
from ..registry import Family, register, setting
from .bert import LAYERNORM_RENAMES, encoder_config, encoder_rules


def config_from_hf(hf: dict, source: str) -> TransformerConfig:
    pad = setting(hf, "pad_token_id", source, 1)
    n_positions = setting(hf, "max_position_embeddings", source, 512)
    if not 0 <= pad < n_positions - 1:  # positions start after the pad id; else "config.max_positions" was blamed
        raise error(ModelLoadError, "errors.config_roberta_pad", source=source, pad=pad, n=n_positions)
    # layer_norm_eps: transformers' RobertaConfig default is BERT's 1e-12 (roberta-base's config says 1e-5)
    return encoder_config(hf, source, layer_norm_eps=1e-12, type_vocab_size=1, max_positions_offset=pad + 1)


def position_ids(input_ids: torch.Tensor, config: TransformerConfig) -> torch.Tensor:
    """(B, L) positions: ``padding_idx + 1, padding_idx + 2, …`` on real tokens, ``padding_idx`` on padding."""
    pad = config.position_offset - 1
    real = input_ids.ne(pad).long()  # (B, L)
    return torch.cumsum(real, dim=1) * real + pad  # (B, L)


FAMILY = register(Family(
    name="roberta", model_types=("roberta",), prefixes=("roberta.",), config_from_hf=config_from_hf,
    rules=encoder_rules, tokenizer_kind="bpe-roberta", position_ids=position_ids, renames=LAYERNORM_RENAMES,
))
