"""A multi-head toy input (:class:`MultiHeadProblem`): X, the fused W_QKV (or W_Q, W_K, W_V side by
side for every head), an optional W_O, ``n_heads`` and ``n_kv_heads``, read from a mapping by
:meth:`MultiHeadProblem.from_mapping`.

A toy mapping is a multi-head problem (:func:`is_multihead`) when it has ``W_QKV``, or ``heads:
all``, or ``n_heads`` > 1 together with ``W_O`` and no ``head`` (W_O mixes every head, so every
head is needed; with ``head: h`` a toy input works one head, see :mod:`.toy_modern`).

Layouts (row vectors, ``Q = X·W_Q``; ``H`` query heads, ``H_kv`` key/value heads of ``d`` features)::

    W_QKV  (d_model, (H + 2·H_kv)·d)   columns [W_Q | W_K | W_V]       GPT-2's c_attn, Phi-3's qkv_proj
    W_Q    (d_model, H·d)              head i: columns i·d … (i + 1)·d − 1
    W_K    (d_model, H_kv·d)           key/value head g: columns g·d …; query head i reads g = i // (H / H_kv)
    W_V    (d_model, H_kv·d_v)
    W_O    (H·d_v, d_out)              rows i·d_v … meet head i's output

Every problem is one InputError or ShapeError naming the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .. import reference as R
from ..errors import InputError, ShapeError
from ..i18n import Msg, error
from . import inputs
from .places import INPUT, Where, at_key, count
from .toy_input import ToyProblem, check_rows, norm_key, read_fields

#: Keys of a multi-head input (normalised spelling → canonical).
KEYS = {"x": "X", "wqkv": "W_QKV", "wq": "W_Q", "wk": "W_K", "wv": "W_V", "wo": "W_O", "nheads": "n_heads",
        "nkvheads": "n_kv_heads", "heads": "heads", "tokens": "tokens", "labels": "tokens", "name": "name",
        "description": "description", "mask": "mask", "causal": "causal", "scoring": "scoring",
        "temperature": "temperature", "window": "window"}

#: Keys passed on, as written, to each head's single-head problem (:class:`ToyProblem`).
HEAD_KEYS = ("mask", "causal", "scoring", "temperature", "window")

#: Toy keys that a multi-head problem refuses, with the catalogue key of the reason.
REFUSED = {"head": "errors.explain_refused_head", "q": "errors.explain_refused_qkv", "k": "errors.explain_refused_qkv",
           "v": "errors.explain_refused_qkv", "rope": "errors.explain_refused_rope",
           "qknorm": "errors.explain_refused_qk_norm", "querypreattnscalar": "errors.explain_refused_scalar"}


def is_multihead(d) -> bool:
    """Whether the toy mapping ``d`` asks for every head (see the module doc)."""
    if not isinstance(d, dict):
        return False
    keys = {norm_key(k): v for k, v in d.items()}
    if "wqkv" in keys or "heads" in keys:
        return True
    n = inputs.plain(keys.get("nheads"))
    return "wo" in keys and "head" not in keys and isinstance(n, (int, float)) and not isinstance(n, bool) and n > 1


@dataclass
class MultiHeadProblem:
    """Every head of attention on a toy input (see the module doc for the layouts)."""

    X: np.ndarray
    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    n_heads: int
    n_kv_heads: int
    W_QKV: Optional[np.ndarray] = None
    W_O: Optional[np.ndarray] = None
    tokens: list = field(default_factory=list)
    name: Optional[str] = None
    source: Where = INPUT
    head_spec: dict = field(default_factory=dict)  # HEAD_KEYS as given, for each head's ToyProblem

    @property
    def L(self) -> int:
        return int(self.X.shape[0])

    @property
    def d_model(self) -> int:
        return int(self.X.shape[1])

    @property
    def d_head(self) -> int:
        return int(self.W_Q.shape[1]) // self.n_heads

    @property
    def d_v(self) -> int:
        return int(self.W_V.shape[1]) // self.n_kv_heads

    @property
    def group(self) -> int:
        return self.n_heads // self.n_kv_heads

    @property
    def fused(self) -> bool:
        return self.W_QKV is not None

    def kv_head(self, h: int) -> int:
        return R.kv_head(h, self.n_heads, self.n_kv_heads)

    def columns(self, h: int) -> dict:
        """The column slices of query head ``h`` in Q, of its k/v head in K and V, of its output in the
        concatenation (and of W_O's rows that meet it)."""
        g = self.kv_head(h)
        return {"Q": R.head_columns(h, self.d_head), "K": R.head_columns(g, self.d_head),
                "V": R.head_columns(g, self.d_v), "concat": R.head_columns(h, self.d_v)}

    def head_problem(self, h: int, Q: np.ndarray, K: np.ndarray, V: np.ndarray,
                     source: Optional[Where] = None) -> ToyProblem:
        """Head ``h`` as a single-head problem on its own q, k, v (its column blocks of Q, K, V)."""
        c = self.columns(h)
        spec = {"Q": Q[:, c["Q"]].tolist(), "K": K[:, c["K"]].tolist(), "V": V[:, c["V"]].tolist(),
                "tokens": list(self.tokens), **self.head_spec}
        return ToyProblem.from_mapping(spec, source=source or Msg("errors.explain_source_head", source=self.source, head=h))

    def with_options(self, scoring: Optional[str] = None, causal: Optional[bool] = None,
                     tokens: Optional[list] = None) -> "MultiHeadProblem":
        """A copy with the command line's --scoring, --causal and --labels applied (and checked)."""
        import dataclasses
        spec = dict(self.head_spec)
        if scoring is not None:
            spec["scoring"] = scoring
        if causal:
            spec["causal"] = True
        p = dataclasses.replace(self, head_spec=spec,
                                tokens=inputs.labels(tokens, "--labels", self.L) if tokens else list(self.tokens))
        p._check_heads()
        return p

    def _check_heads(self) -> None:
        """Mask, causal, scoring and window, checked once on a head of zeros."""
        self.head_problem(0, np.zeros((self.L, self.n_heads * self.d_head)),
                          np.zeros((self.L, self.n_kv_heads * self.d_head)), np.zeros((self.L, self.n_kv_heads * self.d_v)),
                          source=self.source)  # the keys are the whole problem's

    # ------------------------------------------------------------------------------------------
    @classmethod
    def from_mapping(cls, d: dict, source: Where = INPUT) -> "MultiHeadProblem":
        fields = read_fields(d, source, KEYS, REFUSED, multihead=True)
        where = lambda k: at_key(source, fields[k][0])  # noqa: E731
        mats = {k: inputs.matrix(fields[k][1], where(k)) for k in ("X", "W_QKV", "W_Q", "W_K", "W_V", "W_O")
                if k in fields}
        if "heads" in fields and str(fields["heads"][1]).lower() != "all":
            raise error(InputError, "errors.explain_heads_all", where=where("heads"), value=repr(fields["heads"][1]))
        if "n_heads" not in fields:
            raise error(InputError, "errors.explain_missing_n_heads", source=source)
        H = inputs.whole_number(fields["n_heads"][1], where("n_heads"))
        Hkv = inputs.whole_number(fields["n_kv_heads"][1], where("n_kv_heads")) if "n_kv_heads" in fields else H
        inputs.check_kv_heads(H, Hkv, where("n_kv_heads") if "n_kv_heads" in fields else source)
        if "X" not in mats:
            raise error(InputError, "errors.explain_missing_x", source=source)
        X = mats["X"]
        dm = X.shape[1]
        separate = [k for k in ("W_Q", "W_K", "W_V") if k in mats]
        if "W_QKV" in mats:
            if separate:
                raise error(InputError, "errors.explain_qkv_both", source=source, got=", ".join(separate))
            W = mats["W_QKV"]
            check_rows(W, "W_QKV", dm, source)
            blocks = H + 2 * Hkv
            if W.shape[1] % blocks:
                raise error(ShapeError, "errors.explain_qkv_cols", where=where("W_QKV"), count=count(W.shape[1], "column"),
                            H=H, Hkv=Hkv, blocks=blocks, hint=_divides_hint(H, dm))
            Wq, Wk, Wv = R.split_qkv(W, H, Hkv)
        else:
            missing = [k for k in ("W_Q", "W_K", "W_V") if k not in mats]
            if missing:
                raise error(InputError, "errors.explain_missing_projections", source=source, names=", ".join(missing))
            Wq, Wk, Wv = mats["W_Q"], mats["W_K"], mats["W_V"]
            for k, w in (("W_Q", Wq), ("W_K", Wk), ("W_V", Wv)):
                check_rows(w, k, dm, source)
            if Wq.shape[1] % H:
                raise error(ShapeError, "errors.explain_wq_cols", where=where("W_Q"), H=H, count=count(Wq.shape[1], "column"),
                            hint=_divides_hint(H, dm))
            dh = Wq.shape[1] // H
            if Wk.shape[1] != Hkv * dh:
                raise error(ShapeError, "errors.explain_wk_cols" if Hkv > 1 else "errors.explain_wk_cols_one",
                            where=where("W_K"), count=count(Wk.shape[1], "column"), Hkv=Hkv, dh=dh, need=Hkv * dh)
            if Wv.shape[1] % Hkv:
                raise error(ShapeError, "errors.explain_wv_cols", where=where("W_V"), count=count(Wv.shape[1], "column"),
                            Hkv=Hkv)
        p = cls(X=X, W_Q=Wq, W_K=Wk, W_V=Wv, n_heads=H, n_kv_heads=Hkv, W_QKV=mats.get("W_QKV"),
                W_O=mats.get("W_O"), name=str(fields["name"][1]) if "name" in fields else None, source=source,
                head_spec={k: fields[k][1] for k in HEAD_KEYS if k in fields})
        if p.W_O is not None and p.W_O.shape[0] != H * p.d_v:
            raise error(ShapeError, "errors.explain_mh_wo_rows", where=where("W_O"), count=count(p.W_O.shape[0], "row"),
                        H=H, d_v=p.d_v, cols=H * p.d_v)
        p.tokens = inputs.labels(fields["tokens"][1], where("tokens"), p.L) if "tokens" in fields \
            else [f"x{i}" for i in range(p.L)]
        p._check_heads()
        return p


def _divides_hint(H: int, d_model: int) -> Msg | str:
    if d_model % H:
        return Msg("errors.explain_divides_hint", H=H, d_model=d_model)
    return ""
