"""What a toy input may add to plain attention, as today's decoders do (:class:`Modern`):

=========================  =====================================================================
key                        meaning
=========================  =====================================================================
``rope: {base: 10000}``    rotary positions: pair i of q and k turns by position · base^(−2i/d);
                           ``pairing: adjacent`` (features 2i, 2i + 1: the RoFormer paper,
                           the default) or ``half`` (i, i + d/2: Hugging Face's rotate_half, what
                           Llama/Qwen2/Mistral/Gemma checkpoints use); ``positions: [...]`` (default
                           0, 1, 2, …)
``n_heads``, ``n_kv_heads`` W_Q holds n_heads heads, W_K and W_V n_kv_heads (grouped-query
                           attention; 1 = multi-query); ``head`` picks the query head worked out
``window: W``              sliding window: a query sees itself and the W − 1 keys before it (causal)
``qk_norm``                RMSNorm of each head's q and k over its d features before the rotation:
                           ``true``, or ``{eps: 1e-6, offset: 1, q_weight: [...], k_weight: [...]}``
                           (offset 1 is Gemma's (1 + w))
``query_pre_attn_scalar``  Gemma's scale: the scores are multiplied by query_pre_attn_scalar^(−½)
                           instead of 1/√d_k
=========================  =====================================================================

:func:`parse_modern` reads these keys; every problem is one InputError naming the key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .. import reference as R
from ..errors import InputError
from ..i18n import error
from . import inputs
from .places import Where, at_key, dotted, kind

#: The keys of this module, by their normalised spelling.
KEYS = {"rope": "rope", "nheads": "n_heads", "nkvheads": "n_kv_heads", "head": "head", "window": "window",
        "qknorm": "qk_norm", "querypreattnscalar": "query_pre_attn_scalar"}

DEFAULT_RMS_EPS = 1e-6


@dataclass
class Modern:
    """The decoder features of a toy input (all off by default)."""

    rope_base: Optional[float] = None
    pairing: str = "adjacent"
    positions: Optional[list] = None        # None: 0 … L − 1
    n_heads: int = 1
    n_kv_heads: int = 1
    head: int = 0
    window: Optional[int] = None
    qk_norm: bool = False
    rms_eps: float = DEFAULT_RMS_EPS
    rms_offset: float = 0.0
    q_weight: Optional[np.ndarray] = None
    k_weight: Optional[np.ndarray] = None
    query_pre_attn_scalar: Optional[float] = None

    @property
    def any(self) -> bool:
        return (self.rope_base is not None or self.n_heads > 1 or self.window is not None or self.qk_norm
                or self.query_pre_attn_scalar is not None)

    @property
    def kv_head(self) -> int:
        return R.kv_head(self.head, self.n_heads, self.n_kv_heads)

    def pos(self, L: int) -> np.ndarray:
        return np.arange(L, dtype=np.float64) if self.positions is None else np.asarray(self.positions, dtype=np.float64)

    def inv_freq(self, d: int) -> np.ndarray:
        assert self.rope_base is not None  # asked only with rotary positions
        return R.rope_inv_freq(d, self.rope_base)

    # the worked head's columns (Decimal or float arrays; the checker runs them on a learner's numbers)
    def q_head(self, Q: np.ndarray) -> np.ndarray:
        """Query head ``head``'s columns of Q (L, n_heads·d) → (L, d)."""
        d = Q.shape[1] // self.n_heads
        return Q[:, self.head * d:(self.head + 1) * d]

    def kv_slice(self, M: np.ndarray) -> np.ndarray:
        """The columns of the shared k/v head in K or V (L, n_kv_heads·d) → (L, d)."""
        d = M.shape[1] // self.n_kv_heads
        return M[:, self.kv_head * d:(self.kv_head + 1) * d]

    def factor(self) -> Optional[float]:
        """query_pre_attn_scalar^(−½), or None (the scoring's own factor)."""
        return None if self.query_pre_attn_scalar is None else 1.0 / math.sqrt(self.query_pre_attn_scalar)

    def to_meta(self) -> dict:
        out: dict = {}
        if self.rope_base is not None:
            out["rope"] = {"base": self.rope_base, "pairing": self.pairing, "positions": self.positions}
        if self.n_heads > 1:
            out.update(n_heads=self.n_heads, n_kv_heads=self.n_kv_heads, head=self.head, kv_head=self.kv_head)
        if self.window is not None:
            out["window"] = self.window
        if self.qk_norm:
            out["qk_norm"] = {"eps": self.rms_eps, "offset": self.rms_offset}
        if self.query_pre_attn_scalar is not None:
            out["query_pre_attn_scalar"] = self.query_pre_attn_scalar
        return out


def _float(x) -> float:
    return float(getattr(x, "value", x))  # a number, or a Written (a string such as "1e-6")


def _positive(value, where: Where) -> float:
    x = _float(inputs.number(value, where))
    if not math.isfinite(x) or x <= 0:
        raise error(InputError, "errors.explain_positive", where=where, value=x)
    return x


def parse_modern(fields: dict, source: Where) -> Modern:
    """``fields``: {canonical key: (key as written, plain value)} of the keys in :data:`KEYS`."""
    m = Modern()
    at = {name: at_key(source, key) for name, (key, _) in fields.items()}  # where each key is written
    val = {name: value for name, (_, value) in fields.items()}
    if "rope" in fields:
        value, where = val["rope"], at["rope"]
        if not isinstance(value, dict):
            raise error(InputError, "errors.explain_rope_not_mapping", where=where, kind=kind(value))
        norm = {str(k).lower(): (k, v) for k, v in value.items()}
        extra = [k for k in norm if k not in ("base", "pairing", "positions")]
        if extra:
            raise error(InputError, "errors.explain_rope_unknown_key", where=where, name=repr(norm[extra[0]][0]))
        if "base" not in norm:
            raise error(InputError, "errors.explain_rope_no_base", where=where)
        m.rope_base = _positive(norm["base"][1], dotted(where, "base"))
        if "pairing" in norm:
            p = str(inputs.plain(norm["pairing"][1]))
            if p not in R.PAIRINGS:
                raise error(InputError, "errors.explain_rope_pairing", where=dotted(where, "pairing"), value=repr(p))
            m.pairing = p
        if "positions" in norm:
            pos = inputs.vector(norm["positions"][1], dotted(where, "positions"))
            if any(p < 0 or p != int(p) for p in pos):
                raise error(InputError, "errors.explain_rope_positions", where=dotted(where, "positions"),
                            value=pos.tolist())
            m.positions = [int(p) for p in pos]
    if "n_heads" in fields:
        m.n_heads = inputs.whole_number(val["n_heads"], at["n_heads"], 1)
        m.n_kv_heads = m.n_heads
    if "n_kv_heads" in fields:
        m.n_kv_heads = inputs.whole_number(val["n_kv_heads"], at["n_kv_heads"], 1)
        if "n_heads" not in fields:
            raise error(InputError, "errors.explain_kv_needs_heads", where=at["n_kv_heads"], n=m.n_kv_heads)
        inputs.check_kv_heads(m.n_heads, m.n_kv_heads, at["n_kv_heads"])
    if "head" in fields:
        m.head = inputs.whole_number(val["head"], at["head"], 0)
        if m.head >= m.n_heads:
            raise error(InputError, "errors.explain_head_range", where=at["head"], head=m.head, n=m.n_heads,
                        last=m.n_heads - 1)
    if "window" in fields:
        v = inputs.plain(val["window"])
        if not inputs.is_whole(v) or int(v) <= 0:
            raise error(InputError, "errors.explain_window", where=at["window"], value=repr(v))
        m.window = int(v)
    if "qk_norm" in fields:
        value, where = val["qk_norm"], at["qk_norm"]
        if isinstance(value, bool):
            m.qk_norm = value
        elif isinstance(value, dict):
            m.qk_norm = True
            norm = {str(k).lower().replace("-", "_"): (k, v) for k, v in value.items()}
            extra = [k for k in norm if k not in ("eps", "offset", "q_weight", "k_weight")]
            if extra:
                raise error(InputError, "errors.explain_qk_norm_unknown_key", where=where, name=repr(norm[extra[0]][0]))
            if "eps" in norm:
                m.rms_eps = _positive(norm["eps"][1], dotted(where, "eps"))
            if "offset" in norm:
                off = _float(inputs.number(norm["offset"][1], dotted(where, "offset")))
                if off not in (0.0, 1.0):
                    raise error(InputError, "errors.explain_qk_norm_offset", where=dotted(where, "offset"), value=off)
                m.rms_offset = off
            for w in ("q_weight", "k_weight"):
                if w in norm:
                    setattr(m, w, inputs.vector(norm[w][1], dotted(where, w)))
        else:
            raise error(InputError, "errors.explain_qk_norm_kind", where=where, kind=kind(value))
    if "query_pre_attn_scalar" in fields:
        m.query_pre_attn_scalar = _positive(val["query_pre_attn_scalar"], at["query_pre_attn_scalar"])
    return m


def check_sizes(m: Modern, *, L: int, cols: dict, scoring: str, causal: bool, source: Where) -> int:
    """Check the matrices against the heads, the rotation and the norm; return d_head. ``cols``: the
    number of columns of the q, k and v matrices by their keys, in that order (W_Q, W_K, W_V or Q, K, V)."""
    (q_key, q_cols), (k_key, k_cols), (v_key, v_cols) = cols.items()
    if q_cols % m.n_heads:
        raise error(InputError, "errors.explain_q_cols", where=at_key(source, q_key), name=q_key, cols=q_cols,
                    H=m.n_heads)
    d = q_cols // m.n_heads
    if k_cols != m.n_kv_heads * d:
        raise error(InputError, "errors.explain_k_cols" if m.n_kv_heads > 1 else "errors.explain_k_cols_one",
                    where=at_key(source, k_key), name=k_key, cols=k_cols, Hkv=m.n_kv_heads, need=m.n_kv_heads * d)
    if v_cols % m.n_kv_heads:
        raise error(InputError, "errors.explain_v_cols", where=at_key(source, v_key), name=v_key, cols=v_cols,
                    Hkv=m.n_kv_heads)
    if m.rope_base is not None:
        if d % 2:
            raise error(InputError, "errors.explain_rope_odd", where=at_key(source, "rope"), d=d)
        if m.positions is not None and len(m.positions) != L:
            raise error(InputError, "errors.explain_rope_positions_count", where=at_key(source, "rope.positions"),
                        n=len(m.positions), L=L)
    if m.qk_norm:
        if scoring != "scaled":
            raise error(InputError, "errors.explain_qk_norm_scoring", where=at_key(source, "qk_norm"),
                        scoring=repr(scoring))
        for w in ("q_weight", "k_weight"):
            vec = getattr(m, w)
            if vec is not None and len(vec) != d:
                raise error(InputError, "errors.explain_qk_norm_weight", where=at_key(source, f"qk_norm.{w}"),
                            n=len(vec), d=d)
    if m.query_pre_attn_scalar is not None and scoring != "scaled":
        raise error(InputError, "errors.explain_scalar_scoring", where=at_key(source, "query_pre_attn_scalar"),
                    scoring=repr(scoring))
    if m.window is not None and not causal:
        raise error(InputError, "errors.explain_window_causal", where=at_key(source, "window"))
    return d
