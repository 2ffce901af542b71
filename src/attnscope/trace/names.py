"""The public names of a model's intermediates (:data:`TRACE_NAMES`) and how patterns resolve.

A pattern is an exact name or a glob, optionally with a ``[h]`` suffix that selects head h of a
per-head step (see the table in :mod:`attnscope.trace`).
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from typing import Iterable, Optional, Sequence, Union

from ..config import TransformerConfig
from ..errors import InputError

#: Name templates of every traceable intermediate, in forward order. Public API.
TRACE_NAMES: tuple[str, ...] = (
    "embed.tokens", "embed.segments", "embed.positions", "embed.out",
    "layers.{i}.attn_in",
    "layers.{i}.attn.q", "layers.{i}.attn.k", "layers.{i}.attn.v",
    "layers.{i}.attn.scores", "layers.{i}.attn.scaled", "layers.{i}.attn.masked", "layers.{i}.attn.weights",
    "layers.{i}.attn.z", "layers.{i}.attn.merged", "layers.{i}.attn.out",
    "layers.{i}.attn_resid", "layers.{i}.ffn_in", "layers.{i}.ffn.hidden", "layers.{i}.ffn.out",
    "layers.{i}.ffn_resid", "layers.{i}.out",
    "final_norm",
)

#: Steps of ``layers.{i}.attn`` that have a head axis (dim 1) and accept a ``[h]`` suffix.
HEAD_STEPS: tuple[str, ...] = ("q", "k", "v", "scores", "scaled", "masked", "weights", "z")

_HEAD_SUFFIX = re.compile(r"^(.*)\[(\d+)\]$")

def expand_names(config: TransformerConfig) -> list[str]:
    """Every concrete name for a model with ``config``, in forward order.

    Names that never fire for this architecture are left out: ``embed.segments`` without segment
    embeddings (GPT-2), ``embed.positions`` without positions, ``final_norm`` without a final
    LayerNorm (BERT, RoBERTa).
    """
    out = []
    for t in TRACE_NAMES:
        if t == "embed.segments" and config.type_vocab_size == 0:
            continue
        if t == "embed.positions" and config.position == "none":
            continue
        if t == "final_norm" and not config.final_norm:
            continue
        if "{i}" in t:
            continue
        out.append(t)
    layer_templates = [t for t in TRACE_NAMES if "{i}" in t]
    head = out[: out.index("embed.out") + 1]
    tail = [n for n in out if n not in head]
    return head + [t.format(i=i) for i in range(config.n_layers) for t in layer_templates] + tail


def _split_head(pattern: str) -> tuple[str, Optional[int]]:
    m = _HEAD_SUFFIX.match(pattern)
    return (m.group(1), int(m.group(2))) if m else (pattern, None)


def _is_head_step(name: str) -> bool:
    parts = name.split(".")
    return len(parts) == 4 and parts[0] == "layers" and parts[2] == "attn" and parts[3] in HEAD_STEPS


def resolve(patterns: Union[None, str, Iterable[str]], all_names: Sequence[str], n_heads: int,
            what: str = "names") -> list[tuple[str, Optional[int]]]:
    """Exact names or globs (with an optional ``[h]`` suffix) → ``[(name, head or None)]``, in
    forward order, without repeats. InputError for a pattern that matches nothing (with the
    closest names), a ``[h]`` on a name without heads, or h out of range."""
    if patterns is None:
        return [(n, None) for n in all_names]
    if isinstance(patterns, str):
        patterns = [patterns]
    try:
        patterns = list(patterns)
    except TypeError:
        raise InputError(f"{what} must be a string or a list of strings, got {type(patterns).__name__}") from None
    chosen: set[tuple[str, Optional[int]]] = set()
    for p in patterns:
        if not isinstance(p, str):
            raise InputError(f"{what} must be strings, got {p!r}")
        base, head = _split_head(p.strip())
        matched = [n for n in all_names if fnmatch.fnmatchcase(n, base)]
        if not matched:
            close = difflib.get_close_matches(base, all_names, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else f"; see model.hook_names ({len(all_names)} names)"
            raise InputError(f"{what}: {p!r} matches no trace name{hint}")
        if head is not None:
            bad = [n for n in matched if not _is_head_step(n)]
            if bad:
                raise InputError(f"{what}: {p!r}: a [head] suffix needs a per-head name "
                                 f"(layers.{{i}}.attn.{{{','.join(HEAD_STEPS)}}}), got {bad[0]!r}")
            if not 0 <= head < n_heads:
                raise InputError(f"{what}: {p!r}: head {head} out of range; the model has {n_heads} heads (0..{n_heads - 1})")
        chosen.update((n, head) for n in matched)
    order = {n: i for i, n in enumerate(all_names)}
    return sorted(chosen, key=lambda nh: (order[nh[0]], -1 if nh[1] is None else nh[1]))


def key(name: str, head: Optional[int]) -> str:
    return name if head is None else f"{name}[{head}]"
