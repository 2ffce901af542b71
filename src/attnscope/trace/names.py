"""The public names of a model's intermediates (:data:`TRACE_NAMES`) and how patterns resolve.

A pattern is an exact name or a glob, optionally with a ``[h]`` suffix that selects head h of a
per-head step (see the table in :mod:`attnscope.trace`).
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from typing import Iterable, Optional, Sequence, Union, cast

from ..config import DecoderConfig, TransformerConfig
from ..errors import InputError

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

#: Names that only DeBERTa-v2 has (``bias`` is DeBERTa's and T5's).
DEBERTA_ONLY: tuple[str, ...] = ("attn.pos_q", "attn.pos_k", "attn.scores_c2c", "attn.scores_c2p", "attn.scores_p2c")

#: Per-head steps whose head axis counts key/value heads (n_kv_heads): ``name[h]`` takes a *query*
#: head h and gives the k/v head it reads, ``h // (n_heads / n_kv_heads)``.
KV_STEPS: tuple[str, ...] = ("k_proj", "k_normed", "k", "v")

#: Names that only decoders of the Llama kind have (which of them fire: :func:`fires`).
DECODER_ONLY: tuple[str, ...] = ("attn.q_proj", "attn.k_proj", "attn.q_normed", "attn.k_normed", "attn.mask",
                                 "attn_post_norm", "ffn.gate", "ffn_post_norm")

_HEAD_SUFFIX = re.compile(r"^(.*)\[(\d+)\]$")

def fires(template: str, config: TransformerConfig) -> bool:
    """Does the name ``template`` (a :data:`TRACE_NAMES` entry) exist in a model with ``config``?

    Left out: ``embed.segments`` without segment embeddings (GPT-2, decoders), ``embed.positions``
    without a position embedding (none, or rotary positions that act on q and k), ``final_norm``
    without a final norm (BERT, RoBERTa); the decoder steps in encoders; ``q_normed``/``k_normed``
    without QK-norm, and ``attn_post_norm``/``ffn_post_norm`` without Gemma's sandwich norms;
    ``embed.projected`` without factorised embeddings (ALBERT, ELECTRA, DeBERTa with E ≠ d); the
    relative terms outside DeBERTa (only those of its ``pos_att_type``) and ``attn.bias`` in
    families without an additive score term (all but DeBERTa and T5).
    """
    decoder = getattr(config, "kind", "") == "decoder"
    step = template.split("{i}.")[-1]
    if step in DEBERTA_ONLY:
        return step.split(".")[-1] in getattr(config, "score_terms", ())
    if step == "attn.bias":
        return bool(getattr(config, "score_bias", False))
    if template == "embed.projected":
        return bool(getattr(config, "factorised", False))
    if step in DECODER_ONLY:
        if not decoder:
            return False
        dc = cast(DecoderConfig, config)  # the kind "decoder" is DecoderConfig's
        if step in ("attn.q_normed", "attn.k_normed"):
            return bool(dc.qk_norm)
        if step in ("attn_post_norm", "ffn_post_norm"):
            return step in dc.recipe.points  # the recipe has the norm on the block's output
        return True
    if template == "embed.segments":
        return config.type_vocab_size > 0
    if template == "embed.positions":
        return config.position not in ("none", "rotary")
    if template == "final_norm":
        return bool(config.final_norm)
    return True


def expand_names(config: TransformerConfig) -> list[str]:
    """Every concrete name for a model with ``config``, in forward order; only names that fire
    for this architecture (see :func:`fires`)."""
    if getattr(config, "kind", "") == "seq2seq":
        return _seq2seq_names(config)
    out = [t for t in TRACE_NAMES if "{i}" not in t and fires(t, config)]
    layer_templates = [t for t in TRACE_NAMES if "{i}" in t and fires(t, config)]
    head = [n for n in out if n.startswith("embed.")]
    tail = [n for n in out if n not in head]
    return head + [t.format(i=i) for i in range(config.n_layers) for t in layer_templates] + tail


def _seq2seq_names(config) -> list[str]:
    """:data:`SEQ2SEQ_NAMES` for an encoder–decoder config: each stack's layers, only names that fire
    (no positions, final norms or bias without them; ``ffn.gate`` only in a gated FFN)."""
    def fires_here(t: str) -> bool:
        step = t.split("{i}.")[-1] if "{i}" in t else t.split(".", 1)[1]
        if step == "embed.positions":
            return config.position == "learned"
        if step == "final_norm":
            return bool(config.final_norm)
        if step.endswith(".bias"):
            return bool(config.score_bias)
        if step == "ffn.gate":
            return bool(config.gated_ffn)
        return True

    out = []
    for stack, n in (("encoder", config.n_layers), ("decoder", config.n_decoder_layers)):
        ts = [t for t in SEQ2SEQ_NAMES if t.startswith(stack + ".") and fires_here(t)]
        out += [t for t in ts if "{i}" not in t and not t.endswith("final_norm")]
        out += [t.format(i=i) for i in range(n) for t in ts if "{i}" in t]
        out += [t for t in ts if t.endswith("final_norm")]
    return out


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
