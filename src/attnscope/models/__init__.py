"""Pretrained checkpoints (BERT, MiniLM, bert-base-chinese, RoBERTa, GPT-2) on attnscope's modules.

``attnscope.load(path=None)`` reads a local Hugging Face folder (default: the packaged
all-MiniLM-L6-v2) into a :class:`Model`. Each family's config translation and weight-name mapping
lives in its own file: :mod:`.bert`, :mod:`.roberta`, :mod:`.gpt2`.
"""

from .loader import DEFAULT_NAME, default_model_path, load
from .model import Model
from .registry import FAMILIES, Family, WeightRule, supported_model_types

__all__ = ["load", "default_model_path", "DEFAULT_NAME", "Model", "Family", "WeightRule", "FAMILIES",
           "supported_model_types"]
