"""What a model family is: its config translation and its checkpoint weight names, in one place.

Each module of the ``families`` subpackage (``families/bert.py``, ``families/gpt2.py``,
``families/llama.py``, …) builds one :class:`Family` and registers it here under the
``model_type`` values of Hugging Face ``config.json`` that it reads; the registry finds them by
scanning that folder (:func:`supported_model_types`, :func:`family_for`), so adding a family is
adding its file.
The loader (``loader.py``) only ever talks to a family through this record.

A :class:`WeightRule` says how one attnscope parameter is made from checkpoint tensors, e.g. the
fused ``layers.0.attn.W_qkv.weight`` (3·d, d) is ``cat(query.weight, key.weight, value.weight)``
and GPT-2's Conv1D weights are stored transposed ((in, out) instead of nn.Linear's (out, in)).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, Union

import torch

from ..config import TransformerConfig
from ..errors import ConfigError, ModelLoadError
from ..i18n import error
from .reasons import reason

Tensor = torch.Tensor


def _same(ts: Sequence[Tensor]) -> Tensor:
    return ts[0]


def fuse_rows(ts: Sequence[Tensor]) -> Tensor:
    """Separate W_Q, W_K, W_V (out, in) stacked into the fused (3·out, in) of ``W_qkv``."""
    return torch.cat(list(ts), dim=0)


def transpose(ts: Sequence[Tensor]) -> Tensor:
    """A Conv1D weight (in, out) as an nn.Linear weight (out, in)."""
    return ts[0].t()


@dataclass(frozen=True)
class WeightRule:
    """``target`` (an attnscope state-dict key) = ``combine(checkpoint[s] for s in sources)``."""

    target: str
    sources: tuple[str, ...]
    combine: Callable[[Sequence[Tensor]], Tensor] = _same


@dataclass(frozen=True)
class Family:
    """A family of checkpoints that share an architecture and weight naming.

    Attributes:
        name: "bert", "roberta" or "gpt2" (``model.family``).
        model_types: ``config.json`` ``model_type`` values that this family loads.
        prefixes: prefixes that task heads put before the base model's keys ("bert." in
            BertForMaskedLM, "transformer." in GPT2LMHeadModel); stripped before mapping.
        config_from_hf: ``(config.json dict, its path)`` → :class:`TransformerConfig` (raise ConfigError or
            ModelLoadError on what attnscope cannot run).
        rules: config → the list of :class:`WeightRule` s covering every parameter.
        tokenizer_kind: "wordpiece", "bpe-roberta" or "bpe-gpt2" (see ``attnscope.tokenizer``), or
            ``fn(folder) → kind`` for families whose checkpoints ship either (:func:`tokenizer_by_files`).
        position_ids: optional ``(input_ids, config) → (B, L)`` position ids (RoBERTa numbers
            positions after the padding index and gives padding the padding index).
        lm_head: the model predicts next tokens with the tied token embedding (GPT-2).
        renames: old → new key fragments applied first (``LayerNorm.gamma`` → ``LayerNorm.weight``).
        moved: old → new leading parts of keys, replaced before the prefixes are stripped (a layout
            that other versions of transformers saved: Gemma 3's ``model.language_model.`` → ``model.``).
        model_class: the class the loader builds (default :class:`~attnscope.models.Model`; the
            decoder families build :class:`~attnscope.models.DecoderModel`).
    """

    name: str
    model_types: tuple[str, ...]
    prefixes: tuple[str, ...]
    config_from_hf: Callable[[dict, str], TransformerConfig]
    rules: Callable[[Any], list[WeightRule]]  # takes the family's own config class
    tokenizer_kind: Union[str, Callable[[Path], str]]
    position_ids: Optional[Callable[[Tensor, TransformerConfig], Tensor]] = None
    lm_head: bool = False
    renames: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    moved: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    model_class: Optional[type] = None


class _Scanned(Mapping):
    """The families by name, read-only; the families folder is scanned before the first read, so
    that ``FAMILIES`` lists every family even before one has been looked up."""

    def __init__(self, families: dict) -> None:
        self._families = families

    def __getitem__(self, name: str) -> Family:
        _ensure_registered()
        return self._families[name]

    def __iter__(self) -> Iterator[str]:
        _ensure_registered()
        return iter(self._families)

    def __len__(self) -> int:
        _ensure_registered()
        return len(self._families)

    def __repr__(self) -> str:
        return repr(dict(self))


_BY_NAME: dict[str, Family] = {}
FAMILIES: Mapping[str, Family] = _Scanned(_BY_NAME)  # by family name
_BY_MODEL_TYPE: dict[str, Family] = {}  # by config.json model_type
#: The folder whose modules are the families (scanned, not listed).
FAMILIES_FOLDER = Path(__file__).with_name("families")
_SCANNED = False


def register(family: Family) -> Family:
    _BY_NAME[family.name] = family
    for t in family.model_types:
        _BY_MODEL_TYPE[t] = family
    return family


def supported_model_types() -> list[str]:
    _ensure_registered()
    return sorted(_BY_MODEL_TYPE)


def family_for(model_type, source: str = "config.json") -> Family:
    """The family that loads ``model_type``; ModelLoadError naming the file otherwise."""
    _ensure_registered()
    fam = _BY_MODEL_TYPE.get(model_type) if isinstance(model_type, str) else None
    if fam is None:
        raise error(ModelLoadError, "errors.config_model_type" if model_type is not None else "errors.config_no_model_type",
                    source=source, model_type=repr(model_type),
                    supported=", ".join(supported_model_types()))
    return fam


def _ensure_registered() -> None:
    """Import every module of :mod:`attnscope.models.families` once; each registers its family on
    import (a new family is one file there, listed nowhere). The registry imports no family: the
    families import the registry."""
    global _SCANNED
    if _SCANNED:
        return
    for info in pkgutil.iter_modules([str(FAMILIES_FOLDER)]):
        importlib.import_module(f"{__package__}.families.{info.name}")
    _SCANNED = True


#: SentencePiece model files that some checkpoints carry instead of a tokenizer.json.
SENTENCEPIECE_FILES = ("spiece.model", "sentencepiece.bpe.model", "spm.model", "sentencepiece.model")


def tokenizer_by_files(bpe_kind: str = "bpe-roberta") -> Callable[[Path], str]:
    """``fn(folder) → kind`` for families whose checkpoints ship different tokenizers (ALBERT's
    English SentencePiece and Chinese ``vocab.txt``; BART's byte-level BPE and Chinese
    ``vocab.txt``): ``tokenizer.json`` is read as it is, else ``vocab.txt`` is WordPiece and
    ``vocab.json`` + ``merges.txt`` byte-level BPE. A folder with only a SentencePiece model file
    is a ModelLoadError saying how to write its ``tokenizer.json`` (attnscope reads SentencePiece
    vocabularies from that file: the ``sentencepiece`` library is not a dependency)."""
    def kind(folder: Path) -> str:
        folder = Path(folder)
        if (folder / "tokenizer.json").is_file() or (folder / "vocab.json").is_file():
            return bpe_kind
        if (folder / "vocab.txt").is_file():
            return "wordpiece"
        sp = [f for f in SENTENCEPIECE_FILES if (folder / f).is_file()]
        if sp:
            raise error(ModelLoadError, "errors.models_sentencepiece_only", folder=folder, file=sp[0])
        return bpe_kind  # the loader names the files it expected
    return kind


def hf_extra(hf: dict, **more) -> dict:
    """A family's ``config.extra``: what the checkpoint calls itself (``model_type``,
    ``architectures``, ``_name_or_path`` as ``name_or_path``), then the family's own ``more``."""
    return {"model_type": hf.get("model_type"), "architectures": hf.get("architectures"),
            "name_or_path": hf.get("_name_or_path"), **more}


def make_config(build: Callable[..., Any], source, *args, **fields):
    """``build(*args, **fields)`` (a config class, or a family's ``config_from_hf``), its
    ConfigError as a ModelLoadError naming ``source``."""
    try:
        return build(*args, **fields)
    except ConfigError as e:
        raise error(ModelLoadError, "errors.models_source_why", source=source, why=reason(e)) from None


#: Hugging Face ``hidden_act`` / ``activation_function`` names → attnscope's activation names.
HF_ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu_fast": "gelu_tanh",
                  "relu": "relu", "silu": "silu", "swish": "silu"}


def hf_activation(name, source: str, runs=("gelu", "gelu_tanh", "relu"), key="errors.config_activation") -> str:
    """:data:`HF_ACTIVATIONS` of ``name`` where the caller's layers run it (``runs``: attnscope
    names; a gated MLP runs silu, gelu_tanh and gelu), else the ModelLoadError ``key``."""
    table = {hf: ours for hf, ours in HF_ACTIVATIONS.items() if ours in runs}
    if name not in table:
        raise error(ModelLoadError, key, source=source, name=repr(name), supported=", ".join(sorted(table)))
    return table[name]


_MISSING = object()

#: What a config.json's numbers may be, by key, whichever family reads them (every family reads its
#: settings through :func:`setting`): sizes and counts are > 0, epsilons, bases and scalars are
#: finite and > 0, dropouts are probabilities in [0, 1), and every other number is finite. A zero or
#: a NaN here would otherwise surface later as a ZeroDivisionError or as attention weights of NaN.
POSITIVE_INTS = frozenset({
    "vocab_size", "hidden_size", "num_attention_heads", "num_hidden_layers", "intermediate_size",
    "max_position_embeddings", "num_key_value_heads", "head_dim", "sliding_window", "attention_head_size",
    "n_embd", "n_head", "n_layer", "n_positions", "n_inner", "d_model", "d_ff", "d_kv", "num_heads", "num_layers",
    "num_decoder_layers", "relative_attention_num_buckets", "relative_attention_max_distance", "encoder_layers",
    "decoder_layers", "encoder_attention_heads", "decoder_attention_heads", "encoder_ffn_dim", "decoder_ffn_dim",
    "embedding_size", "num_hidden_groups", "inner_group_num", "dim", "hidden_dim", "n_heads", "n_layers"})
NON_NEGATIVE_INTS = frozenset({"type_vocab_size", "max_window_layers"})
POSITIVE_NUMBERS = frozenset({"layer_norm_eps", "layer_norm_epsilon", "rms_norm_eps", "rope_theta",
                              "rope_local_base_freq", "query_pre_attn_scalar", "final_logit_softcapping"})
PROBABILITIES = frozenset({"dropout", "dropout_rate", "attention_dropout", "attention_probs_dropout_prob",
                           "hidden_dropout_prob", "attn_pdrop", "resid_pdrop", "embd_pdrop", "activation_dropout"})


def check_number(key: str, value, source: str):
    """``value`` if it is a possible value of the config key ``key`` (see :data:`POSITIVE_INTS` …),
    else ModelLoadError naming the file, the key and the value."""
    import math
    if isinstance(value, float) and not math.isfinite(value):
        raise error(ModelLoadError, "errors.config_finite", source=source, field=repr(key), got=repr(value))
    if key in POSITIVE_INTS and value <= 0:
        raise error(ModelLoadError, "errors.config_positive_int", source=source, field=repr(key), got=repr(value))
    if key in NON_NEGATIVE_INTS and value < 0:
        raise error(ModelLoadError, "errors.config_non_negative", source=source, field=repr(key), got=repr(value))
    if key in POSITIVE_NUMBERS and not value > 0:
        raise error(ModelLoadError, "errors.config_positive", source=source, field=repr(key), got=repr(value))
    if key in PROBABILITIES and not 0 <= value < 1:
        raise error(ModelLoadError, "errors.config_dropout", source=source, field=repr(key), got=repr(value))
    return value


def setting(hf: dict, key: str, source: str, default=_MISSING, kind=int):
    """``hf[key]`` (or ``default`` when absent) with its type checked, and a number's range by
    :func:`check_number`; ModelLoadError naming the file and key when it is missing without a
    default, has the wrong type or an impossible value."""
    if key not in hf or hf[key] is None:
        if default is _MISSING:
            raise error(ModelLoadError, "errors.config_missing", source=source, field=repr(key))
        return default
    value = hf[key]
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise error(ModelLoadError, "errors.config_int", source=source, field=repr(key), got=repr(value))
    if kind is float and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise error(ModelLoadError, "errors.config_number", source=source, field=repr(key), got=repr(value))
    if kind is str and not isinstance(value, str):
        raise error(ModelLoadError, "errors.config_string", source=source, field=repr(key), got=repr(value))
    if kind is bool and not isinstance(value, bool):
        raise error(ModelLoadError, "errors.config_bool", source=source, field=repr(key), got=repr(value))
    if kind in (int, float):
        check_number(key, value, source)
    return value


def setting_of(hf: dict, keys: Sequence[str], source: str, default=_MISSING, kind=int):
    """:func:`setting` of the first of ``keys`` that ``hf`` sets (not None): one setting that
    config.json files spell more than one way, as transformers' ``attribute_map`` reads them
    (BLOOM's ``n_head`` or ``num_attention_heads``); ``default`` when none is set."""
    key = next((k for k in keys if hf.get(k) is not None), keys[0])
    return setting(hf, key, source, default, kind)


def token_ids(v, key: str, source: str) -> list[int]:
    """A setting that names tokens (``eos_token_id``, ``forced_bos_token_id``): an id or a list
    of ids → the list ([] for None); ModelLoadError naming the file and key otherwise."""
    if v is None:
        return []
    ids = v if isinstance(v, list) else [v]
    if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids):
        raise error(ModelLoadError, "errors.config_token_ids", source=source, field=repr(key), got=repr(v))
    return list(ids)
