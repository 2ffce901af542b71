"""Position schemes, each defined once, by where it acts.

=============  ======================================  ======================================
``acts_on``    what the scheme does                    what the scheme gives
=============  ======================================  ======================================
embeddings     a vector added to each token's          ``build(config)``: a module
               embedding (learned, sinusoidal)         ``position_ids (B|1, L)`` → ``(B|1, L, d_model)``
qk             a transform of q and k before their     ``build(config)``: a module
               product (rotary)                        ``(q, k, q_pos, k_pos)`` → ``(q', k')``
bias           a term per head added to the scaled     ``bias(n_heads, q_pos, k_pos, dtype, device)``
               scores (ALiBi; T5's learned buckets)    → ``(1|B, H, L, S)`` and its float64 twin
                                                       ``bias_np(n_heads, q_pos (L,), k_pos (S,))``
                                                       → ``(H, L, S)`` (a learned bias: ``build``)
mask           keys hidden from a query (sliding       ``(q_pos, k_pos)`` → ``bool (…, L, S)``,
               windows)                                True = may attend (:func:`causal_window_mask`)
=============  ======================================  ======================================

The step function (:func:`attnscope.kernels.steps.attend`) has the places these plug into: a q/k
transform after the scoring's preparation, ``bias=`` for score terms, ``mask=`` for masks.
:class:`~attnscope.modules.MultiHeadAttention` adds a ``bias`` scheme's term itself (hook point
``attn.bias``, trace name ``layers.{i}.attn.bias``), so a new one is one call::

    register_position(PositionScheme(name="alibi", acts_on="bias", bias=alibi_bias, bias_np=R.alibi_bias))

The registry holds the absolute schemes (``learned``, ``sinusoidal``, ``none``), ``rotary`` and
``alibi``; T5's learned relative bias (``t5_relative``, one table per stack) is registered by
:mod:`attnscope.modules.t5_bias` and runs in the encoder–decoder stacks; sliding windows are the
mask :func:`causal_window_mask` that the decoder's attention builds per layer (a window is a
layer's setting, ``DecoderConfig.layer_types``, not a ``config.position``).

A bias scheme's positions count real tokens: a key's position is the number of real (unpadded)
keys before it, and padding gets 0 (transformers' BLOOM: ``cumsum(attention_mask) − 1``). With
right padding or none these are 0 … S − 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

import numpy as np
import torch
from torch import nn

from .errors import ConfigError
from .position_bias import alibi_bias, alibi_slopes, real_positions  # noqa: F401  (public here too)
from .reference.positions import alibi_bias as alibi_bias_np
from .reference.positions import rope_inv_freq as rope_inv_freq_np
from .scorings import add_to_registry

Tensor = torch.Tensor

#: Where a position scheme acts (see the module docstring).
ACTS_ON = ("embeddings", "qk", "bias", "mask")


@dataclass(frozen=True)
class PositionScheme:
    """One position scheme.

    Args:
        name: the ``config.position`` value.
        acts_on: one of :data:`ACTS_ON`.
        build: ``build(config)`` → the module (or None: the scheme has no module; a ``bias``
            scheme with a fixed term gives ``bias`` instead).
        words: one sentence per language for ``explain``.
        check: ``check(config)`` raises ConfigError for a config the scheme cannot serve.
        bias: ``acts_on="bias"`` with a fixed term: ``bias(n_heads, q_pos (1|B, L), k_pos (1|B, S),
            dtype, device)`` → ``(1|B, H, L, S)``, added to the scaled scores.
        bias_np: its float64 twin ``bias_np(n_heads, q_pos (L,), k_pos (S,))`` → ``(H, L, S)``
            (:mod:`attnscope.reference.positions`), which the float64 forward, ``explain`` and the
            viewer's data compute with.
    """

    name: str
    acts_on: str
    build: Callable[[Any], Optional[nn.Module]] = lambda config: None  # any config class with the scheme's fields
    words: Mapping[str, str] = field(default_factory=dict)
    check: Optional[Callable[[Any], None]] = None
    bias: Optional[Callable[..., Tensor]] = None
    bias_np: Optional[Callable[..., np.ndarray]] = None


_REGISTRY: dict[str, PositionScheme] = {}


def register_position(scheme: PositionScheme, *, replace: bool = False) -> PositionScheme:
    """Add a position scheme; ``TransformerConfig(position=scheme.name)`` then builds it where its
    ``acts_on`` says (a ``bias`` scheme with ``bias=``/``bias_np=``: the attention modules, the
    float64 forward, ``explain`` and the viewer's data add its term). ConfigError for an unknown
    ``acts_on``, a bias without its float64 twin, or a taken name without ``replace=True``."""
    if scheme.acts_on not in ACTS_ON:
        raise ConfigError(f"a position scheme acts on one of {', '.join(ACTS_ON)}, got {scheme.acts_on!r}")
    if (scheme.bias is None) != (scheme.bias_np is None):
        raise ConfigError(f"position scheme {scheme.name!r}: a score bias needs both its torch function (bias=) "
                          f"and its float64 twin (bias_np=)")
    if scheme.bias is not None and scheme.acts_on != "bias":
        raise ConfigError(f"position scheme {scheme.name!r} gives a score bias but acts on {scheme.acts_on}; "
                          f"a score term is acts_on='bias'")
    return add_to_registry(_REGISTRY, scheme.name, scheme, "position scheme", replace)


def unregister_position(name: str) -> None:
    """Remove a scheme added by :func:`register_position` (the built-in ones stay)."""
    if name in BUILTIN:
        raise ConfigError(f"position scheme {name!r} is built in and cannot be removed")
    _REGISTRY.pop(name, None)


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

    table: Tensor  # (P, d), a buffer registered in __init__

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
    check=_check_even,
    words={"en": "Positions: fixed sines and cosines of the position (Vaswani et al.), added to the token embedding.",
           "zh": "位置：固定的正弦和余弦位置编码（Vaswani 等），加到词向量上。"}))
register_position(PositionScheme(
    name="none", acts_on="embeddings", build=lambda c: None,
    words={"en": "Positions: none; the model sees a bag of tokens (or a causal mask orders them).",
           "zh": "位置：无；模型只看到词的集合（或由因果掩码给出顺序）。"}))


# ----------------------------------------------------------------------------------------------
# rotary positions: a rotation of q and k by their positions (acts on qk)
# ----------------------------------------------------------------------------------------------

def rope_inv_freq(head_dim: int, theta: float, scaling: Optional[Mapping] = None, *,
                  seq_len: Optional[int] = None, max_positions: Optional[int] = None,
                  dtype: torch.dtype = torch.float32) -> Tensor:
    """The rotation speed of each feature pair, ``inv_freq[i] = θ^(−2i/d)`` (head_dim/2,).

    Computed in float32 with the same operations as transformers (and Meta's reference code),
    so that the angles are the model's own (``dtype=torch.float64``: the same formula in float64,
    for float64 runs); ``scaling`` (the Hub's ``rope_scaling``) bends them:

    * ``linear``: every frequency ÷ factor (positions interpolated);
    * ``dynamic``: NTK scaling; once the text is longer than ``max_positions`` the base grows to
      ``θ·(factor·len/max − (factor − 1))^(d/(d−2))`` (``seq_len`` = largest position + 1);
    * ``llama3``: long wavelengths (> original/low_freq_factor) ÷ factor, short ones
      (< original/high_freq_factor) kept, a smooth blend between.
    """
    sc: Mapping = scaling or {}
    kind = sc.get("rope_type", "default")
    fdt = torch.float64 if dtype == torch.float64 else torch.float32
    if kind == "dynamic":
        if max_positions is None:
            raise ConfigError("dynamic RoPE scaling needs max_positions (the context length where the base starts to grow)")
        factor = float(sc["factor"])
        n = max(int(seq_len or 0), int(max_positions))
        theta = theta * ((factor * n / max_positions) - (factor - 1)) ** (head_dim / (head_dim - 2))
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).to(dtype=fdt) / head_dim))
    if kind == "linear":
        inv = inv / float(sc["factor"])
    elif kind == "llama3":
        factor, low, high = (float(sc[k]) for k in ("factor", "low_freq_factor", "high_freq_factor"))
        old = sc["original_max_position_embeddings"]
        low_wavelen, high_wavelen = old / low, old / high
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > low_wavelen, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
        inv = torch.where(medium, smoothed, scaled)
    return inv  # (d/2,)


def layer_inv_freq(config, i: int, n: int) -> tuple[np.ndarray, float, Optional[str]]:
    """The rotation speeds of layer ``i`` for a text of ``n`` tokens, float64: ``(inv_freq (d/2,),
    base, scaling kind or None)``. Gemma 3's sliding layers have their own (unscaled) base."""
    d = int(config.d_head)
    local = config.rope(i) == "local"
    base = float(config.rope_local_theta if local else config.rope_theta)
    scaling = None if local else config.rope_scaling
    if not scaling:
        return rope_inv_freq_np(d, base), base, None
    inv = rope_inv_freq(d, base, scaling, seq_len=n, max_positions=config.max_positions, dtype=torch.float64)
    return inv.cpu().numpy(), base, str(scaling.get("rope_type"))


def rotate_half(x: Tensor) -> Tensor:
    """``(x₁, x₂) → (−x₂, x₁)`` on the two halves of the last axis: Hugging Face's pairing, in which
    feature i turns together with feature i + d/2 (llama.cpp pairs adjacent features instead; its
    GGUF files store q and k rows permuted accordingly, see :mod:`attnscope.models.gguf`)."""
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class Rotary(nn.Module):
    """Rotary position embedding (RoFormer, Su et al. 2021) in Hugging Face's convention.

    Position p turns feature pair (i, i + d/2) by the angle ``p · inv_freq[i]``::

        x' = x · cos(p·ω) + rotate_half(x) · sin(p·ω)        ω = cat(inv_freq, inv_freq)  (d,)

    so that ``q'_m · k'_n`` depends on m − n only. :meth:`cos_sin` makes the tables for some
    positions once per forward pass; :meth:`rotate` applies them to a ``(B, H, L, d)`` tensor.
    """

    def __init__(self, head_dim: int, theta: float, scaling: Optional[Mapping] = None, *,
                 max_positions: Optional[int] = None) -> None:
        super().__init__()
        self.head_dim, self.theta, self.max_positions = head_dim, float(theta), max_positions
        self.scaling = dict(scaling) if scaling else None
        self.dynamic = (self.scaling or {}).get("rope_type") == "dynamic"
        # a plain float32 tensor, not a buffer: model.to(dtype) must not round the model's angles
        self.inv_freq = rope_inv_freq(head_dim, theta, self.scaling, max_positions=max_positions)  # (d/2,)

    def frequencies(self, position_ids: Tensor, dtype: torch.dtype = torch.float32) -> Tensor:
        """``inv_freq`` for a pass over ``position_ids`` (dynamic scaling depends on the length),
        float32, or float64 for ``dtype`` float64."""
        n = None
        if self.dynamic:
            assert self.max_positions is not None  # dynamic scaling has it (rope_inv_freq in __init__ checks)
            n = int(position_ids.max()) + 1 if position_ids.numel() else 0
            n = n if n > self.max_positions else None
        if n is None and dtype != torch.float64:
            if self.inv_freq.device != position_ids.device:
                self.inv_freq = self.inv_freq.to(position_ids.device)
            return self.inv_freq
        return rope_inv_freq(self.head_dim, self.theta, self.scaling, seq_len=n, max_positions=self.max_positions,
                             dtype=dtype if dtype == torch.float64 else torch.float32).to(position_ids.device)

    def cos_sin(self, position_ids: Tensor, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        """``position_ids (B|1, L)`` → the tables ``cos, sin`` each ``(B|1, 1, L, d)`` in ``dtype``,
        ``sin`` with its first half negated (so that :meth:`rotate` needs no negation). The angles
        are float32 (bit for bit transformers') for float32 and narrower models, float64 for
        float64 ones (transformers' ``.double()`` models keep float32 angles)."""
        fdt = torch.float64 if dtype == torch.float64 else torch.float32
        inv = self.frequencies(position_ids, fdt)
        freqs = position_ids[..., None].to(fdt) * inv  # (B|1, L, d/2)
        emb = torch.cat((freqs, freqs), dim=-1)  # (B|1, L, d)
        sin = emb.sin()
        sin[..., : self.head_dim // 2].neg_()
        return emb.cos().to(dtype)[:, None], sin.to(dtype)[:, None]  # (B|1, 1, L, d)

    @staticmethod
    def rotate(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
        """``x (B, H, L, d)`` turned by the tables of :meth:`cos_sin`: ``x·cos + rotate_half(x)·sin``,
        written with a roll (``roll(x)·(−sin₁, sin₂) = (−x₂ sin₁, x₁ sin₂)``, the same numbers)."""
        return x * cos + x.roll(x.shape[-1] // 2, -1) * sin  # (B, H, L, d)

    def forward(self, q: Tensor, k: Tensor, q_pos: Tensor, k_pos: Tensor) -> tuple[Tensor, Tensor]:
        """The ``qk`` scheme's contract: q at ``q_pos (B|1, L)``, k at ``k_pos (B|1, S)`` → rotated."""
        cq, sq = self.cos_sin(q_pos, q.dtype)
        ck, sk = self.cos_sin(k_pos, k.dtype)
        return self.rotate(q, cq, sq), self.rotate(k, ck, sk)

    def extra_repr(self) -> str:
        return f"head_dim={self.head_dim}, theta={self.theta:g}, scaling={self.scaling}"


def _check_rotary(config) -> None:
    if config.d_head % 2:
        raise ConfigError(f"rotary positions rotate pairs of features; the head width must be even, got {config.d_head}")


register_position(PositionScheme(
    name="rotary", acts_on="qk",
    build=lambda c: Rotary(c.d_head, c.rope_theta, c.rope_scaling, max_positions=c.max_positions),
    check=_check_rotary,
    words={"en": "Positions: rotary (RoPE); q and k of each head are turned by an angle proportional to their "
                 "position, so that q·k depends on the distance between the tokens.",
           "zh": "位置：旋转位置编码（RoPE）；每个头的 q 和 k 按位置转过一个角度，使 q·k 只取决于两个词的距离。"}))


# ----------------------------------------------------------------------------------------------
# score biases: a term per head added to the scaled scores (ALiBi)
# ----------------------------------------------------------------------------------------------

def _check_alibi(config) -> None:
    if getattr(config, "kind", "") == "seq2seq":
        raise ConfigError("ALiBi runs in single-stack models (TransformerConfig); the encoder–decoder stacks "
                          "take T5's relative bias or learned positions")


register_position(PositionScheme(
    name="alibi", acts_on="bias", bias=alibi_bias, bias_np=alibi_bias_np, check=_check_alibi,
    words={"en": "Positions: ALiBi (Press et al.); no position vectors, each head adds slope × key position to "
                 "the scaled score (slopes 2^(−8/H), 2^(−16/H), …), which after softmax is a penalty growing "
                 "with the distance to the key.",
           "zh": "位置：ALiBi（Press 等）；没有位置向量，每个头把“斜率 × 键的位置”加到缩放后的分数上"
                 "（斜率为 2^(−8/H)、2^(−16/H)……），经过 softmax 后就是随键的距离增大的惩罚。"}))

def score_bias_np(config, n: int) -> Optional[np.ndarray]:
    """The float64 score term ``(H, n, n)`` of a text of ``n`` tokens (no padding: positions
    0 … n − 1) for a config whose position scheme gives a fixed bias (ALiBi), else None: what the
    float64 forward, ``explain`` and the viewer's data add to the scaled scores."""
    scheme = get_position(config.position)
    if scheme.bias_np is None:
        return None
    pos = np.arange(int(n))
    return scheme.bias_np(int(config.n_heads), pos, pos)  # (H, n, n)


#: The schemes attnscope defines (``t5_relative`` in :mod:`attnscope.modules.t5_bias`); the others
#: were registered by a program and may be removed.
BUILTIN = frozenset({"learned", "sinusoidal", "none", "rotary", "alibi", "t5_relative"})


# ----------------------------------------------------------------------------------------------
# masks: keys hidden from a query (causality, sliding windows)
# ----------------------------------------------------------------------------------------------

def causal_window_mask(q_pos: Tensor, k_pos: Tensor, window: Optional[int] = None) -> Tensor:
    """Bool ``(…, L, S)``, True = the query may attend the key: ``k ≤ q`` and, with a window,
    ``q − k < window`` (the query sees itself and the ``window − 1`` keys before it, as in
    transformers and Mistral). ``q_pos (…, L)``, ``k_pos (…, S)`` are absolute positions."""
    d = q_pos[..., :, None] - k_pos[..., None, :]  # (…, L, S)
    allowed = d >= 0
    if window is not None:
        allowed = allowed & (d < window)
    return allowed


def causal_window_mask_np(n_q: int, n_k: int, window: Optional[int] = None, offset: int = 0) -> np.ndarray:
    """Float64-side twin of :func:`causal_window_mask` for queries at ``offset … offset + n_q − 1``."""
    d = (np.arange(n_q)[:, None] + offset) - np.arange(n_k)[None, :]
    return (d >= 0) & (d < window) if window is not None else d >= 0
