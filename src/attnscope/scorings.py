"""The ways of turning q and k into scores, each defined once.

Every scoring here is *dot-product attention on prepared inputs*::

    q', k' = prepare(q, k)              (..., L|S, d_k)   e.g. unit length for cosine
    scaled = (q' @ k'ᵀ) · factor(d_k)   (..., L, S)       e.g. 1/√d_k, or 1/τ for cosine

so every kernel (the fused SDPA call, the blockwise online softmax, the explicit steps) serves
every scoring: the kernels call :meth:`Scoring.prepare` and :meth:`Scoring.factor_for` and never
name a scoring. The float64 twin (:attr:`Scoring.prepare_np`), the formula for ``explain`` and the
viewer's name live in the same entry, so adding a scoring is one :func:`register_scoring` call::

    register_scoring(Scoring(
        name="pow075", factor=lambda d_k, tau=None: d_k ** -0.75,
        title="q·k / d_k^0.75", latex=r"\\frac{q \\cdot k}{d_k^{0.75}}",
        words={"en": "Scoring: the dot product divided by d_k to the power 0.75.",
               "zh": "打分方式：点积除以 d_k 的 0.75 次方。"}))

A scoring with learnable parts in a module (cosine's logit scale per head, qknorm's LayerNorms)
gives a :class:`Learnable`: what to create on the module, and how the module's parameters take
the place of the functional preparation or temperature.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Union, cast

import numpy as np
import torch
from torch import nn

from .errors import ConfigError
from .i18n import error
from .rownorm import layer_norm_rows, unit_rows
from .wording import phrase

Tensor = torch.Tensor
Factor = Union[float, Tensor, np.ndarray]

#: Default temperature τ of cosine scoring (Swin V2 starts its learnable logit scale at 1/τ = 10).
DEFAULT_COSINE_TEMPERATURE = 0.1

#: ε of the functional normalisations (cosine's L2 norm, qknorm's LayerNorm).
DEFAULT_EPS = 1e-6
HALF = (torch.float16, torch.bfloat16)


@dataclass(frozen=True)
class Learnable:
    """The learnable parts of a scoring inside an attention module.

    ``create(n_heads, d_head, options)`` returns ``{attribute name: nn.Parameter | nn.Module}``
    that the module sets on itself (so the state-dict keys are ``logit_scale``, ``q_norm.weight``,
    …); ``options`` holds the module's ``cosine_temperature`` and ``layer_norm_eps``.
    ``prepare(module, q, k)`` replaces :attr:`Scoring.prepare` and ``temperature(module)`` gives τ
    (e.g. ``(H, 1, 1)``) in place of the call's ``temperature``.
    """

    create: Callable[[int, int, Mapping[str, Any]], dict]
    prepare: Optional[Callable[[nn.Module, Tensor, Tensor], tuple[Tensor, Tensor]]] = None
    temperature: Optional[Callable[[nn.Module], Tensor]] = None


@dataclass(frozen=True)
class Scoring:
    """One scoring: how q and k are prepared, the factor on their dot product, and its words.

    Args:
        name: the ``scoring=`` value.
        factor: ``factor(d_k, temperature)`` → the number (or tensor, broadcastable to the
            scores) that multiplies ``q'·k'``. Plain arithmetic, so that it serves torch tensors,
            NumPy arrays and floats alike. ``temperature`` is None unless :attr:`uses_temperature`.
        title: short name for the viewer and tables, e.g. ``"q·k / √d_k"``.
        latex: the score as LaTeX, in q, k, d_k (and τ).
        words: one sentence per language (``"en"``, ``"zh"``) for ``explain`` (inline TeX in ``$…$``).
        prepare: ``prepare(q, k, eps)`` → q', k' (torch); None = unchanged.
        prepare_np: its float64 NumPy twin; None = unchanged.
        uses_temperature: the factor is ``1/τ`` with τ from the call (``temperature=``).
        default_temperature: τ when the call gives none.
        learnable: the module's learnable parts, if any.
        source: where the scoring comes from (a paper), for tables.
    """

    name: str
    factor: Callable[..., Factor]
    title: str = ""
    latex: str = ""
    words: Mapping[str, str] = field(default_factory=dict)
    prepare: Optional[Callable[[Tensor, Tensor, float], tuple[Tensor, Tensor]]] = None
    prepare_np: Optional[Callable[[np.ndarray, np.ndarray, float], tuple[np.ndarray, np.ndarray]]] = None
    uses_temperature: bool = False
    default_temperature: Optional[float] = None
    learnable: Optional[Learnable] = None
    source: str = ""

    def factor_for(self, d_k: int, temperature: Union[None, float, Tensor, np.ndarray] = None) -> Factor:
        """The factor for keys of width ``d_k`` (an empty dot product, d_k = 0, is 0 whatever
        the factor: d_k is taken as 1 there so that no factor divides by zero)."""
        if self.uses_temperature and temperature is None:
            temperature = self.default_temperature
        return self.factor(max(int(d_k), 1), temperature if self.uses_temperature else None)

    def prepare_qk(self, q: Tensor, k: Tensor, eps: float = DEFAULT_EPS) -> tuple[Tensor, Tensor]:
        """q', k' of the functional form (no learnable parts), in the inputs' dtype. Half-precision
        inputs are prepared in float32 and rounded once, as the blockwise kernels prepare them: a
        bfloat16 norm and division round twice, which doubled cosine's error against float64
        (0.021 against SDPA's 0.009 on q', k' rounded once; benchmarks/cuda_check.py, CPU and CUDA)."""
        if self.prepare is None:
            return q, k
        if q.dtype in HALF and k.dtype in HALF:
            q2, k2 = self.prepare(q.float(), k.float(), eps)  # (..., L, d_k), (..., S, d_k)
            return q2.to(q.dtype), k2.to(k.dtype)
        return self.prepare(q, k, eps)

    def prepare_qk_np(self, q: np.ndarray, k: np.ndarray, eps: float = DEFAULT_EPS) -> tuple[np.ndarray, np.ndarray]:
        return (q, k) if self.prepare_np is None else self.prepare_np(q, k, eps)


_REGISTRY: dict[str, Scoring] = {}


def add_to_registry(registry: dict, name: str, entry, what: str, replace: bool):
    """``registry[name] = entry`` unless ``name`` is taken and ``replace`` is False (then
    ConfigError naming the ``what`` and how to redefine it); returns ``entry``. The one rule of
    attnscope's registries (scorings, position schemes)."""
    if name in registry and not replace:
        raise error(ConfigError, "errors.core_registered", what=phrase("errors.core_registry", what), name=repr(name))
    registry[name] = entry
    return entry


def remove_from_registry(registry: dict, builtin, name: str, what: str) -> None:
    """Drop ``registry[name]`` (nothing if absent) unless ``name`` is one of ``builtin`` (then
    ConfigError): the other rule of attnscope's registries."""
    if name in builtin:
        raise error(ConfigError, "errors.core_builtin", what=phrase("errors.core_registry", what), name=repr(name))
    registry.pop(name, None)


def register_scoring(scoring: Scoring, *, replace: bool = False) -> Scoring:
    """Add a scoring; every kernel, module and the reference then accept ``scoring=name``."""
    if not isinstance(scoring, Scoring):
        raise error(ConfigError, "errors.core_scoring_type", type=type(scoring).__name__)
    if not scoring.name.isidentifier():
        raise error(ConfigError, "errors.core_scoring_name", name=repr(scoring.name))
    return add_to_registry(_REGISTRY, scoring.name, scoring, "scoring", replace)


def unregister_scoring(name: str) -> None:
    """Remove a scoring added by :func:`register_scoring` (the built-in ones stay)."""
    remove_from_registry(_REGISTRY, BUILTIN, name, "scoring")


def get_scoring(name: Union[str, Scoring]) -> Scoring:
    """The registered scoring of that name; ConfigError listing the choices otherwise."""
    if isinstance(name, Scoring):
        return name
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise error(ConfigError, "errors.core_unknown_scoring", name=repr(name), choices=", ".join(_REGISTRY)) from None


class ScoringNames(Sequence):
    """A live, read-only view of the registered names, in registration order (a tuple's API)."""

    def __getitem__(self, i):
        return tuple(_REGISTRY)[i]

    def __len__(self) -> int:
        return len(_REGISTRY)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in _REGISTRY

    def __iter__(self):
        return iter(tuple(_REGISTRY))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, (tuple, list, ScoringNames)) and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(tuple(_REGISTRY))


#: Names of every registered scoring; stays current as scorings are registered.
SCORINGS = ScoringNames()


# ----------------------------------------------------------------------------------------------
# the built-in scorings
# ----------------------------------------------------------------------------------------------

def _both(rows: Callable) -> Callable:
    """The preparation that applies ``rows(x, eps)`` over the last axis to q and k alike: (..., L|S, d_k) each."""
    return lambda q, k, eps: (rows(q, eps), rows(k, eps))


#: float64 rows with an entry above this are divided by their largest |entry| before a norm or a
#: variance (their squares would overflow and the row would silently become 0).
_HUGE = 1e150


def _huge_rows(x: np.ndarray) -> Optional[np.ndarray]:
    """(..., 1): each row's largest |entry| where it is above _HUGE, else 1; None when no row is."""
    if x.size == 0:
        return None
    m = np.abs(x).max(-1, keepdims=True)
    big = m > _HUGE
    return np.where(big, m, 1.0) if big.any() else None


def _unit_rows(x: np.ndarray, eps: float) -> np.ndarray:
    """x / max(‖x‖, ε) over the last axis, as F.normalize (huge rows computed as (x/s)/max(‖x/s‖, ε/s))."""
    s = _huge_rows(x)
    if s is None:
        return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), eps)
    y = x / s
    return y / np.maximum(np.linalg.norm(y, axis=-1, keepdims=True), eps / s)


def _layer_norm_rows(x: np.ndarray, eps: float) -> np.ndarray:
    """(x − mean) / √(var + ε) over the last axis, no affine (huge rows computed on x/s, ε/s²)."""
    s = _huge_rows(x)
    if s is None:
        return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)
    y = x / s
    centred = y - y.mean(-1, keepdims=True)
    spread = np.sqrt(y.var(-1, keepdims=True) + eps / s**2)  # ε/s² may underflow to 0
    return np.divide(centred, spread, out=np.zeros_like(centred), where=centred != 0)


def check_positive(name: str, x) -> float:
    """``x`` as a float if it is a positive finite number, else ConfigError naming ``name``."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or not (math.isfinite(x) and float(x) > 0):
        raise error(ConfigError, "errors.core_positive_finite", name=name, value=repr(x))
    return float(x)


def _positive_option(options: Mapping[str, Any], name: str, default: float) -> float:
    """``options[name]`` (else ``default``): a positive finite number, else ConfigError naming it."""
    return check_positive(name, options.get(name, default))


def _cosine_parameters(n_heads: int, d_head: int, options: Mapping[str, Any]) -> dict:
    tau = _positive_option(options, "cosine_temperature", DEFAULT_COSINE_TEMPERATURE)
    # Learnable log(1/τ) per head, clamped at 1/τ ≤ 100 as Swin V2 does.
    return {"logit_scale": nn.Parameter(torch.full((n_heads, 1, 1), math.log(1.0 / float(tau))))}


def _cosine_temperature(m: nn.Module) -> Tensor:
    logit_scale = cast(Tensor, m.logit_scale)  # the parameter _cosine_parameters made on m
    return torch.exp(-logit_scale.clamp(max=math.log(100.0)))  # (H, 1, 1) = τ


def _qknorm_parameters(n_heads: int, d_head: int, options: Mapping[str, Any]) -> dict:
    # NaN or ε ≤ 0 made the LayerNorms NaN: NaN weights, and an output of W_O's bias alone by SDPA
    eps = _positive_option(options, "layer_norm_eps", DEFAULT_EPS)
    return {"q_norm": nn.LayerNorm(d_head, eps=eps), "k_norm": nn.LayerNorm(d_head, eps=eps)}


def _qknorm_module_prepare(m: nn.Module, q: Tensor, k: Tensor) -> tuple[Tensor, Tensor]:
    q_norm, k_norm = cast(nn.LayerNorm, m.q_norm), cast(nn.LayerNorm, m.k_norm)  # made by _qknorm_parameters
    return q_norm(q), k_norm(k)  # learnable LayerNorm over d_head


BUILTIN = ("scaled", "unscaled", "inv_d", "cosine", "qknorm")

register_scoring(Scoring(
    name="scaled", factor=lambda d_k, tau=None: 1.0 / math.sqrt(d_k),
    title="q·k / √d_k", latex=r"\frac{q \cdot k}{\sqrt{d_k}}", source="Vaswani et al. 2017 (the default)",
    words={"en": "Scoring: the dot product of $q$ and $k$ divided by $\\sqrt{d_k}$.",
           "zh": "打分方式：$q$ 与 $k$ 的点积除以 $\\sqrt{d_k}$。"}))
register_scoring(Scoring(
    name="unscaled", factor=lambda d_k, tau=None: 1.0,
    title="q·k", latex=r"q \cdot k", source="what the third article warns of",
    words={"en": "Scoring: unscaled ($S' = S$, no division by $\\sqrt{d_k}$).",
           "zh": "打分方式：不缩放（$S' = S$，不除以 $\\sqrt{d_k}$）。"}))
register_scoring(Scoring(
    name="inv_d", factor=lambda d_k, tau=None: 1.0 / d_k,
    title="q·k / d_k", latex=r"\frac{q \cdot k}{d_k}", source="μP (Yang et al. 2022)",
    words={"en": "Scoring: divided by $d_k$ instead of $\\sqrt{d_k}$.",
           "zh": "打分方式：除以 $d_k$ 而不是 $\\sqrt{d_k}$。"}))
register_scoring(Scoring(
    name="cosine", factor=lambda d_k, tau: 1.0 / tau, uses_temperature=True,
    default_temperature=DEFAULT_COSINE_TEMPERATURE,
    prepare=_both(unit_rows), prepare_np=_both(_unit_rows),  # as F.normalize(·, dim=-1)
    title="cos(q, k) / τ", latex=r"\frac{\cos(q, k)}{\tau}", source="Swin Transformer V2",
    learnable=Learnable(create=_cosine_parameters, temperature=_cosine_temperature),
    words={"en": "Scoring: cosine similarity of $q$ and $k$ divided by a temperature $\\tau$.",
           "zh": "打分方式：$q$ 与 $k$ 的余弦相似度除以温度 $\\tau$。"}))
register_scoring(Scoring(
    name="qknorm", factor=lambda d_k, tau=None: 1.0 / math.sqrt(d_k),
    prepare=_both(layer_norm_rows), prepare_np=_both(_layer_norm_rows),  # as F.layer_norm, no affine
    title="LN(q)·LN(k) / √d_k", latex=r"\frac{\mathrm{LN}(q) \cdot \mathrm{LN}(k)}{\sqrt{d_k}}", source="ViT-22B",
    learnable=Learnable(create=_qknorm_parameters, prepare=_qknorm_module_prepare),
    words={"en": "Scoring: $q$ and $k$ are layer-normalised first, then divided by $\\sqrt{d_k}$.",
           "zh": "打分方式：先对 $q$ 和 $k$ 做层归一化，再除以 $\\sqrt{d_k}$。"}))
