"""Encoder–decoder stacks (T5, BART): a config, the embeddings and the two stacks.

The encoder reads the source ``(B, S)``; the decoder reads the target ``(B, T)`` (its first token
is the decoder-start token) causally and, in every layer, attends over the encoder's output
(cross-attention; see :mod:`attnscope.modules.cross_decoder`). Hook point names are the module
paths: ``encoder.embed.out``, ``encoder.layers.{i}.attn.weights``,
``decoder.layers.{i}.self_attn.weights``, ``decoder.layers.{i}.cross_attn.weights``,
``decoder.final_norm`` (T5).

Positions: a learned score bias (``acts_on="bias"`` without a fixed term: T5's relative bias,
:mod:`attnscope.modules.t5_bias`, position ``t5_relative``), built by its scheme per stack
(``build(config, causal=)``), computed once and added in every layer, or BART's learned table read at
``position + 2`` (``position="learned"``, ``position_offset=2``; the first two rows are unused, a
leftover of fairseq's padding-aware numbering).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import torch
from torch import nn

from ..config import TransformerConfig
from ..errors import ConfigError, InputError
from ..hooks import HookPoint
from ..i18n import error
from ..kernels.validate import check_token_ids, check_vocabulary
from ..positions import get_position
from . import t5_bias  # noqa: F401  (registers t5_relative)
from .cross_decoder import DecoderBlock, EncoderBlock, Seq2SeqCache, make_norm
from .decoder import TransformerDecoder
from .embeddings import TermHooks

Tensor = torch.Tensor

NORM_KINDS = ("layer", "rms")


@dataclass
class Seq2SeqConfig(TransformerConfig):
    """An encoder–decoder Transformer. The base fields describe both stacks (``n_layers`` is the
    encoder's); what they add:

    ``n_decoder_layers``; ``norm_kind`` "rms" (T5) or "layer" (BART); ``gated_ffn`` (T5 v1.1's
    gated-gelu); ``embed_scale`` (BART's scale_embedding: √d); ``relative_buckets`` and
    ``relative_max_distance`` (T5); ``tie_embeddings`` (the logits use the shared embedding);
    ``lm_scale`` (T5 with tied embeddings multiplies the last hidden state by d_model^-½);
    ``final_logits_bias`` (BART adds a (vocab,) bias to the logits); ``decoder_start_token_id``,
    ``bos_token_id``, ``eos_token_ids``; ``generation``: the checkpoint's generation settings.
    """

    n_decoder_layers: int = 6
    norm_kind: str = "layer"
    gated_ffn: bool = False
    embed_scale: float = 1.0
    relative_buckets: int = 32
    relative_max_distance: int = 128
    tie_embeddings: bool = True
    lm_scale: float = 1.0
    final_logits_bias: bool = False
    decoder_start_token_id: int = 0
    bos_token_id: Optional[int] = None
    eos_token_ids: list = field(default_factory=list)
    generation: dict = field(default_factory=dict)

    kind = "seq2seq"

    def validate(self) -> None:
        super().validate()
        if not isinstance(self.n_decoder_layers, int) or self.n_decoder_layers <= 0:
            raise error(ConfigError, "errors.core_positive_int", name="config.n_decoder_layers",
                        value=repr(self.n_decoder_layers))
        if self.norm_kind not in NORM_KINDS:
            raise error(ConfigError, "errors.kernel_norm_kind", choices=", ".join(NORM_KINDS), value=repr(self.norm_kind))
        n, far = self.relative_buckets, self.relative_max_distance
        if self.position == "t5_relative" and not (isinstance(n, int) and isinstance(far, int) and n >= 4 and far > n // 2):
            # the encoder's half of the buckets needs an exact one (n ≥ 4), the log span a positive length
            raise error(ConfigError, "errors.kernel_t5_buckets", buckets=repr(n), max_distance=repr(far))

    @property
    def mlp_bias(self) -> bool:  # what GatedFeedForward reads
        return self.bias


class Seq2SeqEmbeddings(TermHooks):
    """ids ``(B, L)`` → ``(B, L, d)``: ``tokens`` (the shared rows), ``positions`` (BART: the learned
    rows of positions ``past … past + L − 1``, read at + 2), ``out`` = norm(tokens · scale + positions)
    (BART's layernorm_embedding; T5: the rows themselves)."""

    def __init__(self, config: Seq2SeqConfig, token_embedding: nn.Embedding) -> None:
        super().__init__()
        c = self.config = config
        self.token_embedding = token_embedding
        self.segment_embedding = None  # no segments
        learned = c.position == "learned"
        self.position_embedding = nn.Embedding(c.max_positions + c.position_offset, c.d_model) if learned else None
        self.norm = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps) if c.embed_norm else None
        self.drop = nn.Dropout(c.dropout)
        self.add_term_hooks()  # tokens, positions (BART), out

    def forward(self, input_ids: Tensor, past: int = 0) -> Tensor:
        c = self.config
        check_token_ids(input_ids, "token ids")
        L = input_ids.shape[1]
        if self.position_embedding is not None and past + L > c.max_positions:
            raise error(InputError, "errors.kernel_seq2seq_positions", n=past + L, limit=c.max_positions)
        check_vocabulary(input_ids, c.vocab_size)
        x = self.tokens(self.token_embedding(input_ids))  # (B, L, d)
        if c.embed_scale != 1.0:
            x = x * c.embed_scale
        if self.position_embedding is not None:
            pos = torch.arange(past, past + L, device=input_ids.device)[None] + c.position_offset  # (1, L)
            x = x + self.positions(self.position_embedding(pos))  # (B, L, d)
        if self.norm is not None:
            x = self.norm(x)
        return self.out(self.drop(x))  # (B, L, d)


class Seq2SeqStack(nn.Module):
    """One stack's modules in forward order: embeddings, blocks, the position scheme's learned score
    bias (T5's; ``rel_bias``), the final norm (T5). A subclass names its ``block`` class and whether
    it is the (causal) decoder."""

    rel_bias: nn.Module  # made in __init__ when the position scheme is a learned bias
    block: type
    causal: bool

    def __init__(self, config: Seq2SeqConfig, token_embedding: nn.Embedding) -> None:
        super().__init__()
        c = self.config = config
        self.embed = Seq2SeqEmbeddings(c, token_embedding)
        n_layers = c.n_decoder_layers if self.causal else c.n_layers
        self.layers = nn.ModuleList(self.block(c, i) for i in range(n_layers))
        if c.score_bias:  # a learned bias scheme: build(config, causal=) → this stack's table
            self.rel_bias = get_position(c.position).build(c, causal=self.causal)  # type: ignore[call-arg,assignment]
        self.ln_f = make_norm(c) if c.final_norm else None
        if self.ln_f is not None:
            self.final_norm = HookPoint()

    def finish(self, x: Tensor) -> Tensor:  # (B, L, d), after the final norm where there is one
        return x if self.ln_f is None else self.final_norm(self.ln_f(x))


class Seq2SeqEncoder(Seq2SeqStack):
    """The encoder stack: source ids ``(B, S)`` → ``(B, S, d)`` (after ``final_norm`` in T5)."""

    block, causal = EncoderBlock, False

    def forward(self, input_ids: Tensor, attention_mask: Optional[Tensor] = None) -> Tensor:
        x = self.embed(input_ids)  # (B, S, d)
        S = x.shape[1]
        bias = self.rel_bias(S, S) if self.config.score_bias else None  # (1, H, S, S), shared by the layers
        mask = key_mask(attention_mask)
        for layer in self.layers:
            x = layer(x, bias=bias, mask=mask)  # (B, S, d)
        return self.finish(x)


class Seq2SeqDecoder(Seq2SeqStack):
    """The decoder stack: target ids ``(B, T)`` over the encoder output → ``(B, T, d)``."""

    block, causal = DecoderBlock, True

    def forward(self, input_ids: Tensor, source: Tensor, *, source_mask: Optional[Tensor] = None,
                attention_mask: Optional[Tensor] = None, cache: Optional[Seq2SeqCache] = None,
                need_weights: bool = False):
        """``input_ids (B, T)`` after ``cache.length`` cached positions, over ``source (B, S, d)``.

        ``source_mask (B, S)``: 1 = real source token; ``attention_mask (B, T)``: 1 = real target
        token (a batch of targets of different lengths, without a cache). Returns ``(B, T, d)``,
        and with ``need_weights`` also the lists of self- and cross-attention weights per layer.
        """
        past = cache.length if cache is not None else 0
        B, T = input_ids.shape
        x = self.embed(input_ids, past)  # (B, T, d)
        S = past + T
        bias = self.rel_bias(T, S, past) if self.config.score_bias else None  # (1, H, T, S)
        if cache is not None and attention_mask is not None and not bool(attention_mask.bool().all()):
            raise error(InputError, "errors.kernel_seq2seq_padded_step")
        # causal, padded target keys hidden (a padded query still sees itself), as the decoders' stacks
        mask, causal = TransformerDecoder.mask_for(None, B, T, past, attention_mask, x.device)
        smask = key_mask(source_mask)
        ws, wc = [], []
        for layer in self.layers:
            x = layer(x, source, bias=bias, mask=mask, causal=causal, source_mask=smask, cache=cache,
                      need_weights=need_weights)
            if need_weights:
                x, a, b = x
                ws.append(a)
                wc.append(b)
        if cache is not None:
            cache.advance(T)
        x = self.finish(x)
        return (x, ws, wc) if need_weights else x


def key_mask(attention_mask: Optional[Tensor]) -> Optional[Tensor]:
    """``(B, S)`` 1 = real → bool ``(B, 1, 1, S)`` True = may attend, or None when nothing is padded."""
    if attention_mask is None or bool(attention_mask.bool().all()):
        return None
    return attention_mask.bool()[:, None, None, :]
