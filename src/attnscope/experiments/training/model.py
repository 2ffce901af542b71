"""The trained model (attnscope's :class:`~attnscope.modules.TransformerEncoder` and a read-out),
its initialisation per variant, and the :class:`Probe` that reads attention through hook points."""

from __future__ import annotations

import math
from typing import Optional, cast

import torch
from torch import nn

from ...config import TransformerConfig
from ...errors import ConfigError
from ...i18n import error
from ...modules import TransformerEncoder
from ...modules.encoder import EncoderLayer
from .settings import VARIANTS, Settings


class TaskModel(nn.Module):
    """``TransformerEncoder`` + a linear read-out: ids ``(B, L)`` → logits ``(B, L, n_outputs)``."""

    def __init__(self, config: TransformerConfig, n_outputs: int) -> None:
        super().__init__()
        self.encoder = TransformerEncoder(config)
        self.head = nn.Linear(config.d_model, n_outputs)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(ids))  # (B, L, n_outputs)


def model_config(task, variant: str, d_k: int, settings: Settings) -> TransformerConfig:
    """The encoder config of one run; the "t5" variant uses unscaled scoring (see :func:`fold_scale`)."""
    if variant not in VARIANTS:
        raise error(ConfigError, "errors.experiment_unknown_variant", name=repr(variant), names=", ".join(VARIANTS))
    return TransformerConfig(
        vocab_size=task.vocab_size, d_model=settings.d_model, n_heads=settings.d_model // d_k,
        n_layers=settings.n_layers, d_ff=settings.d_ff, max_positions=task.seq_len, type_vocab_size=0,
        position=task.position, norm="pre", embed_norm=False, final_norm=True, activation="gelu",
        layer_norm_eps=1e-5, dropout=0.0, attn_dropout=0.0,
        scoring="unscaled" if variant == "t5" else variant, causal=task.causal)


def init_weights(model: nn.Module, generator: torch.Generator, init: str = "lecun") -> None:
    """LeCun-normal Linear weights (std 1/√fan_in), zero biases, N(0, 1) embeddings; or std 0.02.

    Parameters are visited in ``named_modules`` order, which does not depend on the scoring, so
    that every variant with the same seed starts from the same weights.
    """
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Linear):
                std = m.in_features ** -0.5 if init == "lecun" else 0.02
                m.weight.normal_(0.0, std, generator=generator)
                if m.bias is not None:
                    m.bias.zero_()
            elif isinstance(m, nn.Embedding):
                m.weight.normal_(0.0, 1.0 if init == "lecun" else 0.02, generator=generator)


def encoder_layers(model: TaskModel) -> list[EncoderLayer]:
    """The encoder's layers as what they are (an nn.ModuleList hands a type checker plain Modules)."""
    return cast("list[EncoderLayer]", list(model.encoder.layers))


def fold_scale(model: TaskModel, d_k: int) -> None:
    """T5-style: divide the query rows of every fused ``W_qkv`` (weights and bias) by √d_k.

    With unscaled scoring, ``(W_Q x / √d_k)·k = (q·k)/√d_k``: the model starts exactly where the
    scaled one does, but the factor now lives in a trainable parameter.
    """
    with torch.no_grad():
        for layer in encoder_layers(model):
            d = layer.attn.d_model
            layer.attn.W_qkv.weight[:d].mul_(d_k ** -0.5)
            if layer.attn.W_qkv.bias is not None:
                layer.attn.W_qkv.bias[:d].mul_(d_k ** -0.5)


def build_model(task, variant: str, d_k: int, settings: Settings, seed: int) -> TaskModel:
    config = model_config(task, variant, d_k, settings)
    model = TaskModel(config, task.n_outputs)
    init_weights(model, torch.Generator().manual_seed(seed), settings.init)
    if variant == "t5":
        fold_scale(model, d_k)
    return model


class Probe:
    """Reads the attention of every layer through attnscope's hook points.

    A forward hook (:meth:`~attnscope.hooks.HookPoint.add_hook`) on ``layers.{i}.attn.scaled`` registers a tensor hook
    that records ``‖∂loss/∂scaled‖²`` when ``want_grad`` is set; one on ``layers.{i}.attn.weights`` records
    entropy and largest weight when ``rows`` (a (B, L) mask of rows to average over) is set.
    The functions stay attached for the whole run, so every variant takes the same explicit
    attention path (softmax of materialised scores) at every step.
    """

    def __init__(self, model: TaskModel, causal: bool) -> None:
        self.causal = causal
        self.want_grad = False
        self.rows: Optional[torch.Tensor] = None
        self.grad_sq: list[torch.Tensor] = []
        self.stats: list[dict] = []
        self.handles = []
        for layer in encoder_layers(model):
            self.handles.append(layer.attn.scaled.add_hook(self._on_scaled))
            self.handles.append(layer.attn.weights.add_hook(self._on_weights))

    def remove(self) -> None:
        """Detach the probe's hooks from the model."""
        for h in self.handles:
            h.remove()
        self.handles = []

    def _on_scaled(self, x: torch.Tensor, name: str) -> None:
        if self.want_grad and x.requires_grad:
            x.register_hook(lambda g: self.grad_sq.append(g.detach().double().pow(2).sum()))
        return None

    def _on_weights(self, p: torch.Tensor, name: str) -> None:
        if self.rows is None:
            return None
        with torch.no_grad():
            p = p.double()  # (B, H, L, S)
            L, S = p.shape[-2:]
            # Keys a row may see, from the mask's structure (a saturated softmax underflows to exact
            # zeros, so counting p > 0 would be wrong).
            seen = torch.arange(1, L + 1, dtype=torch.float64) if self.causal else torch.full((L,), float(S))
            n_keys = seen.expand(p.shape[:-1])  # (B, H, L)
            H = -torch.special.xlogy(p, p).sum(-1)  # (B, H, L)
            sel = self.rows[:, None, :].expand_as(H)  # (B, H, L)
            multi = sel & (n_keys > 1)
            self.stats.append({
                "entropy": float(H[sel].mean()), "uniform_entropy": float(n_keys.log()[sel].mean()),
                "entropy_norm": float((H[multi] / n_keys[multi].log()).mean()) if multi.any() else math.nan,
                "max_weight": float(p.amax(-1)[sel].mean())})
        return None
