"""Decoder heads: attention sinks, previous-token, duplicate-token and induction heads.

Four per-head scores of causal language models, each a mean of attention weights (a fraction in
[0, 1]), computed as streaming sums like :mod:`.stats`:

==============  ==============================================================  ==========================
score           value of one query i                                            measured on
==============  ==============================================================  ==========================
``sink``        ``w_{i,0}``: the weight on the text's first token, queries       the corpus (i ≥ 1)
                i ≥ 1 (query 0 can see nothing else)
``prev_token``  ``w_{i,i-1}``, queries i ≥ 1                                     repeated random tokens
``duplicate``   ``w_{i,i-T}``: the earlier occurrence of the query's own         repeated random tokens
                token, queries of the second copy
``induction``   ``w_{i,i-T+1}``: the token *after* the earlier occurrence        repeated random tokens
                (what an induction head copies), queries of the second copy
==============  ==============================================================  ==========================

Repeated random tokens (Olsson et al. 2022, "In-context Learning and Induction Heads"; the
detectors of TransformerLens): a sequence ``r_0 … r_{T-1}`` of T *distinct* random tokens of the
model's vocabulary (special tokens excluded), written twice, after the special tokens the
tokenizer puts in front of every text (Gemma's ``<bos>``; none for GPT-2 and SmolLM2), P of them::

    position   0 … P-1 | P … P+T-1 | P+T … P+2T-1
    token      prefix  | r_0 … r_{T-1} | r_0 … r_{T-1}

A query at ``i = P+T+t`` (token ``r_t`` of the second copy) has its earlier occurrence at
``i - T`` and the token that followed it at ``i - T + 1``. On random tokens nothing but the
repetition predicts the next token, so a head that attends there does so by the induction
mechanism, not by meaning. The tokens of one sequence are distinct so that the earlier occurrence
is unique. Sequences are drawn with a seed, so a run can be repeated exactly.

A head gets a *role* (:func:`decoder_roles`) for each score at or above its threshold
(:class:`.classify.Thresholds`: ``induction``, ``duplicate``, ``prev_token``, ``sink``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Mapping, Optional

import numpy as np
import torch

from ..errors import ConfigError, InputError, ShapeError, fmt_shape, shape_or_type
from ..i18n import Msg, error
from .stats import BatchContext, attention_sums

Tensor = torch.Tensor

#: The decoder scores, in the order of every table.
DECODER_STATS = ("sink", "prev_token", "duplicate", "induction")

#: Scores measured on the repeated random sequences (the rest on the corpus).
REPEAT_STATS = ("prev_token", "duplicate", "induction")

DECODER_DOCS = {
    "sink": "attention sink: fraction of attention on the first token (corpus, queries i ≥ 1)",
    "prev_token": "fraction of attention on the previous token (repeated random tokens)",
    "duplicate": "fraction of attention on the earlier occurrence of the same token (repeated random tokens)",
    "induction": "fraction of attention on the token after the earlier occurrence (repeated random tokens)",
}

#: role -> the score its rule reads (the threshold has the score's name).
ROLE_STAT = {"induction": "induction", "duplicate": "duplicate", "previous-token": "prev_token", "sink": "sink"}

#: Default length T of the random sequence (each text is P + 2T tokens), as in TransformerLens' demos.
DEFAULT_LENGTH = 50


@torch.no_grad()
def sink_sums(weights: Tensor, context: BatchContext) -> dict[str, tuple[Tensor, Tensor]]:
    """``{"sink": (sum (H,), count (H,))}`` of one right-padded batch: Σ ``w_{i,0}`` over the
    queries that :mod:`.stats` counts (real tokens; special ones unless left out) with i ≥ 1."""
    B, H, L, S = weights.shape
    if (B, L) != (context.B, context.L) or S != L:
        raise error(ShapeError, "errors.analysis_weights_batch", B=context.B, L=context.L,
                    got=fmt_shape(weights.shape))
    query = context.counted_queries("entropy").clone()  # (B, L): the counted queries
    query[:, 0] = False  # query 0 sees only itself
    first = weights[..., 0].double()  # (B, H, L)
    s = torch.where(query[:, None], first, 0.0).sum(dim=(0, 2))  # (H,); where(): padding rows may be NaN
    return {"sink": (s, query.sum().double().expand(H))}


def causal_attention_sums(weights: Tensor, context: BatchContext) -> dict[str, tuple[Tensor, Tensor]]:
    """:func:`.stats.attention_sums` and :func:`sink_sums` of one batch (the corpus pass of a causal model)."""
    context = context.on(weights.device)  # a layer on another device than the embeddings (device_map)
    out = attention_sums(weights, context=context)
    out.update(sink_sums(weights, context))
    return out


@torch.no_grad()
def repeat_sums(weights: Tensor, period: int, prefix: int = 0) -> dict[str, tuple[Tensor, Tensor]]:
    """``{prev_token, duplicate, induction: (sum (H,), count (H,))}`` of a batch of repeated sequences.

    Args:
        weights: ``(B, H, L, L)`` with ``L = prefix + 2·period``: every text laid out as in the
            module docstring (no padding).
        period: T, the length of one copy (≥ 2, so that the induction key differs from the query).
        prefix: P, tokens before the first copy.
    Returns:
        float64 sums over texts and queries; the counts are ``B·(L-1)`` for ``prev_token`` and
        ``B·T`` for the other two.
    """
    if not isinstance(weights, Tensor) or weights.dim() != 4 or weights.shape[-1] != weights.shape[-2]:
        raise error(ShapeError, "errors.analysis_weights_self", got=shape_or_type(weights))
    T, P = int(period), int(prefix)
    if T < 2 or P < 0:
        raise error(ConfigError, "errors.analysis_repeat_period", period=T, prefix=P)
    B, H, L, _ = weights.shape
    if L != P + 2 * T:
        raise error(ShapeError, "errors.analysis_repeat_length", want=P + 2 * T, L=L)
    w = weights.double()
    prev = w.diagonal(-1, -2, -1)  # (B, H, L-1): w[i, i-1], i = 1..L-1
    dup = w.diagonal(-T, -2, -1)[..., P:]  # (B, H, T): w[i, i-T], i = P+T..L-1
    ind = w.diagonal(-(T - 1), -2, -1)[..., P + 1:]  # (B, H, T): w[i, i-T+1], i = P+T..L-1
    n = lambda k: torch.full((H,), float(B * k), dtype=torch.float64, device=w.device)  # noqa: E731
    return {"prev_token": (prev.sum(dim=(0, 2)), n(L - 1)), "duplicate": (dup.sum(dim=(0, 2)), n(T)),
            "induction": (ind.sum(dim=(0, 2)), n(T))}


# ----------------------------------------------------------------------------------------------
# the random sequences

def candidate_ids(tokenizer, config=None) -> Tensor:
    """The token ids random sequences are drawn from: every id of the tokenizer's vocabulary below
    the model's ``config.vocab_size`` (embedding rows), except special tokens (int64, sorted).

    Special are the tokenizer's special added tokens and the ids the config names (padding, BOS,
    EOS): a GPT-2 ``vocab.json`` registers ``<|endoftext|>`` as nothing but its EOS id.
    """
    backend = tokenizer.backend
    n = tokenizer.vocab_size if config is None else min(tokenizer.vocab_size, int(config.vocab_size))
    keep = torch.ones(n, dtype=torch.bool)
    special = {i for i, t in backend.get_added_tokens_decoder().items() if t.special}
    if config is not None:
        named = [getattr(config, k, None) for k in ("pad_token_id", "bos_token_id", "eos_token_id")]
        special.update(i for i in [*named, *(getattr(config, "eos_token_ids", None) or [])] if isinstance(i, int))
    for i in special:
        if 0 <= i < n:
            keep[i] = False
    known = torch.zeros(n, dtype=torch.bool)  # ids that are holes in the vocabulary are left out too
    for i in backend.get_vocab(with_added_tokens=True).values():
        if i < n:
            known[i] = True
    return (keep & known).nonzero().flatten()


def leading_specials(tokenizer) -> list[int]:
    """Ids of the special tokens the tokenizer puts before every text (``[<bos>]`` for Gemma, ``[]``
    for GPT-2 and SmolLM2): the prefix of the repeated sequences, so that they start as texts do."""
    e = tokenizer.backend.encode("a")
    out = []
    for i, special in zip(e.ids, e.special_tokens_mask):
        if not special:
            break
        out.append(int(i))
    return out


@dataclass
class RepeatSettings:
    """How the repeated random sequences were made (reported with the scores)."""

    sequences: int
    length: int            # T, tokens of one copy
    seed: int
    prefix: list           # the prefix ids (P = len(prefix))
    prefix_tokens: list    # their strings
    candidates: int        # size of the vocabulary they were drawn from
    capped: bool = False   # T was lowered from the default to fit the model's positions

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def repeat_settings(model, sequences: int, length: Optional[int], seed: int, max_length: int,
                    flag: bool = False) -> RepeatSettings:
    """Check and complete the settings: ``length`` None = :data:`DEFAULT_LENGTH`, lowered to fit
    ``max_length`` positions (and said so); an explicit length that does not fit is a ConfigError
    naming the limit (``flag``: the user's --max-length, else the model's positions)."""
    tok = model.tokenizer
    if tok is None:
        raise error(InputError, "errors.analysis_induction_tokenizer")
    prefix = leading_specials(tok)
    P = len(prefix)
    room = (max_length - P) // 2
    capped = False
    limit = Msg("errors.analysis_induction_limit_" + ("flag" if flag else "model"), max_length=max_length)
    if room < 2:  # not even 2 tokens twice after the prefix (a room of -1 was reported past a long prefix)
        raise error(ConfigError, "errors.analysis_induction_no_room", need=P + 4, P=P, limit=limit)
    if length is None:
        length, capped = min(DEFAULT_LENGTH, room), room < DEFAULT_LENGTH
    if P + 2 * length > max_length:
        raise error(ConfigError, "errors.analysis_induction_long", length=length, P=P, total=P + 2 * length,
                    limit=limit, room=room)
    cand = candidate_ids(tok, model.config)
    if len(cand) < length:
        raise error(ConfigError, "errors.analysis_induction_vocab", length=length, n=len(cand))
    return RepeatSettings(sequences, length, seed, prefix, [tok.id_to_token(i) for i in prefix], len(cand), capped)


def repeated_tokens(candidates: Tensor, n: int, length: int, seed: int, prefix=(), start: int = 0) -> Tensor:
    """``(n, P + 2·length)`` int64, rows ``start … start+n-1`` of the sequences of ``seed``: each
    the prefix, then ``length`` distinct ids drawn from ``candidates`` (uniformly, without
    replacement), then the same ids again. Row k depends only on ``seed`` and k, so any rows can be
    made alone (what a distributed run does)."""
    rows = []
    pre = torch.as_tensor(list(prefix), dtype=torch.long)
    for k in range(start, start + n):
        g = torch.Generator().manual_seed(int(seed) * 1_000_003 + k)
        r = candidates[torch.randperm(len(candidates), generator=g)[:length]]  # (T,)
        rows.append(torch.cat([pre, r, r]))
    return torch.stack(rows) if rows else torch.zeros(0, len(pre) + 2 * length, dtype=torch.long)


def repeat_batches(settings: RepeatSettings, candidates: Tensor, batch_size: int, rank: int = 0,
                   world: int = 1) -> Iterator[Tensor]:
    """The batches of ids of this process (batch k on process k % world), made on demand."""
    starts = list(range(0, settings.sequences, batch_size))[rank::world]
    for s in starts:
        n = min(batch_size, settings.sequences - s)
        yield repeated_tokens(candidates, n, settings.length, settings.seed, settings.prefix, start=s)


# ----------------------------------------------------------------------------------------------

@torch.no_grad()
def run_repeat_pass(model, acc, settings: RepeatSettings, batch_size: int, *, rank: int = 0, world: int = 1,
                    progress: bool = False) -> None:
    """Trace this process's batches of repeated random tokens and add their :func:`repeat_sums`
    into ``acc`` (a :class:`.accumulate.StatsAccumulator` with the :data:`REPEAT_STATS`)."""
    import sys

    from tqdm.auto import tqdm

    from ..tokenizer import Batch

    cand = candidate_ids(model.tokenizer, model.config)
    T, P = settings.length, len(settings.prefix)
    mine = sum(min(batch_size, settings.sequences - s)
               for s in range(rank * batch_size, settings.sequences, world * batch_size))

    def on_weights(w: Tensor, name: str) -> None:
        acc.add(int(name.split(".")[1]), repeat_sums(w, T, P))

    with tqdm(total=mine, unit="seq", desc="induction", disable=not progress, file=sys.stderr,
              dynamic_ncols=True) as bar:
        for ids in repeat_batches(settings, cand, batch_size, rank, world):
            ids = ids.to(model.device)
            tokens = [[model.tokenizer.id_to_token(int(i)) for i in row] for row in ids.tolist()]
            batch = Batch(ids, torch.ones_like(ids), torch.zeros_like(ids), tokens, [""] * len(ids))
            model.trace(batch, names=[], hooks={"layers.*.attn.weights": on_weights})
            acc.count(repeat_texts=len(ids))
            bar.update(len(ids))


def decoder_roles(means: Mapping[str, np.ndarray], thresholds) -> np.ndarray:
    """``(n_layers, n_heads)`` strings: the roles of each head joined by ``+`` (``"induction"``,
    ``"previous-token+sink"``; ``""`` for none), a role for each score ≥ its threshold. A NaN score
    (a pass that did not run) gives no role."""
    shape = np.shape(means["sink"])
    roles = np.full(shape, "", dtype=object)
    for role, stat in ROLE_STAT.items():
        v = np.nan_to_num(np.asarray(means.get(stat, np.full(shape, np.nan)), dtype=float), nan=-np.inf)
        hit = v >= getattr(thresholds, stat)
        roles[hit] = np.where(roles[hit] == "", role, roles[hit] + "+" + role)
    return roles.astype(str)
