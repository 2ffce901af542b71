"""DeBERTa's disentangled attention (He et al. 2021; DeBERTa-v2 and -v3 as transformers runs them).

A token is two vectors: its content (the hidden state) and its position *relative to the other
token*. Between query i and key j, with δ = bucket(i − j) the relative position (log-bucketed
beyond ``position_buckets / 2`` when ``position_buckets`` > 0, clipped to ±k, k the span)::

    scores_c2c[i, j] = q_i · k_j                    content → content  (``scores`` of every family)
    scores_c2p[i, j] = q_i · pos_k[δ + k]           content → position (pos_k = W_K' r, r the
                                                                        relative embeddings)
    scores_p2c[i, j] = k_j · pos_q[−bucket(j − i) + k]   position → content (pos_q = W_Q' r)
    scaled           = scores_c2c / √(d · n)        n = 1 + number of relative terms (3 with both)
    bias             = (scores_c2p + scores_p2c) / √(d · n)
    masked           = scaled + bias (+ −inf at padded keys);  weights = softmax(masked)

so the scores are the sum of the three terms scaled by 1/√(3d), as DeBERTa does. ``W_K'``, ``W_Q'``
are the layer's own key/query projections (``share_att_key``, DeBERTa-v3) or separate
``pos_key_proj``/``pos_query_proj`` (DeBERTa-v2). The relative embeddings ``r`` (2k, d) belong to
the stack (optionally LayerNorm'ed) and are shared by all layers; the step function
(:func:`attnscope.kernels.steps.attend`) gets ``bias`` and the scale, so the fused kernel still
runs when nothing is traced. Hook points (names relative to the attention module): ``q k v``
(B, H, L, d_head), ``pos_q``/``pos_k`` (1, H, 2k, d_head), ``scores_c2c`` (the same tensor as
``scores``), ``scores_c2p``, ``scores_p2c``, ``bias`` (B, H, L, L), then the usual steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch
from torch import nn

from ..errors import ConfigError
from ..hooks import HookPoint
from ..i18n import error
from ..kernels.steps import STEPS, ModuleHooks
from ..kernels.validate import check_token_ids, check_vocabulary
from .attention import MultiHeadAttention
from .embeddings import TermHooks
from .encoder import FeedForward, TransformerEncoder
from .encoder_variants import EncoderConfig
from .layer import RecipeLayer

Tensor = torch.Tensor

POS_ATT_TYPES = ("c2p", "p2c")


@dataclass
class DebertaConfig(EncoderConfig):
    """DeBERTa-v2/v3 settings on top of an encoder's.

    ``relative_attention``: the relative terms exist; ``max_relative_positions`` (≥ 1) the
    distances that are told apart without buckets; ``position_buckets`` (> 0: log buckets, the
    span is then this many buckets each way); ``pos_att_type``: the relative terms used ("c2p",
    "p2c"); ``share_att_key``: they use the content projections; ``norm_rel_embed``: LayerNorm on
    the relative embeddings. ``position`` is "learned" (``position_biased_input``) or "none".
    """

    relative_attention: bool = True
    max_relative_positions: int = 512
    position_buckets: int = 0
    pos_att_type: tuple = POS_ATT_TYPES
    share_att_key: bool = False
    norm_rel_embed: bool = False

    kind = "deberta"

    def validate(self) -> None:
        super().validate()
        self.pos_att_type = tuple(self.pos_att_type or ())
        bad = [t for t in self.pos_att_type if t not in POS_ATT_TYPES]
        if bad:
            raise error(ConfigError, "errors.kernel_pos_att_type", value=repr(bad[0]))
        if not isinstance(self.max_relative_positions, int) or self.max_relative_positions < 1:
            raise error(ConfigError, "errors.core_positive_int", name="config.max_relative_positions",
                        value=repr(self.max_relative_positions))

    @property
    def span(self) -> int:
        """k: relative positions run from −k to k − 1 (``2k`` relative embeddings are used)."""
        return self.position_buckets if self.position_buckets > 0 else self.max_relative_positions

    @property
    def score_terms(self) -> tuple[str, ...]:
        """The hook points of the relative terms that this model has (see the module docstring)."""
        if not self.relative_attention:
            return ()
        out = ["scores_c2c"]
        if "c2p" in self.pos_att_type:
            out += ["pos_k", "scores_c2p"]
        if "p2c" in self.pos_att_type:
            out += ["pos_q", "scores_p2c"]
        return tuple(out)

    @property
    def score_bias(self) -> bool:
        """The relative terms arrive as the step function's ``bias``."""
        return bool(self.relative_attention and self.pos_att_type)

    @property
    def query_scale(self) -> float:
        """1/√(d_head · n), n = 1 + the number of relative terms (DeBERTa's ``scale_factor``)."""
        n = 1 + (len(self.pos_att_type) if self.relative_attention else 0)
        return 1.0 / math.sqrt(self.d_head * n)


def log_bucket_position(rel: Tensor, bucket_size: int, max_position: int) -> Tensor:
    """DeBERTa's ``make_log_bucket_position``: distances inside ±bucket_size/2 kept, farther ones
    on a log scale so that ``max_position`` maps to ``bucket_size − 1``; odd in ``rel``."""
    sign = torch.sign(rel)
    mid = bucket_size // 2
    abs_pos = torch.where((rel < mid) & (rel > -mid), torch.tensor(mid - 1).type_as(rel), torch.abs(rel))
    log_pos = torch.ceil(torch.log(abs_pos / mid) / torch.log(torch.tensor((max_position - 1) / mid)) * (mid - 1)) + mid
    return torch.where(abs_pos <= mid, rel.type_as(log_pos), log_pos * sign)


def relative_positions(L: int, S: int, config: DebertaConfig, device=None) -> Tensor:
    """``bucket(i − j)`` for queries 0..L−1 and keys 0..S−1: int64 (L, S)."""
    rel = torch.arange(L, device=device)[:, None] - torch.arange(S, device=device)[None, :]  # (L, S)
    if config.position_buckets > 0:
        rel = log_bucket_position(rel, config.position_buckets, config.max_relative_positions)
    return rel.to(torch.long)


class _Hooks(ModuleHooks):
    """The module's hook points, with ``scores_c2c`` read and written as the ``scores`` step."""

    def __init__(self, module: nn.Module) -> None:
        super().__init__(module)
        self.c2c: Optional[HookPoint] = getattr(module, "scores_c2c", None)

    def active(self, step: str) -> bool:
        return super().active(step) or (step == "scores" and self.c2c is not None and self.c2c.active)

    def heads(self, step: str) -> list[int]:
        h = super().heads(step)
        return sorted(set(h) | set(self.c2c.heads)) if step == "scores" and self.c2c is not None else h

    def __call__(self, step: str, t: Tensor) -> Tensor:
        if step == "scores" and self.c2c is not None and self.c2c.hooks:
            t = self.c2c(t)
        return super().__call__(step, t)

    def heads_only(self, step: str, t: Tensor, heads: list[int]) -> None:
        if step == "scores" and self.c2c is not None:
            self.c2c.forward_heads(t, heads)
        super().heads_only(step, t, heads)


class DisentangledAttention(MultiHeadAttention):
    """Self-attention with DeBERTa's relative terms (see the module docstring)."""

    scale: float  # DeBERTa's factor is always given (config.query_scale), never the scoring's default
    # The hook points of the relative terms, made by name in __init__ (only the model's own terms).
    pos_q: HookPoint
    pos_k: HookPoint
    scores_c2c: HookPoint
    scores_c2p: HookPoint
    scores_p2c: HookPoint
    bias: HookPoint

    def __init__(self, config: DebertaConfig) -> None:
        c = config
        super().__init__(c.d_model, c.n_heads, head_dim=c.head_dim, bias=True, scale=c.query_scale,
                         dropout=c.attn_dropout)
        self.types = c.pos_att_type if c.relative_attention else ()
        self.span = c.span
        if self.types and not c.share_att_key:
            if "c2p" in self.types:
                self.pos_key_proj = nn.Linear(c.d_model, c.n_heads * self.d_head)
            if "p2c" in self.types:
                self.pos_query_proj = nn.Linear(c.d_model, c.n_heads * self.d_head)
        self.share = c.share_att_key
        # hook points again, in forward order; only those of the terms this model has
        terms = c.score_terms + (("bias",) if c.score_bias else ())
        order = ("pos_q", "pos_k", "scores_c2c", "scores_c2p", "scores_p2c", "bias")
        for name in ("q", "k", "v", *(t for t in order if t in terms), *STEPS[3:], "merged", "out"):
            self._modules.pop(name, None)
            setattr(self, name, HookPoint())


    def relative_projections(self, rel: Tensor) -> tuple[Optional[Tensor], Optional[Tensor]]:
        """``(pos_q, pos_k)`` of the relative embeddings ``rel (2k, d)``: each (1, H, 2k, d_head) or None."""
        dq = self.n_heads * self.d_head
        W, b = self.W_qkv.weight, self.W_qkv.bias
        r = rel[None]  # (1, 2k, d)
        pos_q = pos_k = None
        if "p2c" in self.types:
            lin = (lambda x: nn.functional.linear(x, W[:dq], b[:dq])) if self.share else self.pos_query_proj
            pos_q = self.pos_q(self.split_heads(lin(r)))  # (1, H, 2k, d_head)
        if "c2p" in self.types:
            lin = (lambda x: nn.functional.linear(x, W[dq:2 * dq], b[dq:2 * dq])) if self.share else self.pos_key_proj
            pos_k = self.pos_k(self.split_heads(lin(r)))  # (1, H, 2k, d_head)
        return pos_q, pos_k

    # Takes the relative embeddings and buckets where the base takes a context and an attn_mask.
    def forward(self, x: Tensor, rel: Optional[Tensor] = None, rel_pos: Optional[Tensor] = None, *,  # type: ignore[override]
                key_padding_mask: Optional[Tensor] = None, need_weights: bool = False):
        """``x (B, L, d)``, the stack's relative embeddings ``rel (2k, d)`` and buckets ``rel_pos (L, L)``
        → ``(B, L, d)`` (and the weights (B, H, L, L) with ``need_weights``)."""
        B, L, _ = x.shape
        q, k, v = self.project(x)
        q = self.split_heads(q)  # (B, H, L, d_head)
        k = self.split_heads(k)  # (B, H, L, d_head)
        v = self.split_heads(v)  # (B, H, L, d_head)
        mask = self.build_mask(B, L, L, key_padding_mask, None, x.device)
        bias = None
        if self.types:
            assert rel is not None and rel_pos is not None  # the stack passes both when there are relative terms
            pos_q, pos_k = self.relative_projections(rel)
            span = self.span
            score = 0
            if pos_k is not None:
                idx = torch.clamp(rel_pos + span, 0, 2 * span - 1)  # (L, L)
                c2p = torch.matmul(q, pos_k.transpose(-1, -2))  # (B, H, L, 2k)
                c2p = self.scores_c2p(torch.gather(c2p, -1, idx.expand(B, self.n_heads, L, L)))  # (B, H, L, L)
                score = c2p
            if pos_q is not None:
                idx = torch.clamp(-rel_pos + span, 0, 2 * span - 1)  # (L, L), indexed [key, query]
                p2c = torch.matmul(k, pos_q.transpose(-1, -2))  # (B, H, L, 2k)
                p2c = torch.gather(p2c, -1, idx.expand(B, self.n_heads, L, L)).transpose(-1, -2)  # (B, H, L, L)
                p2c = self.scores_p2c(p2c)
                score = score + p2c
            bias = self.bias(score * self.scale)  # (B, H, L, L)
        hooked = any(getattr(self, s).hooks for s in STEPS) or bool(getattr(self, "scores_c2c", None) and
                                                                     self.scores_c2c.hooks)
        return self.attend_heads(q, k, v, mask, bias=bias, need_weights=need_weights,
                                 hooks=_Hooks(self) if hooked else None)  # (B, L, d)


class DebertaLayer(RecipeLayer):
    """BERT's post-LN layer (the recipe ``config.norm`` names) around :class:`DisentangledAttention`:
    ``layer(x (B, L, d), rel, rel_pos, *, key_padding_mask=None)`` → ``(B, L, d)``, the relative
    embeddings and buckets going to the attention block."""

    def __init__(self, config: DebertaConfig) -> None:
        c = config
        super().__init__(c.norm, attn=DisentangledAttention(c), ffn=FeedForward(c), dropout=c.dropout,
                         norm=lambda: nn.LayerNorm(c.d_model, eps=c.layer_norm_eps))


class DebertaEmbeddings(TermHooks):
    """DeBERTa's embedding: ``LayerNorm(proj(token + position + segment)) · mask``.

    Token, (absolute) position and segment rows have width E = ``embedding_size`` (d_model unless
    set); ``proj`` (E → d, no bias) exists only when E ≠ d. Positions are added only with
    ``position_biased_input`` (DeBERTa-v3 has none: its positions are the relative terms).
    Padded positions are zeroed after the norm, as transformers does. Hook points ``tokens``,
    ``positions``, ``segments`` (B|1, L, E), ``projected`` (B, L, d), ``out`` (B, L, d).
    """

    def __init__(self, config: DebertaConfig) -> None:
        super().__init__()
        c = self.config = config
        E = c.embedding_size or c.d_model
        self.token_embedding = nn.Embedding(c.vocab_size, E)
        self.position_embedding = nn.Embedding(c.max_positions, E) if c.position == "learned" else None
        self.segment_embedding = nn.Embedding(c.type_vocab_size, E) if c.type_vocab_size > 0 else None
        self.proj = nn.Linear(E, c.d_model, bias=False) if E != c.d_model else None
        self.norm = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps)
        self.drop = nn.Dropout(c.dropout)
        # made in the order of the public names (TRACE_NAMES: segments, positions, out, projected),
        # which the trace names follow (named_modules order); the forward adds positions first and
        # projects before the norm that gives out
        self.add_term_hooks()
        if self.proj is not None:
            self.projected = HookPoint()

    def forward(self, input_ids: Tensor, token_type_ids: Optional[Tensor] = None,
                position_ids: Optional[Tensor] = None, attention_mask: Optional[Tensor] = None) -> Tensor:
        c = self.config
        check_token_ids(input_ids, max_positions=c.max_positions)
        L = input_ids.shape[1]
        check_vocabulary(input_ids, c.vocab_size)
        x = self.tokens(self.token_embedding(input_ids))  # (B, L, E)
        if self.position_embedding is not None:
            if position_ids is None:
                position_ids = torch.arange(L, device=input_ids.device)[None]  # (1, L)
            x = x + self.positions(self.position_embedding(position_ids))  # (B, L, E)
        if self.segment_embedding is not None:
            if token_type_ids is None:
                token_type_ids = torch.zeros_like(input_ids)
            x = x + self.segments(self.segment_embedding(token_type_ids))  # (B, L, E)
        if self.proj is not None:
            x = self.projected(self.proj(x))  # (B, L, d)
        x = self.norm(x)
        if attention_mask is not None:
            x = x * attention_mask.to(x.dtype)[..., None]  # padded positions are zero vectors
        return self.out(self.drop(x))  # (B, L, d)


class DebertaEncoder(TransformerEncoder):
    """Embeddings, the relative embeddings shared by every layer, and the :class:`DebertaLayer` s.

    ``forward_stack(input_ids, attention_mask, token_type_ids, position_ids)`` → ``(B, L, d)``. Hook
    point names are those of every encoder (``embed.out``, ``layers.{i}.attn.weights``) plus the
    relative terms of :class:`DisentangledAttention`.
    """

    config: DebertaConfig
    embed: DebertaEmbeddings  # type: ignore[assignment]  # DeBERTa's own embedding, not BERT's Embeddings

    def __init__(self, config: DebertaConfig) -> None:
        nn.Module.__init__(self)  # not TransformerEncoder's modules: DeBERTa's own
        c = self.config = config
        self.embed = DebertaEmbeddings(c)
        self.layers = nn.ModuleList(DebertaLayer(c) for _ in range(c.n_layers))
        self.ln_f = None  # no final norm (and no final_norm hook point)
        if c.relative_attention:
            self.rel_embeddings = nn.Embedding(2 * c.span, c.d_model)
            self.rel_norm = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps) if c.norm_rel_embed else None

    def relative(self, L: int, device) -> tuple[Optional[Tensor], Optional[Tensor]]:
        """``(rel (2k, d), rel_pos (L, L))`` for one pass, or (None, None) without relative attention."""
        if not self.config.relative_attention:
            return None, None
        rel = self.rel_embeddings.weight
        if self.rel_norm is not None:
            rel = self.rel_norm(rel)
        return rel[: 2 * self.config.span], relative_positions(L, L, self.config, device)

    def forward_stack(self, input_ids: Tensor, attention_mask: Optional[Tensor] = None,
               token_type_ids: Optional[Tensor] = None, position_ids: Optional[Tensor] = None) -> Tensor:
        x = self.embed(input_ids, token_type_ids, position_ids, attention_mask)  # (B, L, d)
        kpm = None
        if attention_mask is not None and not bool(attention_mask.bool().all()):
            kpm = ~attention_mask.bool()  # (B, L), True = padding
        rel, rel_pos = self.relative(x.shape[1], x.device)
        for layer in self.layers:
            x = layer(x, rel, rel_pos, key_padding_mask=kpm)  # (B, L, d)
        return x
