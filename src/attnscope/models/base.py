"""What every loaded checkpoint has, encoder or decoder: a name, a family, a tokenizer, a lock,
trace names, tracing and hooks, and (for language models) logits and the loss.

:class:`LoadedModel` is a mixin of ``nn.Module`` stacks: :class:`~attnscope.models.Model`
(BERT, RoBERTa, GPT-2 on a :class:`~attnscope.modules.TransformerEncoder`) and
:class:`~attnscope.models.DecoderModel` (Llama, Qwen2, Mistral, Gemma 3 on a
:class:`~attnscope.modules.TransformerDecoder`). A subclass calls :meth:`_setup` after its stack's
``__init__`` and defines ``forward(input_ids, attention_mask, token_type_ids)`` → last hidden states.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any, Optional, Sequence, Union, cast

import torch
import torch.nn.functional as F

from ..config import TransformerConfig
from ..errors import InputError, ModelLoadError, first_line, shape_or_type
from ..hooks import name_hook_points
from ..i18n import error
from ..tokenizer import Batch, Tokenizer
from .registry import Family

Tensor = torch.Tensor
Texts = Union[str, Sequence[str], Batch]


class LoadedModel:
    """The shared part of a loaded checkpoint (see the module docstring).

    Attributes:
        config: the config translated from the checkpoint.
        name: a display name (the folder's name, or the packaged model's name).
        family: the family name ("bert", "gpt2", "llama", "gemma3", …).
        tokenizer: the :class:`attnscope.tokenizer.Tokenizer` (None when loaded without one).
        path: the checkpoint folder or file.
        unused_weights: checkpoint keys that attnscope does not use.
        lm_head_weight: the output matrix when it is not the token embedding (else None).
    """

    # Each model class names its own config class; the stack's embedding module differs by kind
    # (Embeddings, DecoderEmbeddings, DeBERTa's): what is read here is its token_embedding.
    config: TransformerConfig
    embed: Any

    def _setup(self, family: Family, *, name: str = "", tokenizer: Optional[Tokenizer] = None,
               path: Optional[Path] = None, own_head: bool = False) -> None:
        self._family = family
        self.family = family.name
        self.name = name or family.name
        self.tokenizer = tokenizer
        self.path = path
        self.unused_weights: list[str] = []
        self.lm_head_weight: Optional[torch.nn.Parameter] = None  # set only for an untied output layer
        if own_head:  # the checkpoint's own output matrix (rule: lm_head.weight)
            c = self.config
            self.lm_head_weight = torch.nn.Parameter(torch.empty(c.vocab_size, c.d_model), requires_grad=False)
        # Hooks live on the shared modules while a trace runs: one forward pass at a time, so
        # that a server answering from several threads never mixes one request's hooks into another.
        self.lock = threading.RLock()
        # hook points know their names from the start ("layers.0.attn.q"); self is an nn.Module stack
        name_hook_points(cast(torch.nn.Module, self))

    def __getstate__(self):  # copy.deepcopy / pickle: a lock cannot be copied; a copy gets its own
        state = super().__getstate__().copy()  # type: ignore[misc]
        state.pop("lock", None)
        return state

    def __setstate__(self, state) -> None:
        super().__setstate__(state)  # type: ignore[misc]
        self.lock = threading.RLock()

    # ------------------------------------------------------------------------------------------
    @property
    def hook_names(self) -> list[str]:
        """Every name :meth:`trace` can record for this model, in forward order: the paths of its hook
        points (see :func:`attnscope.trace.names.tree_names`)."""
        from ..trace import tree_names
        return tree_names(cast(torch.nn.Module, self))

    @property
    def input_embedding(self) -> torch.nn.Embedding:
        """The token embedding the model reads its ids with (the output matrix too, when tied)."""
        return self.embed.token_embedding

    @property
    def device(self) -> torch.device:
        return self.input_embedding.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.input_embedding.weight.dtype

    def encode(self, texts: Union[str, Sequence[str]], *, truncate: bool = False,
               max_length: Optional[int] = None) -> Batch:
        """Tokenize into one right-padded :class:`~attnscope.tokenizer.Batch` (CPU tensors).

        ``batch.input_ids`` (B, L), ``batch.attention_mask`` (B, L) (1 = real token),
        ``batch.tokens`` the token strings of each text without padding. A text longer than the
        model's positions (or than ``max_length``, if given) raises InputError unless
        ``truncate=True``.
        """
        if self.tokenizer is None:
            raise error(InputError, "errors.models_no_tokenizer", name=repr(self.name))
        return self.tokenizer.encode(texts, truncate=truncate, max_length=max_length)

    def as_batch(self, texts: Texts, *, truncate: bool = False) -> Batch:
        batch = texts if isinstance(texts, Batch) else self.encode(texts, truncate=truncate)
        return batch.to(self.device)

    def run(self, texts: Texts, *, truncate: bool = False) -> Tensor:
        """Hidden states ``(B, L, d_model)`` of texts (or a Batch), padded as :meth:`encode` pads."""
        batch = self.as_batch(texts, truncate=truncate)
        return self(batch.input_ids, batch.attention_mask, batch.token_type_ids)  # type: ignore[operator]

    def check_context(self, input_ids, past: int = 0) -> None:
        """InputError unless ``input_ids`` is a ``(B, L)`` tensor whose L positions after ``past``
        cached ones fit the model's context (``config.context_limit``; None: no limit, ALiBi)."""
        if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2:
            raise error(InputError, "errors.models_decoder_ids", got=shape_or_type(input_ids))
        limit, n = self.config.context_limit, past + input_ids.shape[1]
        if limit is not None and n > limit:
            raise error(InputError, "errors.models_context", n=n, limit=limit)

    # ------------------------------------------------------------------------------------------
    @property
    def has_lm_head(self) -> bool:
        """True for language models: :meth:`logits` and :meth:`loss` are available."""
        return bool(self._family.lm_head)

    @property
    def can_generate(self) -> bool:
        """True where :meth:`generate` continues a prompt: a language model with causal attention
        (GPT-2, BLOOM, the decoders); an encoder–decoder says so itself."""
        return self.has_lm_head and bool(self.config.causal)

    def _require_lm(self) -> None:
        if not self.has_lm_head:
            raise error(InputError, "errors.models_no_lm_head", name=repr(self.name), family=self.family)

    def lm_logits(self, hidden: Tensor) -> Tensor:
        """Next-token logits ``(B, L, vocab)`` from last hidden states: ``hidden @ W_Eᵀ`` with the tied
        token embedding (or the checkpoint's own ``lm_head.weight`` when it is not tied)."""
        self._require_lm()
        W = self.lm_head_weight if self.lm_head_weight is not None else self.input_embedding.weight
        # with device_map a tied output matrix sits with the embeddings, the hidden states with the head
        return F.linear(hidden.to(W.device), W)  # (B, L, V)

    def logits(self, texts: Texts, *, truncate: bool = False) -> Tensor:
        """Next-token logits ``(B, L, vocab)`` of texts; position t predicts token t + 1."""
        self._require_lm()
        return self.lm_logits(self.run(texts, truncate=truncate))

    def loss(self, texts: Texts, *, reduction: str = "mean", truncate: bool = False) -> Tensor:
        """Causal language-model cross-entropy (nats per token), as ``…ForCausalLM(labels=ids)``.

        Position t predicts token t + 1; padded targets are ignored. ``reduction``: "mean"
        (over every predicted real token of the batch, a scalar), "sum", or "none" ((B, L-1),
        0 at padded targets).
        """
        self._require_lm()
        check_reduction(reduction)
        batch = self.as_batch(texts, truncate=truncate)
        if batch.input_ids.shape[1] < 2:
            raise error(InputError, "errors.models_loss_two_tokens")
        logits = self.lm_logits(self(batch.input_ids, batch.attention_mask))  # type: ignore[operator]  # (B, L, V)
        return label_loss(logits[:, :-1], batch.input_ids[:, 1:], batch.attention_mask[:, 1:], reduction)

    # ------------------------------------------------------------------------------------------
    def trace(self, texts: Texts, names=None, hooks=None, *, truncate: bool = False, grad: bool = False,
              bwd_hooks=None, max_memory=None, replay: Optional[bool] = None):
        """Run texts and record intermediates; see :func:`attnscope.trace.run_trace` (``max_memory``:
        refuse a trace estimated to need more, with the estimate; ``replay``: keep the layers'
        steps as calls run again on read, the default for a trace of every name)."""
        from ..trace import run_trace
        if getattr(self, "layer_stream", None) is not None:  # models.streaming: a layer's weights live in its call
            if grad or replay:
                raise error(InputError, "errors.stream_grad" if grad else "errors.stream_replay", name=self.name)
            replay = False
        return run_trace(self, texts, names=names, hooks=hooks, truncate=truncate, grad=grad,
                         bwd_hooks=bwd_hooks, max_memory=max_memory, replay=replay)

    def attribute(self, text: str, method: str = "rollout", *, layer: Optional[int] = None, target=None,
                  **options):
        """Which input tokens an output depends on: an :class:`~attnscope.attribution.Attribution`
        of one text by ``method`` (``attention``, ``rollout``, ``flow``, ``leave_one_out``, …; see
        :data:`attnscope.attribution.METHODS`), accumulated up to ``layer`` (default the last), for
        ``target`` (output methods); see :func:`attnscope.attribution.attribute`."""
        from ..attribution import attribute
        return attribute(self, text, method, layer=layer, target=target, **options)

    def hooks(self, fwd=None, *, bwd=None):
        """``with model.hooks({"layers.3.attn.z": fn}, bwd={…}):`` — hooks for the block's passes.

        Names, globs and ``[h]`` as in :meth:`trace`; ``fn(tensor, name)`` returns a replacement or
        None (backward: the gradient and its replacement). Always removed when the block ends.
        """
        from ..trace import attached_hooks
        return attached_hooks(self, fwd, bwd)

    def extra_repr(self) -> str:
        c = self.config
        heads = f"{c.n_heads}" if c.kv_heads == c.n_heads else f"{c.n_heads} (k/v {c.kv_heads})"
        return (f"name={self.name!r}, family={self.family}, layers={c.n_layers}, heads={heads}, "
                f"d_model={c.d_model}")


def tokenizer_limit(config: TransformerConfig) -> int:
    """The loaded tokenizer's ``max_length``: the model's context limit; with none (ALiBi, dynamic
    RoPE) the tokenizer refuses no length either."""
    return config.context_limit if config.context_limit is not None else sys.maxsize


def check_mask(input_ids: Tensor, attention_mask: Optional[Tensor]) -> None:
    """InputError unless ``attention_mask`` is None or a tensor of ``input_ids``' shape ``(B, L)``."""
    if attention_mask is not None and (not isinstance(attention_mask, torch.Tensor)
                                       or attention_mask.shape != input_ids.shape):
        raise error(InputError, "errors.models_mask_shape", shape=tuple(input_ids.shape),
                    got=shape_or_type(attention_mask))


def check_reduction(reduction: str) -> None:
    if reduction not in ("mean", "sum", "none"):
        raise error(InputError, "errors.models_reduction", got=repr(reduction))


def label_loss(logits: Tensor, labels: Tensor, mask: Tensor, reduction: str) -> Tensor:
    """Cross-entropy (nats) of ``logits (B, T, V)`` at ``labels (B, T)`` where ``mask`` is 1: per
    label ``(B, T)`` (0 at masked ones) for "none", else their sum or mean."""
    # device_map: the ids stay with the embeddings, the logits come from the head
    labels = labels.to(logits.device).masked_fill(mask.to(logits.device) == 0, -100)  # (B, T)
    flat = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), ignore_index=-100,
                           reduction="none").view_as(labels)  # (B, T)
    if reduction == "none":
        return flat
    total = flat.sum()
    return total if reduction == "sum" else total / (labels != -100).sum().clamp(min=1)


def check_target(device, dtype) -> None:
    """ModelLoadError, before anything is read, for a ``dtype`` that is not a floating torch dtype
    (the string "float16" reached ``Module.to`` as a page of overloads; an integer dtype truncated a
    streamed model's weights to whole numbers) or a ``device`` torch cannot put a tensor on here
    ("cuda" on a CPU build escaped as a bare AssertionError from inside torch)."""
    if dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise error(ModelLoadError, "errors.models_dtype", dtype=repr(dtype))
    if device is not None:
        try:
            torch.empty(0, device=device)
        except (RuntimeError, AssertionError, TypeError, ValueError) as e:
            raise error(ModelLoadError, "errors.models_device", device=repr(device), why=first_line(e)) from None
        if torch.device(device).type == "meta":  # loaded, then every pass failed deep inside torch
            raise error(ModelLoadError, "errors.models_device_meta", device=repr(device))


def finish_loading(model, device=None, dtype: Optional[torch.dtype] = None):
    """A freshly loaded ``model`` in eval mode, moved to ``device`` and ``dtype`` where given;
    ModelLoadError saying why when it cannot be moved."""
    model.eval()
    if device is not None or dtype is not None:
        try:
            model.to(device=device, dtype=dtype)
        except (RuntimeError, TypeError) as e:
            raise error(ModelLoadError, "errors.models_cannot_move", device=device, dtype=dtype, why=str(e)) from None
    return model
