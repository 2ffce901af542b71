"""XLM-RoBERTa (xlm-roberta-base/-large, multilingual-e5, bge-m3's encoder): RoBERTa's
architecture, weight names (prefix ``roberta.``) and position numbering (from ``padding_idx + 1``,
padding at ``padding_idx``), with a 250 002-token SentencePiece vocabulary shared by 100 languages
(read from the folder's ``tokenizer.json``).

See :mod:`attnscope.models.families.bert` for the weight-name table and :mod:`attnscope.models.families.roberta`
for the positions.
"""

from __future__ import annotations

from ..registry import Family, register, tokenizer_by_files
from .bert import LAYERNORM_RENAMES, encoder_rules
from .roberta import config_from_hf, position_ids

FAMILY = register(Family(
    name="xlm-roberta", model_types=("xlm-roberta",), prefixes=("roberta.",), config_from_hf=config_from_hf,
    rules=encoder_rules, tokenizer_kind=tokenizer_by_files("bpe-roberta"), position_ids=position_ids,
    renames=LAYERNORM_RENAMES,
))
