"""A pretrained encoder-style Transformer (BERT, RoBERTa, GPT-2) on attnscope's own modules.

``Model`` is a :class:`~attnscope.modules.TransformerEncoder` (so its hook-point names are the
module paths: ``embed.out``, ``layers.3.attn.weights``, …) plus what a checkpoint brings
(:class:`~attnscope.models.base.LoadedModel`: the tokenizer, tracing, the language-model head of
GPT-2) and what only these families have: the family's position numbering (RoBERTa) and the
sentence-embedding pooling of sentence-transformers models. The causal language models among them
(GPT-2, BLOOM) :meth:`Model.generate` with a key/value cache, as the decoders of the Llama kind
(:class:`~attnscope.models.DecoderModel`) do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import torch
import torch.nn.functional as F

from ..config import TransformerConfig
from ..errors import InputError
from ..i18n import error
from ..modules import TransformerEncoder
from ..modules.kv_cache import KVCache
from ..tokenizer import Tokenizer
from .base import LoadedModel, Texts, check_mask
from .generation import Generation, generate
from .registry import Family

Tensor = torch.Tensor


class Model(LoadedModel, TransformerEncoder):
    """A loaded checkpoint. Build it with :func:`attnscope.load`.

    Attributes (besides :class:`~attnscope.models.base.LoadedModel`'s; ``family`` "bert", "roberta",
    "gpt2", …; ``unused_weights`` here: the pooler, task heads, buffers):
        pooling: how :meth:`sentence_embedding` pools tokens ("mean", "cls" or "max").
        normalize: whether :meth:`sentence_embedding` L2-normalises (sentence-transformers'
            ``Normalize`` module is in the folder's ``modules.json``).
    """

    def __init__(self, config: TransformerConfig, family: Family, *, name: str = "",
                 tokenizer: Optional[Tokenizer] = None, path: Optional[Path] = None,
                 pooling: str = "mean", normalize: bool = False) -> None:
        super().__init__(config)
        self.pooling = pooling
        self.normalize = normalize
        self._setup(family, name=name, tokenizer=tokenizer, path=path)

    def position_ids(self, input_ids: Tensor) -> Optional[Tensor]:
        """(B, L) position ids for families that number positions themselves (RoBERTa), else None."""
        fn = self._family.position_ids
        return None if fn is None else fn(input_ids, self.config)

    # ------------------------------------------------------------------------------------------
    # The loaded model's call takes the masks positionally (as transformers' models do) and no
    # per-call causality: not a drop-in TransformerEncoder.forward.
    def forward(self, input_ids: Tensor, attention_mask: Optional[Tensor] = None,  # type: ignore[override]
                token_type_ids: Optional[Tensor] = None, position_ids: Optional[Tensor] = None) -> Tensor:
        """Token ids ``(B, L)`` → last hidden states ``(B, L, d_model)`` (after ``ln_f`` in GPT-2).

        ``attention_mask (B, L)``: 1/True = real token, 0/False = padding (keys at padded
        positions are masked; the hidden states *at* padded positions are computed but meaningless).
        """
        if position_ids is None:
            position_ids = self.position_ids(input_ids)
        check_mask(input_ids, attention_mask)
        kpm = None
        if attention_mask is not None and not bool(attention_mask.bool().all()):  # no padding: no mask, the fastest kernels
            kpm = ~attention_mask.bool()  # (B, L), True = padding
        with self.lock:
            x = self.embed(input_ids, token_type_ids, position_ids)  # (B, L, d)
            return super(TransformerEncoder, self).forward(x, key_padding_mask=kpm)  # (B, L, d)

    # ------------------------------------------------------------------------------------------
    def decode(self, input_ids: Tensor, *, cache: Optional[KVCache] = None, need_weights: bool = False):
        """The causal stack (GPT-2, BLOOM) on ``input_ids (B, L)`` that follow ``cache.length`` cached
        positions, as :func:`~attnscope.models.generation.generate` runs it: the hidden states after
        the final norm ``(B, L, d)``, and with ``need_weights`` the list of every layer's weights
        ``(B, H, L, S)``. Learned positions (GPT-2) go on from the cache; ALiBi (BLOOM) counts the
        keys from the cache's start. No padding: every position is a real token."""
        past = cache.length if cache is not None else 0
        self.check_context(input_ids, past)
        L = input_ids.shape[1]
        position_ids = None
        if self.embed.position_embedding is not None:
            offset = past + self.config.position_offset
            position_ids = torch.arange(offset, offset + L, device=input_ids.device)[None]  # (1, L)
        with self.lock:
            x = self.embed(input_ids, None, position_ids)  # (B, L, d)
            return super(TransformerEncoder, self).forward(x, cache=cache, need_weights=need_weights)  # (B, L, d)

    def generate(self, prompt, max_new_tokens: int = 32, **kw) -> Generation:
        """Continue ``prompt`` (a causal language model: GPT-2, BLOOM) with a key/value cache; see
        :func:`attnscope.models.generation.generate` for the options. InputError for the other
        families (BERT, RoBERTa, …), which predict no next token."""
        if not self.can_generate:
            raise error(InputError, "errors.models_cannot_generate", name=repr(self.name), family=self.family)
        return generate(self, prompt, max_new_tokens=max_new_tokens, **kw)

    # ------------------------------------------------------------------------------------------
    def pool(self, hidden: Tensor, attention_mask: Tensor) -> Tensor:
        """Pool ``hidden (B, L, d)`` over real tokens into ``(B, d)`` with :attr:`pooling`."""
        if attention_mask is None:  # the mask says which tokens are real: required here
            raise error(InputError, "errors.models_mask_shape", shape=tuple(hidden.shape[:2]), got="None")
        check_mask(hidden[..., 0], attention_mask)  # (B, L) both, else torch's broadcasting error
        m = attention_mask.to(hidden.device, hidden.dtype).unsqueeze(-1)  # (B, L, 1); device_map: to the head's device
        if self.pooling == "cls":
            return hidden[:, 0]  # (B, d)
        if self.pooling == "max":
            return hidden.masked_fill(m == 0, float("-inf")).amax(dim=1)  # (B, d)
        # sentence-transformers' mean pooling: sum over real tokens / their count
        return (hidden * m).sum(dim=1) / m.sum(dim=1).clamp(min=1e-9)  # (B, d)

    def sentence_embedding(self, texts: Texts, *, normalize: Optional[bool] = None,
                           truncate: bool = False) -> Tensor:
        """One vector per text, ``(B, d_model)``: pooled last hidden states, as sentence-transformers.

        For all-MiniLM-L6-v2: mean over real tokens, then L2-normalised (``normalize`` defaults
        to :attr:`normalize`, read from the folder's ``modules.json``). sentence-transformers cuts
        texts at 256 tokens (``max_seq_length``); attnscope uses the model's 512 positions and
        raises on longer text unless ``truncate=True``.
        """
        batch = self.as_batch(texts, truncate=truncate)
        hidden = self(batch.input_ids, batch.attention_mask, batch.token_type_ids)  # (B, L, d)
        pooled = self.pool(hidden, batch.attention_mask)  # (B, d)
        if self.normalize if normalize is None else normalize:
            pooled = F.normalize(pooled, p=2, dim=-1)
        return pooled
