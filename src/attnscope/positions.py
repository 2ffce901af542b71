"""Position schemes, each defined once, by where it acts.

=============  ======================================  ======================================
``acts_on``    what the scheme does                    built by ``build(config)`` as
=============  ======================================  ======================================
embeddings     a vector added to each token's          a module ``position_ids (B|1, L)`` →
               embedding (learned, sinusoidal)         ``(B|1, L, d_model)``
qk             a transform of q and k before their     a module ``(q, k, q_pos, k_pos)`` →
               product (rotary)                        ``(q', k')``
scores         a term added to the scaled scores       a module ``(L, S, q_pos, k_pos)`` →
               (T5 relative bias, ALiBi)               ``bias (H|1, L, S)``
mask           keys hidden from a query (sliding       a module ``(L, S, q_pos, k_pos)`` →
               window)                                 ``bool (L, S)``, True = may attend
=============  ======================================  ======================================

The step function (:func:`attnscope.kernels.steps.attend`) has the places these plug into: a q/k
transform after the scoring's preparation, ``bias=`` for score terms, ``mask=`` for masks. Today
the registry holds the absolute schemes (``learned``, ``sinusoidal``, ``none``); rotary,
relative bias and windows are registered by the families that need them::

    register_position(PositionScheme(name="rotary", acts_on="qk", build=lambda c: Rotary(c), ...))
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional

import numpy as np
import torch
from torch import nn

from .errors import ConfigError

Tensor = torch.Tensor

#: Where a position scheme acts (see the module docstring).
ACTS_ON = ("embeddings", "qk", "scores", "mask")


@dataclass(frozen=True)
class PositionScheme:
    """One position scheme.

    Args:
        name: the ``config.position`` value.
        acts_on: one of :data:`ACTS_ON`.
        build: ``build(config)`` → the module (or None: the scheme adds nothing).
        table_np: float64 twin of a fixed table ``(n_positions, d_model)`` → ndarray, if any.
        words: one sentence per language for ``explain``.
        check: ``check(config)`` raises ConfigError for a config the scheme cannot serve.
    """

    name: str
    acts_on: str
    build: Callable[[object], Optional[nn.Module]]
    table_np: Optional[Callable[[int, int], np.ndarray]] = None
    words: Mapping[str, str] = field(default_factory=dict)
    check: Optional[Callable[[object], None]] = None


_REGISTRY: dict[str, PositionScheme] = {}


def register_position(scheme: PositionScheme, *, replace: bool = False) -> PositionScheme:
    if scheme.acts_on not in ACTS_ON:
        raise ConfigError(f"a position scheme acts on one of {', '.join(ACTS_ON)}, got {scheme.acts_on!r}")
    if scheme.name in _REGISTRY and not replace:
        raise ConfigError(f"position scheme {scheme.name!r} is already registered (pass replace=True to redefine it)")
    _REGISTRY[scheme.name] = scheme
    return scheme


def get_position(name: str) -> PositionScheme:
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise ConfigError(f"unknown position scheme {name!r}; choose one of {', '.join(_REGISTRY)}") from None


def position_names() -> tuple[str, ...]:
    return tuple(_REGISTRY)


# ----------------------------------------------------------------------------------------------
# absolute schemes: a vector added to the embeddings
# ----------------------------------------------------------------------------------------------

def sinusoidal_table_np(n_positions: int, d_model: int) -> np.ndarray:
    """``PE[pos, 2i] = sin(pos / 10000^(2i/d))``, ``PE[pos, 2i+1] = cos(…)``, float64."""
    pos = np.arange(n_positions, dtype=np.float64)[:, None]  # (P, 1)
    inv_freq = np.exp(-math.log(10000.0) * np.arange(0, d_model, 2, dtype=np.float64) / d_model)  # (d/2,)
    pe = np.empty((n_positions, d_model))
    pe[:, 0::2] = np.sin(pos * inv_freq)
    pe[:, 1::2] = np.cos(pos * inv_freq)
    return pe


def sinusoidal_positions(n_positions: int, d_model: int, *, dtype=torch.float32, device=None) -> Tensor:
    """The fixed encoding ``(n_positions, d_model)`` (sin on even, cos on odd features)."""
    pos = torch.arange(n_positions, dtype=torch.float64, device=device)[:, None]  # (P, 1)
    inv_freq = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2, dtype=torch.float64, device=device) / d_model)  # (d/2,)
    angles = pos * inv_freq  # (P, d/2)
    pe = torch.empty(n_positions, d_model, dtype=torch.float64, device=device)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)
    return pe.to(dtype)


class SinusoidalTable(nn.Module):
    """The fixed sinusoidal rows, looked up by position id: ``(B|1, L)`` → ``(B|1, L, d)``."""

    def __init__(self, n_positions: int, d_model: int) -> None:
        super().__init__()
        self.register_buffer("table", sinusoidal_positions(n_positions, d_model), persistent=False)

    def forward(self, position_ids: Tensor) -> Tensor:
        return self.table[position_ids]  # (B|1, L, d)


def _check_even(config) -> None:
    if config.d_model % 2:
        raise ConfigError(f"sinusoidal positions need an even d_model, got {config.d_model}")


register_position(PositionScheme(
    name="learned", acts_on="embeddings",
    build=lambda c: nn.Embedding(c.max_positions + c.position_offset, c.d_model),
    words={"en": "Positions: a learned vector per position, added to the token embedding.",
           "zh": "位置：每个位置一个可学习的向量，加到词向量上。"}))
register_position(PositionScheme(
    name="sinusoidal", acts_on="embeddings",
    build=lambda c: SinusoidalTable(c.max_positions + c.position_offset, c.d_model),
    table_np=sinusoidal_table_np, check=_check_even,
    words={"en": "Positions: fixed sines and cosines of the position (Vaswani et al.), added to the token embedding.",
           "zh": "位置：固定的正弦和余弦位置编码（Vaswani 等），加到词向量上。"}))
register_position(PositionScheme(
    name="none", acts_on="embeddings", build=lambda c: None,
    words={"en": "Positions: none; the model sees a bag of tokens (or a causal mask orders them).",
           "zh": "位置：无；模型只看到词的集合（或由因果掩码给出顺序）。"}))
