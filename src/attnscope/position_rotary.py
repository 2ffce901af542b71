"""Rotary positions in torch (RoFormer, Su et al. 2021, in Hugging Face's convention): the rotation
speeds (with Llama 3 / linear / dynamic scaling), the tables and the turn of q and k. The scheme
registers in :mod:`attnscope.positions` (``rotary``, acts on qk); :func:`rotary_inv_freq` is its
one float64 definition of a layer's speeds, which the float64 forward, ``explain`` and the viewer use."""

from __future__ import annotations

import math
from typing import Mapping, Optional, Union, cast

import numpy as np
import torch
from torch import nn

from .errors import ConfigError
from .i18n import error
from .reference.positions import rope_inv_freq as rope_inv_freq_np

Tensor = torch.Tensor


def rope_inv_freq(head_dim: int, theta: float, scaling: Optional[Mapping] = None, *,
                  seq_len: Union[None, int, Tensor] = None, max_positions: Optional[int] = None,
                  dtype: torch.dtype = torch.float32) -> Tensor:
    """The rotation speed of each feature pair, ``inv_freq[i] = θ^(−2i/d)`` (head_dim/2,).

    Computed in float32 with the same operations as transformers (and Meta's reference code),
    so that the angles are the model's own (``dtype=torch.float64``: the same formula in float64,
    for float64 runs); ``scaling`` (the Hub's ``rope_scaling``) bends them:

    * ``linear``: every frequency ÷ factor (positions interpolated);
    * ``dynamic``: NTK scaling; once the text is longer than ``max_positions`` the base grows to
      ``θ·(factor·len/max − (factor − 1))^(d/(d−2))`` (``seq_len`` = largest position + 1; a
      tensor, as a model's pass gives it, makes the base in float32 tensor arithmetic as transformers does);
    * ``llama3``: long wavelengths (> original/low_freq_factor) ÷ factor, short ones
      (< original/high_freq_factor) kept, a smooth blend between.
    """
    sc: Mapping = scaling or {}
    kind = sc.get("rope_type", "default")
    fdt = torch.float64 if dtype == torch.float64 else torch.float32
    base: Union[float, Tensor] = theta
    if kind == "dynamic":
        if max_positions is None:
            raise error(ConfigError, "errors.core_rope_dynamic")
        factor = float(sc["factor"])
        if isinstance(seq_len, Tensor):  # a model's pass (transformers: max(position_ids) + 1): float32 tensor arithmetic
            n_t = torch.clamp(seq_len.to(torch.int64), min=int(max_positions))
            base = theta * ((factor * n_t / max_positions) - (factor - 1)) ** (head_dim / (head_dim - 2))
        else:
            n = max(int(seq_len or 0), int(max_positions))
            base = theta * ((factor * n / max_positions) - (factor - 1)) ** (head_dim / (head_dim - 2))
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).to(dtype=fdt) / head_dim))
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


def rotary_inv_freq(config, i: int, n: int) -> tuple[np.ndarray, float, Optional[str]]:
    """Rotary's :func:`layer_inv_freq`, the one float64 definition: ``θ^(−2i/d)`` with the layer's
    base and scaling. Gemma 3's sliding layers have their own (unscaled) base."""
    d = int(config.d_head)
    local = config.rope(i) == "local"
    base = float(config.rope_local_theta if local else config.rope_theta)
    scaling = None if local else config.rope_scaling
    if not scaling:
        return rope_inv_freq_np(d, base), base, None
    inv = rope_inv_freq(d, base, scaling, seq_len=n, max_positions=config.max_positions, dtype=torch.float64)
    return inv.cpu().numpy(), base, str(scaling.get("rope_type"))


class Rotary(nn.Module):
    """Rotary position embedding (RoFormer, Su et al. 2021) in Hugging Face's convention.

    Position p turns feature pair (i, i + d/2) by the angle ``p · inv_freq[i]`` (Hugging Face's pairing;
    llama.cpp pairs adjacent features and its GGUF rows are permuted to match, :mod:`attnscope.models.gguf`)::

        x' = x · cos(p·ω) + (−x₂, x₁) · sin(p·ω)        x = (x₁, x₂) halves, ω = cat(inv_freq, inv_freq)  (d,)

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
        n: Union[None, int, Tensor] = None
        if self.dynamic:
            assert self.max_positions is not None  # dynamic scaling has it (rope_inv_freq in __init__ checks)
            last = int(position_ids.max()) + 1 if position_ids.numel() else 0
            # float32: the length as a tensor, as transformers' rotary module has it (its base in float32)
            n = None if last <= self.max_positions else last if dtype == torch.float64 else torch.tensor(last)
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
        """``x (B, H, L, d)`` turned by the tables of :meth:`cos_sin`: ``x·cos + (−x₂, x₁)·sin``,
        written with a roll (``roll(x)·(−sin₁, sin₂) = (−x₂ sin₁, x₁ sin₂)``, the same numbers)."""
        return x * cos + x.roll(x.shape[-1] // 2, -1) * sin  # (B, H, L, d)

    def forward(self, q: Tensor, k: Tensor, q_pos: Tensor, k_pos: Tensor) -> tuple[Tensor, Tensor]:
        """q at ``q_pos (B|1, L)``, k at ``k_pos (B|1, S)`` → rotated."""
        cq, sq = self.cos_sin(q_pos, q.dtype)
        ck, sk = self.cos_sin(k_pos, k.dtype)
        return self.rotate(q, cq, sq), self.rotate(k, ck, sk)

    def extra_repr(self) -> str:
        return f"head_dim={self.head_dim}, theta={self.theta:g}, scaling={self.scaling}"


class LayerRotary(nn.ModuleDict):
    """A stack's rotary tables, what the ``rotary`` scheme builds: a :class:`Rotary` per base —
    ``global`` (``theta``, default ``config.rope_theta``, with ``rope_scaling``) and, when a layer
    uses it, ``local`` (Gemma 3's sliding layers: ``rope_local_theta``, unscaled) — each made once per
    pass by :meth:`tables` and handed to the layers that use it (``config.rope(i)``)."""

    rotate = staticmethod(Rotary.rotate)

    def __init__(self, config, theta: Optional[float] = None) -> None:
        c = config
        self.kinds = [c.rope(i) for i in range(c.n_layers)]
        ropes = {"global": Rotary(c.d_head, theta or c.rope_theta, c.rope_scaling, max_positions=c.max_positions)}
        if c.rope_local_theta is not None and "local" in self.kinds:
            ropes["local"] = Rotary(c.d_head, c.rope_local_theta, None, max_positions=c.max_positions)
        super().__init__(ropes)

    def tables(self, position_ids: Tensor, dtype: torch.dtype) -> list[tuple[Tensor, Tensor]]:
        """``position_ids (B|1, L)`` → per layer ``(cos, sin)``, each ``(B|1, 1, L, d)``."""
        made = {kind: cast(Rotary, r).cos_sin(position_ids, dtype) for kind, r in self.items()}
        return [made[kind] for kind in self.kinds]
