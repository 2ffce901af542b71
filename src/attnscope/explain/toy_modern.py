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
from . import inputs

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
    def group(self) -> int:
        return self.n_heads // self.n_kv_heads

    @property
    def kv_head(self) -> int:
        return R.kv_head(self.head, self.n_heads, self.n_kv_heads)

    def pos(self, L: int) -> np.ndarray:
        return np.arange(L, dtype=np.float64) if self.positions is None else np.asarray(self.positions, dtype=np.float64)

    def inv_freq(self, d: int) -> np.ndarray:
        assert self.rope_base is not None  # asked only with rotary positions
        return R.rope_inv_freq(d, self.rope_base)

    # the steps, float64 (also run by the checker on a learner's own numbers) -------------------
    def q_head(self, Q: np.ndarray) -> np.ndarray:
        """Query head ``head``'s columns of Q (L, n_heads·d) → (L, d)."""
        d = Q.shape[1] // self.n_heads
        return Q[:, self.head * d:(self.head + 1) * d]

    def kv_slice(self, M: np.ndarray) -> np.ndarray:
        """The columns of the shared k/v head in K or V (L, n_kv_heads·d) → (L, d)."""
        d = M.shape[1] // self.n_kv_heads
        return M[:, self.kv_head * d:(self.kv_head + 1) * d]

    def rms(self, x: np.ndarray, which: str) -> np.ndarray:
        """RMSNorm of each row of ``x`` with the q or k weight (``which`` "q" or "k")."""
        w = self.q_weight if which == "q" else self.k_weight
        if w is None and self.rms_offset:
            w = np.zeros(x.shape[-1])  # Gemma's identity: 1 + 0
        return R.rms_norm(x, w, self.rms_eps, self.rms_offset)

    def rotate(self, x: np.ndarray) -> np.ndarray:
        """Each row of ``x`` (L, d) turned at its position."""
        return R.rotate(x, self.pos(x.shape[0]), self.inv_freq(x.shape[1]), self.pairing)

    def operands(self, Q: np.ndarray, K: np.ndarray, V: np.ndarray) -> dict:
        """Every step from the full Q, K, V to the dot product's operands: ``Qh``, ``Kh``, ``Vh``
        (the worked head), ``Q_normed``/``K_normed`` (with QK-norm), ``Q_rot``/``K_rot`` (with
        rotary positions), and ``q``/``k``, the operands."""
        out = {"Qh": self.q_head(Q), "Kh": self.kv_slice(K), "Vh": self.kv_slice(V)}
        q, k = out["Qh"], out["Kh"]
        if self.qk_norm:
            q = out["Q_normed"] = self.rms(q, "q")
            k = out["K_normed"] = self.rms(k, "k")
        if self.rope_base is not None:
            q = out["Q_rot"] = self.rotate(q)
            k = out["K_rot"] = self.rotate(k)
        out.update(q=q, k=k)
        return out

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


def _positive(value, where: str) -> float:
    x = _float(inputs.number(value, where))
    if not math.isfinite(x) or x <= 0:
        raise InputError(f"{where}: must be a positive number, got {x}")
    return x


def parse_modern(fields: dict, source: str) -> Modern:
    """``fields``: {canonical key: (key as written, plain value)} of the keys in :data:`KEYS`."""
    m = Modern()
    if "rope" in fields:
        key, value = fields["rope"]
        where = f"{source}, key {key}"
        if not isinstance(value, dict):
            raise InputError(f"{where}: expected a mapping such as {{base: 10000}}, got {inputs.kind_of(value)}")
        norm = {str(k).lower(): (k, v) for k, v in value.items()}
        extra = [k for k in norm if k not in ("base", "pairing", "positions")]
        if extra:
            raise InputError(f"{where}: unknown key {norm[extra[0]][0]!r}; rope has base, and optionally pairing "
                             "(adjacent or half) and positions")
        if "base" not in norm:
            raise InputError(f"{where}: the rotary base is missing; write it as rope: {{base: 10000}} (pair i turns "
                             "by position · base^(−2i/d) radians)")
        m.rope_base = _positive(norm["base"][1], f"{where}.base")
        if "pairing" in norm:
            p = str(inputs.plain(norm["pairing"][1]))
            if p not in R.PAIRINGS:
                raise InputError(f"{where}.pairing: expected adjacent (features 2i, 2i+1) or half (i, i + d/2), got {p!r}")
            m.pairing = p
        if "positions" in norm:
            pos = inputs.vector(norm["positions"][1], f"{where}.positions")
            if any(p < 0 or p != int(p) for p in pos):
                raise InputError(f"{where}.positions: positions are whole numbers ≥ 0, got {pos.tolist()}")
            m.positions = [int(p) for p in pos]
    if "n_heads" in fields:
        key, value = fields["n_heads"]
        m.n_heads = inputs.whole_number(value, f"{source}, key {key}", 1)
        m.n_kv_heads = m.n_heads
    if "n_kv_heads" in fields:
        key, value = fields["n_kv_heads"]
        m.n_kv_heads = inputs.whole_number(value, f"{source}, key {key}", 1)
        if "n_heads" not in fields:
            raise InputError(f"{source}, key {key}: give n_heads too (the query heads that share the "
                             f"{m.n_kv_heads} key/value heads)")
        if m.n_heads % m.n_kv_heads:
            raise InputError(f"{source}, key {key}: n_heads ({m.n_heads}) is not a multiple of n_kv_heads "
                             f"({m.n_kv_heads}); each key/value head serves n_heads / n_kv_heads query heads, "
                             f"so n_kv_heads must divide n_heads (e.g. "
                             f"{', '.join(str(k) for k in range(1, m.n_heads + 1) if m.n_heads % k == 0)})")
    if "head" in fields:
        key, value = fields["head"]
        m.head = inputs.whole_number(value, f"{source}, key {key}", 0)
        if m.head >= m.n_heads:
            raise InputError(f"{source}, key {key}: head {m.head} is out of range; there are {m.n_heads} query "
                             f"heads (0..{m.n_heads - 1})")
    if "window" in fields:
        key, value = fields["window"]
        v = inputs.plain(value)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or float(v) != int(v) or int(v) <= 0:
            raise InputError(f"{source}, key {key}: the window must be a whole number ≥ 1 (a query sees itself and "
                             f"the window − 1 keys before it), got {v!r}")
        m.window = int(v)
    if "qk_norm" in fields:
        key, value = fields["qk_norm"]
        where = f"{source}, key {key}"
        if isinstance(value, bool):
            m.qk_norm = value
        elif isinstance(value, dict):
            m.qk_norm = True
            norm = {str(k).lower().replace("-", "_"): (k, v) for k, v in value.items()}
            extra = [k for k in norm if k not in ("eps", "offset", "q_weight", "k_weight")]
            if extra:
                raise InputError(f"{where}: unknown key {norm[extra[0]][0]!r}; qk_norm has eps, offset (1: Gemma's "
                                 "1 + w), q_weight and k_weight")
            if "eps" in norm:
                m.rms_eps = _positive(norm["eps"][1], f"{where}.eps")
            if "offset" in norm:
                off = _float(inputs.number(norm["offset"][1], f"{where}.offset"))
                if off not in (0.0, 1.0):
                    raise InputError(f"{where}.offset: 0 (Llama: w · x̂) or 1 (Gemma: (1 + w) · x̂), got {off}")
                m.rms_offset = off
            for w in ("q_weight", "k_weight"):
                if w in norm:
                    setattr(m, w, inputs.vector(norm[w][1], f"{where}.{w}"))
        else:
            raise InputError(f"{where}: expected true/false or a mapping (eps, offset, q_weight, k_weight), "
                             f"got {inputs.kind_of(value)}")
    if "query_pre_attn_scalar" in fields:
        key, value = fields["query_pre_attn_scalar"]
        m.query_pre_attn_scalar = _positive(value, f"{source}, key {key}")
    return m


def check_sizes(m: Modern, *, L: int, q_cols: int, k_cols: int, v_cols: int, scoring: str, causal: bool,
                source: str, q_key: str = "W_Q", k_key: str = "W_K", v_key: str = "W_V") -> int:
    """Check the matrices against the heads, the rotation and the norm; return d_head."""
    if q_cols % m.n_heads:
        raise InputError(f"{source}, key {q_key}: {q_key} has {q_cols} columns, not a multiple of n_heads = "
                         f"{m.n_heads}; each query head takes d_head of them")
    d = q_cols // m.n_heads
    if k_cols != m.n_kv_heads * d:
        raise InputError(f"{source}, key {k_key}: {k_key} has {k_cols} columns but the {m.n_kv_heads} key/value "
                         f"head{'s need' if m.n_kv_heads > 1 else ' needs'} n_kv_heads × d_head = {m.n_kv_heads * d}")
    if v_cols % m.n_kv_heads:
        raise InputError(f"{source}, key {v_key}: {v_key} has {v_cols} columns, not a multiple of n_kv_heads = "
                         f"{m.n_kv_heads}")
    if m.rope_base is not None:
        if d % 2:
            raise InputError(f"{source}, key rope: the head dimension d = {d} is odd; rotary positions turn the "
                             f"features in pairs, so d must be even (give W_Q, W_K an even number of columns per head)")
        if m.positions is not None and len(m.positions) != L:
            raise InputError(f"{source}, key rope.positions: {len(m.positions)} positions for {L} tokens; give one "
                             "per token")
    if m.qk_norm:
        if scoring != "scaled":
            raise InputError(f"{source}, key qk_norm: qk_norm (RMSNorm of q and k) and scoring {scoring!r} both "
                             "change q and k; use one of them")
        for w in ("q_weight", "k_weight"):
            vec = getattr(m, w)
            if vec is not None and len(vec) != d:
                raise InputError(f"{source}, key qk_norm.{w}: {len(vec)} numbers, but a head has d = {d} features")
    if m.query_pre_attn_scalar is not None and scoring != "scaled":
        raise InputError(f"{source}, key query_pre_attn_scalar: it replaces the 1/√d_k of scaled scoring; it does "
                         f"not combine with scoring {scoring!r}")
    if m.window is not None and not causal:
        raise InputError(f"{source}, key window: a sliding window is causal (a query sees itself and the window − 1 "
                         "keys before it); remove causal: false")
    return d
