"""A pretrained Transformer on attnscope's own modules, with its tokenizer.

``Model`` is a :class:`~attnscope.modules.TransformerEncoder` (so its hook-point names are the
module paths: ``embed.out``, ``layers.3.attn.weights``, …) plus what a checkpoint brings: the
tokenizer, the family's position numbering, the sentence-embedding pooling of sentence-transformers
models and, for GPT-2, the tied language-model head.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Optional, Sequence, Union

import torch
import torch.nn.functional as F

from ..config import TransformerConfig
from ..errors import InputError
from ..hooks import name_hook_points
from ..modules import TransformerEncoder
from ..tokenizer import Batch, Tokenizer
from .registry import Family

Tensor = torch.Tensor
Texts = Union[str, Sequence[str], Batch]


class Model(TransformerEncoder):
    """A loaded checkpoint. Build it with :func:`attnscope.load`.

    Attributes:
        config: the :class:`TransformerConfig` translated from ``config.json``.
        name: a display name (the folder's name, or the packaged model's Hub id).
        family: "bert", "roberta" or "gpt2".
        tokenizer: the :class:`attnscope.tokenizer.Tokenizer`.
        path: the checkpoint folder.
        pooling: how :meth:`sentence_embedding` pools tokens ("mean", "cls" or "max").
        normalize: whether :meth:`sentence_embedding` L2-normalises (sentence-transformers'
            ``Normalize`` module is in the folder's ``modules.json``).
        unused_weights: checkpoint keys that attnscope does not use (pooler, task heads, buffers).
    """

    def __init__(self, config: TransformerConfig, family: Family, *, name: str = "",
                 tokenizer: Optional[Tokenizer] = None, path: Optional[Path] = None,
                 pooling: str = "mean", normalize: bool = False) -> None:
        super().__init__(config)
        self._family = family
        self.family = family.name
        self.name = name or family.name
        self.tokenizer = tokenizer
        self.path = path
        self.pooling = pooling
        self.normalize = normalize
        self.unused_weights: list[str] = []
        self.lm_head_weight: Optional[torch.nn.Parameter] = None  # set only for an untied output layer
        # Hooks live on the shared modules while a trace runs: one forward pass at a time, so
        # that a server answering from several threads never mixes one request's hooks into another.
        self.lock = threading.RLock()
        name_hook_points(self)  # hook points know their names from the start ("layers.0.attn.q")

    def __getstate__(self):  # copy.deepcopy / pickle: a lock cannot be copied; a copy gets its own
        state = super().__getstate__().copy()
        state.pop("lock", None)
        return state

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        self.lock = threading.RLock()

    # ------------------------------------------------------------------------------------------
    @property
    def hook_names(self) -> list[str]:
        """Every name :meth:`trace` can record for this model, in forward order."""
        from ..trace import expand_names
        return expand_names(self.config)

    @property
    def device(self) -> torch.device:
        return self.embed.token_embedding.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.embed.token_embedding.weight.dtype

    def encode(self, texts: Union[str, Sequence[str]], *, truncate: bool = False,
               max_length: Optional[int] = None) -> Batch:
        """Tokenize into one right-padded :class:`~attnscope.tokenizer.Batch` (CPU tensors).

        ``batch.input_ids`` (B, L), ``batch.attention_mask`` (B, L) (1 = real token),
        ``batch.tokens`` the token strings of each text without padding. A text longer than the
        model's positions (or than ``max_length``, if given) raises InputError unless
        ``truncate=True``.
        """
        if self.tokenizer is None:
            raise InputError(f"model {self.name!r} has no tokenizer; pass token ids to forward()")
        return self.tokenizer.encode(texts, truncate=truncate, max_length=max_length)

    def as_batch(self, texts: Texts, *, truncate: bool = False) -> Batch:
        batch = texts if isinstance(texts, Batch) else self.encode(texts, truncate=truncate)
        return batch.to(self.device)

    def position_ids(self, input_ids: Tensor) -> Optional[Tensor]:
        """(B, L) position ids for families that number positions themselves (RoBERTa), else None."""
        fn = self._family.position_ids
        return None if fn is None else fn(input_ids, self.config)

    # ------------------------------------------------------------------------------------------
    def forward(self, input_ids: Tensor, attention_mask: Optional[Tensor] = None,
                token_type_ids: Optional[Tensor] = None, position_ids: Optional[Tensor] = None) -> Tensor:
        """Token ids ``(B, L)`` → last hidden states ``(B, L, d_model)`` (after ``ln_f`` in GPT-2).

        ``attention_mask (B, L)``: 1/True = real token, 0/False = padding (keys at padded
        positions are masked; the hidden states *at* padded positions are computed but meaningless).
        """
        if position_ids is None:
            position_ids = self.position_ids(input_ids)
        kpm = None
        if attention_mask is not None:
            if not isinstance(attention_mask, torch.Tensor) or attention_mask.shape != input_ids.shape:
                got = tuple(attention_mask.shape) if isinstance(attention_mask, torch.Tensor) else type(attention_mask).__name__
                raise InputError(f"attention_mask must have the shape of input_ids {tuple(input_ids.shape)}, got {got}")
            if not bool(attention_mask.bool().all()):  # no padding: no mask, the fastest kernels
                kpm = ~attention_mask.bool()  # (B, L), True = padding
        with self.lock:
            x = self.embed(input_ids, token_type_ids, position_ids)  # (B, L, d)
            return super(TransformerEncoder, self).forward(x, key_padding_mask=kpm)  # (B, L, d)

    def run(self, texts: Texts, *, truncate: bool = False) -> Tensor:
        """Hidden states ``(B, L, d_model)`` of texts (or a Batch), padded as :meth:`encode` pads."""
        batch = self.as_batch(texts, truncate=truncate)
        return self(batch.input_ids, batch.attention_mask, batch.token_type_ids)

    # ------------------------------------------------------------------------------------------
    def pool(self, hidden: Tensor, attention_mask: Tensor) -> Tensor:
        """Pool ``hidden (B, L, d)`` over real tokens into ``(B, d)`` with :attr:`pooling`."""
        m = attention_mask.to(hidden.dtype).unsqueeze(-1)  # (B, L, 1)
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

    # ------------------------------------------------------------------------------------------
    @property
    def has_lm_head(self) -> bool:
        """True for language models (GPT-2): :meth:`logits` and :meth:`loss` are available."""
        return bool(self._family.lm_head)

    def _require_lm(self) -> None:
        if not self.has_lm_head:
            raise InputError(f"model {self.name!r} ({self.family}) has no language-model head; "
                             f"logits and loss are available for gpt2 models")

    def lm_logits(self, hidden: Tensor) -> Tensor:
        """Next-token logits ``(B, L, vocab)`` from last hidden states: ``hidden @ W_Eᵀ`` with the tied
        token embedding (or the checkpoint's own ``lm_head.weight`` when it is not tied)."""
        self._require_lm()
        W = self.lm_head_weight if self.lm_head_weight is not None else self.embed.token_embedding.weight
        return F.linear(hidden, W)  # (B, L, V)

    def logits(self, texts: Texts, *, truncate: bool = False) -> Tensor:
        """Next-token logits ``(B, L, vocab)`` of texts; position t predicts token t + 1."""
        self._require_lm()
        return self.lm_logits(self.run(texts, truncate=truncate))

    def loss(self, texts: Texts, *, reduction: str = "mean", truncate: bool = False) -> Tensor:
        """Causal language-model cross-entropy (nats per token), as ``GPT2LMHeadModel(labels=ids)``.

        Position t predicts token t + 1; padded targets are ignored. ``reduction``: "mean"
        (over every predicted real token of the batch, a scalar), "sum", or "none" ((B, L-1),
        0 at padded targets).
        """
        self._require_lm()
        if reduction not in ("mean", "sum", "none"):
            raise InputError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        batch = self.as_batch(texts, truncate=truncate)
        if batch.input_ids.shape[1] < 2:
            raise InputError("the loss needs at least two tokens in some text (one to predict from, one to predict)")
        logits = self.lm_logits(self(batch.input_ids, batch.attention_mask))  # (B, L, V)
        target = batch.input_ids[:, 1:].masked_fill(batch.attention_mask[:, 1:] == 0, -100)  # (B, L-1)
        flat = F.cross_entropy(logits[:, :-1].flatten(0, 1).float(), target.flatten(), ignore_index=-100,
                               reduction="none").view_as(target)  # (B, L-1)
        if reduction == "none":
            return flat
        total = flat.sum()
        return total if reduction == "sum" else total / (target != -100).sum().clamp(min=1)

    # ------------------------------------------------------------------------------------------
    def trace(self, texts: Texts, names=None, hooks=None, *, truncate: bool = False, grad: bool = False,
              bwd_hooks=None):
        """Run texts and record intermediates; see :func:`attnscope.trace.run_trace`."""
        from ..trace import run_trace
        return run_trace(self, texts, names=names, hooks=hooks, truncate=truncate, grad=grad,
                         bwd_hooks=bwd_hooks)

    def hooks(self, fwd=None, *, bwd=None):
        """``with model.hooks({"layers.3.attn.z": fn}, bwd={…}):`` — hooks for the block's passes.

        Names, globs and ``[h]`` as in :meth:`trace`; ``fn(tensor, name)`` returns a replacement or
        None (backward: the gradient and its replacement). Always removed when the block ends.
        """
        from ..trace import attached_hooks
        return attached_hooks(self, fwd, bwd)

    def extra_repr(self) -> str:
        c = self.config
        return (f"name={self.name!r}, family={self.family}, layers={c.n_layers}, heads={c.n_heads}, "
                f"d_model={c.d_model}")
