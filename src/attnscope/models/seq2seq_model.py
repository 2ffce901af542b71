"""A pretrained encoder–decoder model (T5, BART) with its tokenizer: trace, logits, generation.

    >>> m = attnscope.load("path/to/t5-small")
    >>> tr = m.trace("translate English to German: The house is wonderful.", "Das Haus ist wunderbar.")
    >>> tr["decoder.layers.0.cross_attn.weights"].shape      # (B, H, T, S): target rows, source columns
    >>> m.generate("translate English to German: The house is wonderful.").text

**Source and target.** The source is tokenized as the encoder reads it (T5: ``… </s>``; BART:
``<s> … </s>``). A target text is tokenized the same way (the labels a model is trained on) and the
decoder reads ``[decoder_start] + labels`` — so row t of the decoder predicts label t, and a
generated sequence traced again gives the same decoder tokens as the generation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence, Union

import torch
from torch import nn

from ..errors import InputError, shape_or_type
from ..i18n import error
from ..modules.cross_decoder import Seq2SeqCache
from ..modules.seq2seq import Seq2SeqConfig, Seq2SeqDecoder, Seq2SeqEncoder
from ..tokenizer import Batch, Tokenizer
from .base import LoadedModel, Texts, check_reduction, label_loss
from .registry import Family

Tensor = torch.Tensor


class Seq2SeqModel(LoadedModel, nn.Module):
    """A loaded T5 or BART checkpoint. Build it with :func:`attnscope.load`.

    Modules: ``shared`` (the token embedding both stacks read), ``encoder``
    (:class:`~attnscope.modules.seq2seq.Seq2SeqEncoder`), ``decoder``
    (:class:`~attnscope.modules.seq2seq.Seq2SeqDecoder`); hook point names are their paths.
    """

    config: Seq2SeqConfig
    final_logits_bias: Tensor  # (1, V), a buffer registered in __init__ when the checkpoint has one

    def __init__(self, config: Seq2SeqConfig, family: Family, *, name: str = "",
                 tokenizer: Optional[Tokenizer] = None, path: Optional[Path] = None) -> None:
        nn.Module.__init__(self)
        c = self.config = config
        self.shared = nn.Embedding(c.vocab_size, c.d_model)
        self.encoder = Seq2SeqEncoder(c, self.shared)
        self.decoder = Seq2SeqDecoder(c, self.shared)
        self._setup(family, name=name, tokenizer=tokenizer, path=path, own_head=not c.tie_embeddings)
        if c.final_logits_bias:
            self.register_buffer("final_logits_bias", torch.zeros(1, c.vocab_size))

    @property
    def input_embedding(self) -> nn.Embedding:
        return self.shared  # both stacks read it

    has_lm_head = True  # the decoder predicts next tokens
    can_generate = True  # a target for a source

    @property
    def position_limited(self) -> bool:
        """Learned positions (BART) end at ``max_positions``; T5's relative ones do not."""
        return self.config.position == "learned"

    # ------------------------------------------------------------------------------------------
    def forward(self, input_ids: Tensor, attention_mask: Optional[Tensor] = None, token_type_ids: Optional[Tensor] = None,
                *, decoder_input_ids: Optional[Tensor] = None, decoder_attention_mask: Optional[Tensor] = None) -> Tensor:
        """Source ids ``(B, S)`` and decoder ids ``(B, T)`` → the decoder's last hidden states ``(B, T, d)``.

        ``attention_mask (B, S)`` / ``decoder_attention_mask (B, T)``: 1 = real token.
        """
        if decoder_input_ids is None:
            raise error(InputError, "errors.models_needs_decoder_input")
        _check_ids("input_ids", input_ids, attention_mask)
        _check_ids("decoder_input_ids", decoder_input_ids, decoder_attention_mask)
        if decoder_input_ids.shape[0] != input_ids.shape[0]:
            raise error(InputError, "errors.models_sources_targets", n=input_ids.shape[0],
                        targets=decoder_input_ids.shape[0])
        with self.lock:
            enc = self.encoder(input_ids, attention_mask)  # (B, S, d)
            return self.decoder(decoder_input_ids, enc, source_mask=attention_mask,
                                attention_mask=decoder_attention_mask)  # (B, T, d)

    def lm_logits(self, hidden: Tensor) -> Tensor:
        """Next-token logits ``(…, vocab)`` from decoder hidden states (T5 tied: × d_model^-½ first;
        BART: + final_logits_bias)."""
        c = self.config
        logits = super().lm_logits(hidden * c.lm_scale if c.lm_scale != 1.0 else hidden)  # (…, V)
        return logits + self.final_logits_bias[0] if c.final_logits_bias else logits

    # ------------------------------------------------------------------------------------------
    def source_batch(self, source: Texts, *, truncate: bool = False) -> Batch:
        if source is None:
            raise error(InputError, "errors.models_target_needs_source")
        return self.as_batch(source, truncate=truncate)

    def target_batch(self, target: Union[str, Sequence[str]], n: int, *, truncate: bool = False
                     ) -> tuple[Tensor, Tensor, list[list[Optional[str]]]]:
        """``(decoder_input_ids (B, T), decoder_attention_mask (B, T), tokens)`` of target texts: the
        decoder-start token, then each text tokenized as a label sequence; right-padded. ``truncate``:
        a target past the decoder's positions keeps its first labels (and its closing token)."""
        if target is None:
            raise error(InputError, "errors.models_needs_target")
        if not isinstance(target, (str, list, tuple)):
            raise error(InputError, "errors.models_target_type", got=shape_or_type(target))
        targets = [target] if isinstance(target, str) else list(target)
        if len(targets) != n:
            raise error(InputError, "errors.models_source_texts_targets", n=n, targets=len(targets))
        tok = self.tokenizer
        if tok is None:  # a Batch for the source needs no tokenizer; a target text does
            raise error(InputError, "errors.models_no_tokenizer_target", name=repr(self.name))
        limit = self.config.max_positions - 1  # the start token takes one decoder position
        labels = self.encode(targets, max_length=min(limit, tok.max_length), truncate=truncate)
        start = self.config.decoder_start_token_id
        B, T = labels.input_ids.shape
        ids = torch.cat([torch.full((B, 1), start, dtype=torch.long), labels.input_ids], dim=1)  # (B, T + 1)
        mask = torch.cat([torch.ones((B, 1), dtype=torch.long), labels.attention_mask], dim=1)  # (B, T + 1)
        start_tok = tok.id_to_token(start)
        return ids, mask, [[start_tok, *t] for t in labels.tokens]

    def run(self, source: Texts, target=None, *, truncate: bool = False) -> Tensor:
        """The decoder's last hidden states ``(B, T, d)`` of source and target texts."""
        src = self.source_batch(source, truncate=truncate)
        ids, mask, _ = self.target_batch(target, len(src), truncate=truncate)
        return self(src.input_ids, src.attention_mask, decoder_input_ids=ids.to(self.device),
                    decoder_attention_mask=mask.to(self.device))

    def encoder_states(self, source: Texts, *, truncate: bool = False) -> Tensor:
        """The encoder's output ``(B, S, d)`` of source texts."""
        src = self.source_batch(source, truncate=truncate)
        with torch.no_grad(), self.lock:
            return self.encoder(src.input_ids, src.attention_mask)

    def logits(self, source: Texts, target=None, *, truncate: bool = False) -> Tensor:
        """``(B, T, vocab)``: row t predicts label t of the target (see the module docstring)."""
        return self.lm_logits(self.run(source, target, truncate=truncate))

    def loss(self, source: Texts, target=None, *, reduction: str = "mean", truncate: bool = False) -> Tensor:
        """Cross-entropy (nats per label token) of the target given the source, as
        ``…ForConditionalGeneration(labels=…)``; padded labels are ignored."""
        check_reduction(reduction)
        src = self.source_batch(source, truncate=truncate)
        ids, mask, _ = self.target_batch(target, len(src), truncate=truncate)
        ids, mask = ids.to(self.device), mask.to(self.device)
        h = self(src.input_ids, src.attention_mask, decoder_input_ids=ids[:, :-1], decoder_attention_mask=mask[:, :-1])
        return label_loss(self.lm_logits(h), ids[:, 1:], mask[:, 1:], reduction)  # logits (B, T, V)

    # ------------------------------------------------------------------------------------------
    def trace(self, source: Texts, target=None, names=None, hooks=None, *, truncate: bool = False,  # type: ignore[override]
              grad: bool = False, bwd_hooks=None):
        """Run source and target and record intermediates: a :class:`~attnscope.trace.seq2seq.Seq2SeqTrace`
        (names: ``encoder.layers.{i}.attn.*``, ``decoder.layers.{i}.self_attn.*``,
        ``decoder.layers.{i}.cross_attn.*``, …; see :mod:`attnscope.trace`)."""
        from ..trace import run_trace
        return run_trace(self, source, names=names, hooks=hooks, target=target, truncate=truncate, grad=grad,
                         bwd_hooks=bwd_hooks)

    def generate(self, source, max_new_tokens: int = 32, **kw):
        """Decode a target for ``source``; see :func:`attnscope.models.seq2seq_generation.generate`."""
        from .seq2seq_generation import generate
        return generate(self, source, max_new_tokens=max_new_tokens, **kw)

    def new_cache(self) -> Seq2SeqCache:
        return Seq2SeqCache(self.config.n_decoder_layers)

    def extra_repr(self) -> str:
        c = self.config
        return (f"name={self.name!r}, family={self.family}, encoder layers={c.n_layers}, decoder layers="
                f"{c.n_decoder_layers}, heads={c.n_heads}, d_model={c.d_model}")


def _check_ids(name: str, ids, mask) -> None:
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or ids.is_floating_point():
        raise error(InputError, "errors.models_ids_tensor", name=name, got=shape_or_type(ids))
    if mask is not None and (not isinstance(mask, torch.Tensor) or mask.shape != ids.shape):
        raise error(InputError, "errors.models_mask_of", name=name, shape=tuple(ids.shape), got=shape_or_type(mask))
