"""A toy attention input (:class:`ToyProblem`): X with W_Q, W_K, W_V (or Q, K, V), an optional W_O,
mask, causality and scoring, read from a mapping (a YAML/JSON/TOML file, the built-in examples,
the command line) by :meth:`ToyProblem.from_mapping`, which names the file, key, row and column
of anything that does not fit."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .. import reference as R
from ..errors import ConfigError, InputError, ShapeError
from ..i18n import Msg, error
from ..scorings import DEFAULT_COSINE_TEMPERATURE, SCORINGS, get_scoring
from . import inputs
from .places import INPUT, Where, at_cell, at_key, count, kind
from .toy_modern import KEYS as MODERN_KEYS
from .toy_modern import Modern, check_sizes, parse_modern

#: Keys a toy input may have, by their normalised spelling (case, "_" and "-" ignored).
_KEYS = {"x": "X", "wq": "W_Q", "wk": "W_K", "wv": "W_V", "wo": "W_O", "q": "Q", "k": "K", "v": "V",
         "mask": "mask", "causal": "causal", "scoring": "scoring", "temperature": "temperature",
         "tokens": "tokens", "labels": "tokens", "name": "name", "description": "description", **MODERN_KEYS}


def norm_key(key: str) -> str:
    return str(key).lower().replace("_", "").replace("-", "").replace(" ", "")


def check_rows(w: np.ndarray, key: str, d_model: int, source: Where) -> None:
    """ShapeError naming ``key`` when the weight ``w`` (d_model, n) has not one row per feature of X."""
    if w.shape[0] != d_model:
        raise error(ShapeError, "errors.explain_w_rows", where=at_key(source, key), name=key,
                    count=count(w.shape[0], "row"), cols=count(d_model, "column"))


def read_fields(d, source: Where, keys: dict, refused: Optional[dict] = None, multihead: bool = False) -> dict:
    """``{canonical key: (key as written, plain value)}`` of a toy (or ``multihead``) problem mapping ``d``;
    ``keys``: normalised spelling → canonical. InputError for a ``d`` that is not a mapping, an unknown key,
    a key given twice in two spellings, and a key in ``refused`` (normalised spelling → the catalogue key
    of the reason)."""
    if not isinstance(d, dict):
        raise error(InputError, "errors.explain_mh_not_mapping" if multihead else "errors.explain_toy_not_mapping",
                    source=source, kind=kind(d))
    fields: dict = {}
    for key, value in d.items():
        nk = norm_key(key)
        if refused and nk in refused:
            raise error(InputError, "errors.explain_refused", where=at_key(source, key), why=Msg(refused[nk]))
        canon = keys.get(nk)
        if canon is None:
            raise error(InputError, "errors.explain_mh_unknown_key" if multihead else "errors.explain_toy_unknown_key",
                        source=source, name=repr(key))
        if canon in fields:
            raise error(InputError, "errors.explain_key_twice", source=source, name=repr(key), canon=canon)
        fields[canon] = (key, inputs.plain(value))
    return fields


@dataclass
class ToyProblem:
    """A toy attention input.

    Either ``X`` (L, d_model) with ``W_Q``, ``W_K`` (d_model, d_k) and ``W_V`` (d_model, d_v), or
    ``Q``, ``K`` (L, d_k) and ``V`` (L, d_v) given directly. Optional ``W_O`` (d_v, d_out), a
    boolean ``mask`` (L, L; True = may attend), ``causal``, ``scoring`` (one of SCORINGS),
    ``temperature`` (τ of cosine scoring) and token ``tokens`` (labels of the rows). ``modern``:
    what today's decoders add (rotary positions, shared k/v heads, a window, QK-norm, Gemma's
    scale; see :mod:`.toy_modern`); with several heads, Q/K/V hold every head side by side and
    the calculation works out query head ``modern.head`` with the k/v head it shares.
    """

    X: Optional[np.ndarray] = None
    W_Q: Optional[np.ndarray] = None
    W_K: Optional[np.ndarray] = None
    W_V: Optional[np.ndarray] = None
    W_O: Optional[np.ndarray] = None
    Q: Optional[np.ndarray] = None
    K: Optional[np.ndarray] = None
    V: Optional[np.ndarray] = None
    mask: Optional[np.ndarray] = None
    causal: bool = False
    scoring: str = "scaled"
    temperature: float = DEFAULT_COSINE_TEMPERATURE
    tokens: list = field(default_factory=list)
    name: Optional[str] = None
    source: Where = INPUT
    modern: Modern = field(default_factory=Modern)

    @property
    def L(self) -> int:
        m = self.X if self.X is not None else self.Q
        assert m is not None  # a validated problem has X or Q
        return int(m.shape[0])

    @property
    def d_k(self) -> int:
        """The width of one head's q and k (all of Q's columns with one head)."""
        m = self.W_Q if self.X is not None else self.Q
        assert m is not None  # a validated problem has W_Q with X, else Q
        return int(m.shape[1]) // self.modern.n_heads

    @property
    def projected(self) -> bool:
        """True when Q, K, V are computed from X (False: given directly)."""
        return self.X is not None

    # ------------------------------------------------------------------------------------------
    @classmethod
    def from_mapping(cls, d: dict, source: Where = INPUT) -> "ToyProblem":
        """Build and validate from a mapping such as ``examples.THREE_TOKENS`` or a parsed file.

        Raises InputError (unknown/missing key, malformed matrix) or ShapeError (sizes that do not
        conform), each naming ``source`` and the key.
        """
        fields = read_fields(d, source, _KEYS)
        p = cls(source=source)
        for canon in ("X", "W_Q", "W_K", "W_V", "W_O", "Q", "K", "V"):
            if canon in fields:
                key, value = fields[canon]
                setattr(p, canon, inputs.matrix(value, at_key(source, key)))
        if "mask" in fields:
            key, value = fields["mask"]
            m = inputs.matrix([[_bool01(v, at_cell(at_key(source, key), i, j)) for j, v in
                                enumerate(r)] if isinstance(r, list) else r for i, r in enumerate(value)]
                              if isinstance(value, list) else value, at_key(source, key))
            p.mask = m.astype(bool)
        if "causal" in fields:
            key, value = fields["causal"]
            if not isinstance(value, bool):
                raise error(InputError, "errors.explain_expected_bool", where=at_key(source, key), value=repr(value))
            p.causal = value
        if "scoring" in fields:
            key, value = fields["scoring"]
            if value not in SCORINGS:
                raise error(ConfigError, "errors.explain_unknown_scoring", where=at_key(source, key), value=repr(value),
                            choices=", ".join(SCORINGS))
            p.scoring = value
        if "temperature" in fields:
            key, value = fields["temperature"]
            tau = inputs.number(value, at_key(source, key))
            if tau <= 0:
                raise error(InputError, "errors.explain_temperature", where=at_key(source, key), value=tau)
            p.temperature = float(tau)
        if "name" in fields:
            p.name = str(fields["name"][1])
        p.modern = parse_modern({k: v for k, v in fields.items() if k in MODERN_KEYS.values()}, source)
        if p.modern.window is not None and "causal" not in fields:
            p.causal = True  # a sliding window is causal
        p.validate()
        if "tokens" in fields:
            key, value = fields["tokens"]
            p.tokens = inputs.labels(value, at_key(source, key), p.L)
        else:
            p.tokens = [f"x{i}" for i in range(p.L)]
        return p

    def validate(self) -> None:
        """Check that every size conforms; raise ShapeError/InputError naming the keys."""
        src = self.source
        by_x = [k for k in ("X", "W_Q", "W_K", "W_V") if getattr(self, k) is not None]
        direct = [k for k in ("Q", "K", "V") if getattr(self, k) is not None]
        if by_x and direct:
            raise error(InputError, "errors.explain_toy_both", source=src, got=", ".join(by_x + direct))
        if direct:
            missing = [k for k in ("Q", "K", "V") if getattr(self, k) is None]
            if missing:
                raise error(InputError, "errors.explain_toy_missing_qkv", source=src, names=", ".join(missing))
            Q, K, V = self.Q, self.K, self.V
            assert Q is not None and K is not None and V is not None  # none is missing (just checked)
            L, d_k = Q.shape
            if K.shape[1] != d_k and self.modern.n_heads == 1:
                raise error(ShapeError, "errors.explain_toy_k_cols", where=at_key(src, "K"),
                            count=count(K.shape[1], "column"), d_k=d_k)
            if K.shape[0] != L or V.shape[0] != L:
                bad = "K" if K.shape[0] != L else "V"
                raise error(ShapeError, "errors.explain_toy_kv_rows", where=at_key(src, bad), name=bad,
                            count=count(getattr(self, bad).shape[0], "row"), L=L)
            d_v = V.shape[1]
        else:
            missing = [k for k in ("X", "W_Q", "W_K", "W_V") if getattr(self, k) is None]
            if missing:
                raise error(InputError, "errors.explain_toy_missing_x", source=src, names=", ".join(missing))
            X, W_Q, W_K, W_V = self.X, self.W_Q, self.W_K, self.W_V
            assert X is not None and W_Q is not None and W_K is not None and W_V is not None  # none is missing
            L, d_model = X.shape
            for k in ("W_Q", "W_K", "W_V"):
                check_rows(getattr(self, k), k, d_model, src)
            if W_K.shape[1] != W_Q.shape[1] and self.modern.n_heads == 1:
                raise error(ShapeError, "errors.explain_toy_wk_cols", where=at_key(src, "W_K"),
                            count=count(W_K.shape[1], "column"), n=W_Q.shape[1])
            d_v = W_V.shape[1]
        if self.modern.any:
            keys = ("Q", "K", "V") if direct else ("W_Q", "W_K", "W_V")
            check_sizes(self.modern, L=L, cols={k: getattr(self, k).shape[1] for k in keys}, scoring=self.scoring,
                        causal=self.causal, source=src)
            d_v = d_v // self.modern.n_kv_heads
            if self.W_O is not None and self.modern.n_heads > 1:
                raise error(InputError, "errors.explain_toy_wo_heads", where=at_key(src, "W_O"), head=self.modern.head,
                            n=self.modern.n_heads)
        if self.W_O is not None and self.W_O.shape[0] != d_v:
            raise error(ShapeError, "errors.explain_toy_wo_rows", where=at_key(src, "W_O"),
                        count=count(self.W_O.shape[0], "row"), cols=count(d_v, "column"))
        if self.mask is not None and self.mask.shape != (L, L):
            raise error(ShapeError, "errors.explain_toy_mask_shape", where=at_key(src, "mask"), rows=self.mask.shape[0],
                        cols=self.mask.shape[1], L=L)
        if self.scoring not in SCORINGS:
            raise error(ConfigError, "errors.explain_unknown_scoring", where=src, value=repr(self.scoring),
                        choices=", ".join(SCORINGS))

    def allowed(self) -> np.ndarray:
        """(L, L) bool, True where query i may look at key j (mask and causal combined)."""
        ok = np.ones((self.L, self.L), dtype=bool)
        if self.mask is not None:
            ok &= self.mask
        if self.causal:
            ok &= ~np.triu(np.ones((self.L, self.L), dtype=bool), k=1)
        return ok & self.window_allowed()

    def window_allowed(self) -> np.ndarray:
        """(L, L) bool: False where the sliding window hides key j from query i (i − j ≥ window)."""
        if self.modern.window is None:
            return np.ones((self.L, self.L), dtype=bool)
        return R.window_mask(self.L, self.L, self.modern.window, causal=False)

    def factor(self) -> float:
        """The number that multiplies the raw scores (1/√d_k for "scaled"; the scoring's own;
        query_pre_attn_scalar^(−½) when given)."""
        f = self.modern.factor()
        if f is not None:
            return f
        tau = self.temperature if get_scoring(self.scoring).uses_temperature else None  # a default τ: only cosine's
        return float(R.score_factor(self.scoring, self.d_k, temperature=tau))


def _bool01(v, where: Where):
    v = inputs.plain(v)
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if v in (0, 1):
        return float(v)
    raise error(InputError, "errors.explain_mask_entry", where=where, value=repr(v))
