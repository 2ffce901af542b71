"""Position schemes, each defined once, by where it acts.

=============  ======================================  ======================================
``acts_on``    what the scheme does                    what the scheme gives
=============  ======================================  ======================================
embeddings     a vector added to each token's          ``build(config)``: a module
               embedding (learned, sinusoidal)         ``position_ids (B|1, L)`` → ``(B|1, L, d_model)``
qk             a turn of q's and k's feature pairs     ``build(config)``: the stack's tables,
               before their product (rotary)           ``tables(position_ids, dtype)`` → one
                                                       ``(cos, sin)`` per layer, ``rotate(x, cos, sin)``;
                                                       float64 ``inv_freq(config, layer, n)``
bias           a term per head added to the scaled     ``bias(n_heads, q_pos, k_pos, dtype, device)``
               scores (ALiBi; T5's learned buckets)    → ``(1|B, H, L, S)`` and its float64 twin
                                                       ``bias_np(n_heads, q_pos (L,), k_pos (S,))``
                                                       → ``(H, L, S)``; a learned bias (T5):
                                                       ``build(config, causal=)`` → a stack's
                                                       table, ``forward(L, S, past)``, float64
                                                       ``bias_np(L, S)``
mask           keys hidden from a query (sliding       ``mask(q_pos, k_pos, window)`` → ``bool (…, L, S)``,
               windows), named by a layer's type       True = may attend, its float64 twin ``mask_np``
                                                       and ``window(config)``, how far keys reach
=============  ======================================  ======================================

The step function (:func:`attnscope.kernels.steps.attend`) has the places these plug into: a q/k
transform after the scoring's preparation, ``bias=`` for score terms, ``mask=`` for masks.
:class:`~attnscope.modules.MultiHeadAttention` adds a ``bias`` scheme's term itself (hook point
``attn.bias``, trace name ``layers.{i}.attn.bias``), so a new one is one call::

    register_position(PositionScheme(name="alibi", acts_on="bias", bias=alibi_bias, bias_np=R.alibi_bias))

The registry holds the absolute schemes (``learned``, ``sinusoidal``, ``none``), ``rotary`` and
``alibi``; T5's learned relative bias (``t5_relative``) is registered by
:mod:`attnscope.modules.t5_bias`: each encoder–decoder stack builds its table from the scheme
(``rel_bias``), adds it in every layer's ``attn.bias``, and the float64 forward, ``explain`` and the
viewer's data read the table's ``bias_np``. A mask is a second kind
of scheme: a window is a layer's setting (Gemma 3 alternates), so a ``mask`` scheme is named by a
layer's type (``DecoderConfig.layer_types``: ``full`` and ``sliding`` are built in), not by
``config.position``; the decoder stack and the float64 forward call its ``mask``/``mask_np``.

A bias scheme's positions count real tokens: a key's position is the number of real (unpadded)
keys before it, and padding gets 0 (transformers' BLOOM: ``cumsum(attention_mask) − 1``). With
right padding or none these are 0 … S − 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

import numpy as np
import torch
from torch import nn

from .errors import ConfigError
from .i18n import error
from .position_bias import alibi_bias, alibi_slopes, real_positions  # noqa: F401  (public here too)
from .position_rotary import LayerRotary, Rotary, rope_inv_freq, rotary_inv_freq  # noqa: F401  (public here too)
from .reference.positions import alibi_bias as alibi_bias_np
from .reference.positions import causal_window as causal_window_np
from .reference.positions import sinusoidal_pe as sinusoidal_pe_np
from .scorings import add_to_registry, remove_from_registry

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
            scheme with a fixed term gives ``bias`` instead; a learned ``bias`` scheme is built per
            stack, ``build(config, causal=)``).
        words: one sentence per language for ``explain``.
        check: ``check(config)`` raises ConfigError for a config the scheme cannot serve.
        bias: ``acts_on="bias"`` with a fixed term: ``bias(n_heads, q_pos (1|B, L), k_pos (1|B, S),
            dtype, device)`` → ``(1|B, H, L, S)``, added to the scaled scores.
        bias_np: its float64 twin ``bias_np(n_heads, q_pos (L,), k_pos (S,))`` → ``(H, L, S)``
            (:mod:`attnscope.reference.positions`), which the float64 forward, ``explain`` and the
            viewer's data compute with.
        inv_freq: ``acts_on="qk"``: ``inv_freq(config, layer, n)`` → the float64 rotation speeds of
            the layer's feature pairs for a text of ``n`` tokens ``(d/2,)``, its base and scaling
            kind (:func:`rotary_inv_freq`), what the float64 forward, ``explain`` and the viewer turn q
            and k by; ``build(config)`` gives the torch tables (:class:`LayerRotary`).
        mask, mask_np, window: ``acts_on="mask"``: ``mask(q_pos (…, L), k_pos (…, S), window)`` →
            bool ``(…, L, S)`` (True = may attend), its float64 twin on ``(L,)``, ``(S,)`` and
            ``window(config)``: how far back its keys reach (None: every earlier key). The model,
            the trace's masks and the float64 forward call ``mask``/``mask_np``; explain's words and the
            viewer's page draw the causal window ``window(config)``: the viewer's data names each
            layer's scheme and refuses one whose ``mask_np`` is not that window
            (:func:`attnscope.viewer.data.layer_masks`).
    """

    name: str
    acts_on: str
    build: Callable[[Any], Optional[nn.Module]] = lambda config: None  # any config class with the scheme's fields
    words: Mapping[str, str] = field(default_factory=dict)
    check: Optional[Callable[[Any], None]] = None
    bias: Optional[Callable[..., Tensor]] = None
    bias_np: Optional[Callable[..., np.ndarray]] = None
    inv_freq: Optional[Callable[[Any, int, int], tuple]] = None
    mask: Optional[Callable[..., Tensor]] = None
    mask_np: Optional[Callable[..., np.ndarray]] = None
    window: Callable[[Any], Optional[int]] = lambda config: None


_REGISTRY: dict[str, PositionScheme] = {}


def register_position(scheme: PositionScheme, *, replace: bool = False) -> PositionScheme:
    """Add a position scheme; ``TransformerConfig(position=scheme.name)`` then builds it where its
    ``acts_on`` says (a ``bias`` scheme with ``bias=``/``bias_np=``: the attention modules, the
    float64 forward, ``explain`` and the viewer's data add its term). ConfigError for an unknown
    ``acts_on``, a bias without its float64 twin, or a taken name without ``replace=True``."""
    if scheme.acts_on not in ACTS_ON:
        raise error(ConfigError, "errors.core_position_acts_on", choices=", ".join(ACTS_ON), value=repr(scheme.acts_on))
    if (scheme.bias is None) != (scheme.bias_np is None):
        raise error(ConfigError, "errors.core_position_bias_twin", name=repr(scheme.name))
    if scheme.bias is not None and scheme.acts_on != "bias":
        raise error(ConfigError, "errors.core_position_bias_acts_on", name=repr(scheme.name), acts_on=scheme.acts_on)
    if scheme.acts_on == "mask" and (scheme.mask is None or scheme.mask_np is None):
        raise error(ConfigError, "errors.core_mask_scheme_twin", name=repr(scheme.name))
    return add_to_registry(_REGISTRY, scheme.name, scheme, "position scheme", replace)


def unregister_position(name: str) -> None:
    """Remove a scheme added by :func:`register_position` (the built-in ones stay)."""
    remove_from_registry(_REGISTRY, BUILTIN, name, "position scheme")


def get_position(name: str) -> PositionScheme:
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise error(ConfigError, "errors.core_unknown_position", name=repr(name), choices=", ".join(_REGISTRY)) from None


def position_names() -> tuple[str, ...]:
    """The values ``config.position`` takes (the mask schemes are layer types: :func:`mask_names`)."""
    return tuple(n for n, s in _REGISTRY.items() if s.acts_on != "mask")


def mask_names() -> tuple[str, ...]:
    """The layer types ``DecoderConfig.layer_types`` takes: the registered mask schemes."""
    return tuple(n for n, s in _REGISTRY.items() if s.acts_on == "mask")


def rotates(config) -> bool:
    """Whether ``config``'s position scheme turns q and k (acts on qk: rotary)."""
    scheme = _REGISTRY.get(getattr(config, "position", None))  # type: ignore[arg-type]
    return scheme is not None and scheme.acts_on == "qk"


# ----------------------------------------------------------------------------------------------
# absolute schemes: a vector added to the embeddings
# ----------------------------------------------------------------------------------------------

def sinusoidal_table_np(n_positions: int, d_model: int) -> np.ndarray:
    """``PE (n_positions, d_model)`` float64: :func:`attnscope.reference.sinusoidal_pe` at 0 … P − 1."""
    return sinusoidal_pe_np(np.arange(n_positions), d_model)


def sinusoidal_positions(n_positions: int, d_model: int, *, dtype=torch.float32, device=None) -> Tensor:
    """The fixed encoding ``(n_positions, d_model)`` (sin on even, cos on odd features): the float64
    :func:`sinusoidal_table_np` in ``dtype``."""
    return torch.tensor(sinusoidal_table_np(n_positions, d_model), dtype=dtype, device=device)


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
        raise error(ConfigError, "errors.core_sinusoidal_even", value=config.d_model)


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

def layer_inv_freq(config, i: int, n: int) -> tuple[np.ndarray, float, Optional[str]]:
    """The float64 rotation speeds of layer ``i`` for a text of ``n`` tokens from the config's
    ``qk`` scheme: ``(inv_freq (d/2,), base, scaling kind or None)``."""
    scheme = get_position(config.position)
    if scheme.inv_freq is None:
        raise error(ConfigError, "errors.core_position_not_qk", name=repr(config.position))
    return scheme.inv_freq(config, i, n)


def _check_rotary(config) -> None:
    if config.d_head % 2:
        raise error(ConfigError, "errors.core_rotary_width", value=config.d_head)


register_position(PositionScheme(
    name="rotary", acts_on="qk",
    build=LayerRotary, inv_freq=rotary_inv_freq, check=_check_rotary,
    words={"en": "Positions: rotary (RoPE); q and k of each head are turned by an angle proportional to their "
                 "position, so that q·k depends on the distance between the tokens.",
           "zh": "位置：旋转位置编码（RoPE）；每个头的 q 和 k 按位置转过一个角度，使 q·k 只取决于两个词的距离。"}))


# ----------------------------------------------------------------------------------------------
# score biases: a term per head added to the scaled scores (ALiBi)
# ----------------------------------------------------------------------------------------------

def _check_alibi(config) -> None:
    if getattr(config, "kind", "") == "seq2seq":
        raise error(ConfigError, "errors.core_alibi_stacks")


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
BUILTIN = frozenset({"learned", "sinusoidal", "none", "rotary", "alibi", "t5_relative", "full", "sliding"})


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


def _check_sliding(config) -> None:
    if config.sliding_window is None:
        raise error(ConfigError, "errors.core_sliding_no_window")


register_position(PositionScheme(name="full", acts_on="mask", mask=causal_window_mask, mask_np=causal_window_np))
register_position(PositionScheme(name="sliding", acts_on="mask", mask=causal_window_mask, mask_np=causal_window_np,
                                 window=lambda c: c.sliding_window, check=_check_sliding))


def layer_mask_np(config, i: int, n: int) -> np.ndarray:
    """Layer ``i``'s mask scheme in float64 on a text of ``n`` tokens: bool ``(n, n)``, True = may attend."""
    scheme, pos = get_position(config.layer_type(i)), np.arange(int(n))
    assert scheme.mask_np is not None  # register_position checks that a mask scheme has it
    return scheme.mask_np(pos, pos, scheme.window(config))
