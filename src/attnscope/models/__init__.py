"""Pretrained checkpoints on attnscope's modules: encoders and GPT-2 (BERT, MiniLM,
bert-base-chinese, RoBERTa, GPT-2) and the decoders of the Llama kind (Llama, Qwen2, Mistral,
Gemma 3), from Hugging Face folders, GGUF files and installed model packages.

``attnscope.load(path=None)`` reads a local Hugging Face folder (default: the packaged
all-MiniLM-L6-v2), a ``.gguf`` file, or a model package name (``"smollm2-135m"``,
``"gemma-3-270m"``). Each family's config translation and weight-name mapping lives in its own
file of :mod:`.families` (``bert``, ``roberta``, ``gpt2``, ``llama``, ``qwen2``, ``mistral``,
``gemma3``, …; the decoders share :mod:`.decoder_family`), found by the registry's scan of that folder.
"""

from .base import LoadedModel
from .deberta_model import DebertaModel
from .decoder_model import DecoderModel
from .encoder_model import EncoderModel
from .generation import Generation
from .loader import DEFAULT_NAME, default_model_path, load
from .model import Model
from .registry import FAMILIES, Family, WeightRule, supported_model_types
from .seq2seq_model import Seq2SeqModel

__all__ = ["load", "default_model_path", "DEFAULT_NAME", "Model", "DecoderModel", "EncoderModel", "DebertaModel",
           "Seq2SeqModel", "LoadedModel", "Generation",
           "Family", "WeightRule", "FAMILIES", "supported_model_types"]
