"""The public names of a model's intermediates (:data:`TRACE_NAMES`) and how patterns resolve.

A pattern is an exact name or a glob, optionally with a ``[h]`` suffix that selects head h of a
per-head step (see the table in :mod:`attnscope.trace`).
"""

from __future__ import annotations

import difflib
import fnmatch
import functools
import re
from typing import Iterable, Optional, Sequence, Union

from torch import nn

from ..config import TransformerConfig
from ..errors import InputError
from ..hooks import HookPoint
from ..i18n import error

#: Name templates of every traceable intermediate, in forward order. Public API.
TRACE_NAMES: tuple[str, ...] = (
    "embed.tokens", "embed.segments", "embed.positions", "embed.out", "embed.projected",
    "layers.{i}.attn_in",
    "layers.{i}.attn.q_proj", "layers.{i}.attn.k_proj", "layers.{i}.attn.q_normed", "layers.{i}.attn.k_normed",
    "layers.{i}.attn.q", "layers.{i}.attn.k", "layers.{i}.attn.v",
    "layers.{i}.attn.pos_q", "layers.{i}.attn.pos_k",
    "layers.{i}.attn.scores_c2c", "layers.{i}.attn.scores_c2p", "layers.{i}.attn.scores_p2c", "layers.{i}.attn.bias",
    "layers.{i}.attn.mask",
    "layers.{i}.attn.scores", "layers.{i}.attn.scaled", "layers.{i}.attn.masked", "layers.{i}.attn.weights",
    "layers.{i}.attn.z", "layers.{i}.attn.merged", "layers.{i}.attn.out", "layers.{i}.attn_post_norm",
    "layers.{i}.attn_resid", "layers.{i}.ffn_in", "layers.{i}.ffn.gate", "layers.{i}.ffn.hidden", "layers.{i}.ffn.out",
    "layers.{i}.ffn_post_norm", "layers.{i}.ffn_resid", "layers.{i}.out",
    "final_norm",
)

_ATTN = ("q", "k", "v", "bias", "scores", "scaled", "masked", "weights", "z", "merged", "out")
_FFN = ("ffn_in", "ffn.gate", "ffn.hidden", "ffn.out", "ffn_resid", "out")

#: Name templates of an encoder–decoder model (T5, BART), in forward order. Public API. ``{i}``
#: counts the encoder's layers in ``encoder.*`` and the decoder's in ``decoder.*``; ``bias`` is
#: T5's relative position bias (self-attention only), ``ffn.gate`` its gated FFN (v1.1).
SEQ2SEQ_NAMES: tuple[str, ...] = (
    "encoder.embed.tokens", "encoder.embed.positions", "encoder.embed.out",
    "encoder.layers.{i}.attn_in", *(f"encoder.layers.{{i}}.attn.{s}" for s in _ATTN),
    "encoder.layers.{i}.attn_resid", *(f"encoder.layers.{{i}}.{s}" for s in _FFN),
    "encoder.final_norm",
    "decoder.embed.tokens", "decoder.embed.positions", "decoder.embed.out",
    "decoder.layers.{i}.self_attn_in", *(f"decoder.layers.{{i}}.self_attn.{s}" for s in _ATTN),
    "decoder.layers.{i}.self_attn_resid",
    "decoder.layers.{i}.cross_attn_in", *(f"decoder.layers.{{i}}.cross_attn.{s}" for s in _ATTN if s != "bias"),
    "decoder.layers.{i}.cross_attn_resid", *(f"decoder.layers.{{i}}.{s}" for s in _FFN),
    "decoder.final_norm",
)

#: The attention blocks of a layer whose steps take a ``[h]`` suffix.
ATTENTION_BLOCKS: tuple[str, ...] = ("attn", "self_attn", "cross_attn")

#: Steps of ``layers.{i}.attn`` that have a head axis (dim 1) and accept a ``[h]`` suffix, in every family.
HEAD_STEPS: tuple[str, ...] = ("q", "k", "v", "scores", "scaled", "masked", "weights", "z")

#: The per-head steps before the dot product's operands in the rotary (decoder) families: the
#: projections and the QK-norm outputs. ``[h]`` works on them too.
PRE_ROTARY_STEPS: tuple[str, ...] = ("q_proj", "k_proj", "q_normed", "k_normed")

#: DeBERTa's disentangled attention: the relative-position projections ``pos_q``, ``pos_k``
#: (1, H, 2k, d_head), its three score terms (B, H, L, S) — content→content (``scores_c2c``, the
#: ``scores`` of every family), content→position, position→content — and ``bias``, the score term
#: added to the scaled scores (DeBERTa: (c2p + p2c)/√(3·d_head); T5: the relative position bias).
SCORE_TERM_STEPS: tuple[str, ...] = ("pos_q", "pos_k", "scores_c2c", "scores_c2p", "scores_p2c", "bias")

#: Per-head steps whose head axis counts key/value heads (n_kv_heads): ``name[h]`` takes a *query*
#: head h and gives the k/v head it reads, ``h // (n_heads / n_kv_heads)``.
KV_STEPS: tuple[str, ...] = ("k_proj", "k_normed", "k", "v")

_HEAD_SUFFIX = re.compile(r"^(.*)\[(\d+)\]$")

#: One pattern that every name of the vocabulary (:data:`TRACE_NAMES`, :data:`SEQ2SEQ_NAMES`) matches
#: and nothing else does, ``{i}`` standing for a layer index.
_VOCABULARY = re.compile("|".join(
    "(?:" + re.escape(t).replace(re.escape("{i}"), "(?:0|[1-9][0-9]*)") + ")" for t in (*TRACE_NAMES, *SEQ2SEQ_NAMES)))


@functools.lru_cache(maxsize=1 << 14)  # a trace asks for every name of the model, every call
def in_vocabulary(name: str) -> bool:
    """Is ``name`` (``layers.3.attn.q``) a public trace name, an instance of a template of
    :data:`TRACE_NAMES` or :data:`SEQ2SEQ_NAMES`?"""
    return _VOCABULARY.fullmatch(name) is not None


def hook_point_paths(root: nn.Module) -> list[str]:
    """The path of every :class:`~attnscope.hooks.HookPoint` under ``root``, in ``named_modules()`` order."""
    return [path for path, m in root.named_modules() if isinstance(m, HookPoint)]


def tree_names(root: nn.Module) -> list[str]:
    """The trace names of the model ``root``, read from its module tree: the path of every hook point,
    in ``named_modules()`` order — the order in which the modules were registered, which every stack
    keeps equal to the forward order (a layer registers its steps in its recipe's order). A hook
    point whose path is not in the public vocabulary is left out (the tests require that there is
    none, so that a new step cannot appear without a public name)."""
    return [p for p in hook_point_paths(root) if in_vocabulary(p)]


#: Names by config (its ``repr``: the class and every field), for :func:`expand_names`.
_BY_CONFIG: dict[str, tuple[str, ...]] = {}


def expand_names(config: Union[TransformerConfig, nn.Module]) -> list[str]:
    """Every trace name of a model with ``config`` (or of the model itself), in forward order.

    The names are read from the module tree (:func:`tree_names`): of the model itself, or for a
    config, of an empty model of that config built on the meta device (milliseconds, no memory;
    cached by the config's value)."""
    if isinstance(config, nn.Module):
        return tree_names(config)
    if not isinstance(config, TransformerConfig):
        raise error(InputError, "errors.trace_expand_names", type=type(config).__name__)
    key = repr(config)
    if key not in _BY_CONFIG:
        # the model's class comes from the families' registry, which knows every model class (a
        # model imports trace, trace does not import a model until asked for one by its config)
        from ..models.model_class import empty_model
        _BY_CONFIG[key] = tuple(tree_names(empty_model(config)))
    return list(_BY_CONFIG[key])


def _split_head(pattern: str) -> tuple[str, Optional[int]]:
    m = _HEAD_SUFFIX.match(pattern)
    return (m.group(1), int(m.group(2))) if m else (pattern, None)


def _is_head_step(name: str) -> bool:
    parts = name.split(".")
    return len(parts) >= 4 and parts[-4] == "layers" and parts[-2] in ATTENTION_BLOCKS and \
        parts[-1] in HEAD_STEPS + PRE_ROTARY_STEPS + SCORE_TERM_STEPS


def resolve(patterns: Union[None, str, Iterable[str]], all_names: Sequence[str], n_heads: int,
            what: str = "names") -> list[tuple[str, Optional[int]]]:
    """Exact names or globs (with an optional ``[h]`` suffix) → ``[(name, head or None)]``, in
    forward order, without repeats. InputError for a pattern that matches nothing (with the
    closest names), a ``[h]`` on a name without heads, or h out of range. ``h`` is a query head
    on every per-head name (on k/v names, the one k/v head it reads: see :data:`KV_STEPS`)."""
    if patterns is None:
        return [(n, None) for n in all_names]
    if isinstance(patterns, str):
        patterns = [patterns]
    try:
        patterns = list(patterns)
    except TypeError:
        raise error(InputError, "errors.trace_patterns_type", what=what, type=type(patterns).__name__) from None
    chosen: set[tuple[str, Optional[int]]] = set()
    for p in patterns:
        if not isinstance(p, str):
            raise error(InputError, "errors.trace_patterns_str", what=what, value=repr(p))
        base, head = _split_head(p.strip())
        matched = [n for n in all_names if fnmatch.fnmatchcase(n, base)]
        if not matched:
            close = difflib.get_close_matches(base, all_names, n=3)
            raise error(InputError, "errors.trace_no_match_close", what=what, pattern=repr(p), close=", ".join(close)) \
                if close else error(InputError, "errors.trace_no_match", what=what, pattern=repr(p), n=len(all_names))
        if head is not None:
            bad = [n for n in matched if not _is_head_step(n)]
            if bad:
                raise error(InputError, "errors.trace_head_suffix", what=what, pattern=repr(p), steps=",".join(HEAD_STEPS),
                            name=repr(bad[0]))
            if not 0 <= head < n_heads:
                raise error(InputError, "errors.trace_head_range", what=what, pattern=repr(p), head=head, n=n_heads,
                            last=n_heads - 1)
        chosen.update((n, head) for n in matched)
    order = {n: i for i, n in enumerate(all_names)}
    return sorted(chosen, key=lambda nh: (order[nh[0]], -1 if nh[1] is None else nh[1]))


def key(name: str, head: Optional[int]) -> str:
    return name if head is None else f"{name}[{head}]"
