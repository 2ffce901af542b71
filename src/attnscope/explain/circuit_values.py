"""The numbers of the circuit lessons (``explain --circuit qk`` and ``explain --composition``), float64.

Pure functions: the matrices come from :mod:`attnscope.circuits` (the head's W_Q, W_K, W_V, W_O with
the norms folded as it says); nothing here formats anything (:mod:`.circuit_doc` writes the lesson).
Each lesson also recomputes its result another way, from full d × d NumPy matrices, and reports the
difference:

* one entry of W_QK: ``W_QK[i, j] = Σ_k W_Q[i, k] · W_K[j, k]`` (k over the d_head features; with a
  rotary offset δ the query row is turned first, (W_Q R_δ)[i, :]); the check is the (i, j) entry of
  the d × d product formed in NumPy;
* one composition score: ‖A‖_F, ‖B‖_F and ‖A B‖_F each from the r × r Gram matrices,
  ‖L R‖²_F = Σ_a Σ_b (LᵀL)_ab (R Rᵀ)_ab, summed row by row (a), then the ratio; the check is
  ``np.linalg.norm`` of the three d × d matrices.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import torch

from ..circuits.heads import check_layer_head, head_weights, rotation, rotation_angles
from ..circuits.model_parts import norm_scale_shift
from ..circuits.scores import check_kind, composition_parts
from ..errors import InputError
from ..i18n import error


def _np(t) -> np.ndarray:
    return t.detach().cpu().double().numpy()


def check_entry(i, j, d: int) -> tuple[int, int]:
    """(i, j) as indices of the residual stream (0..d − 1), or one sentence."""
    for v in (i, j):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= v < d:
            raise error(InputError, "errors.qkov_entry", i=repr(i), j=repr(j), d=d, last=d - 1)
    return int(i), int(j)


def qk_entry_values(model, layer: int, head: int, i: int, j: int, *, offset: Optional[int] = None,
                    fold_norm: bool = True) -> dict:
    """One entry of the head's QK circuit: ``raw_q``/``raw_k`` (d_head,) rows i and j of the
    checkpoint's W_Q and W_K (j: of the k/v head), ``gamma_i``/``gamma_j`` the pre-attention norm's
    scales (None: none folded), ``qn``/``kn`` (d_head,) a QK-norm's scales (None), ``q``/``k`` the
    folded rows, ``angles``/``cos``/``sin`` (d_head/2,) and ``q_rot`` with an offset (else None),
    ``products`` (d_head,) and ``entry`` their sum; ``full`` the same entry of the d × d matrix formed
    in NumPy and ``diff`` the difference."""
    layer, head = check_layer_head(model, layer, head)
    raw = head_weights(model, layer, head, fold_norm=False)
    w = head_weights(model, layer, head, fold_norm=fold_norm)
    d, dh = int(w.W_Q.shape[0]), int(w.W_Q.shape[1])
    i, j = check_entry(i, j, d)
    Wq, Wk = _np(w.W_Q), _np(w.W_K)  # (d, d_head) each, folded
    out: dict = {"layer": layer, "head": head, "kv_head": w.kv_head, "i": i, "j": j, "d": d, "d_head": dh,
                 "offset": offset, "scale": w.scale, "folded": w.folded, "rotary": w.rotary,
                 "raw_q": _np(raw.W_Q)[i], "raw_k": _np(raw.W_K)[j],
                 "gamma_i": None, "gamma_j": None, "qn": None, "kn": None,
                 "angles": None, "cos": None, "sin": None, "q_rot": None}
    if w.gamma is not None:
        g = _np(w.gamma)
        out["gamma_i"], out["gamma_j"] = float(g[i]), float(g[j])
    attn = model.layers[layer].attn
    if "q_norm" in w.folded:  # a QK-norm's scales, on the head's columns (OLMo 2: the head's slice)
        for key, mod, n in (("qn", attn.q_norm, head), ("kn", attn.k_norm, w.kv_head)):
            gq = _np(norm_scale_shift(mod, torch.float64)[0])
            out[key] = gq if gq.shape[0] == dh else gq[n * dh:(n + 1) * dh]
    # the folded rows by hand: γ_i · W_Q[i, k] (· the QK-norm's scale of feature k)
    one = np.ones(dh)
    q = out["raw_q"] * (out["gamma_i"] if out["gamma_i"] is not None else 1.0) * (out["qn"] if out["qn"] is not None else one)
    out["q"] = q
    out["k"] = out["raw_k"] * (out["gamma_j"] if out["gamma_j"] is not None else 1.0) * \
        (out["kn"] if out["kn"] is not None else one)
    R: np.ndarray = np.eye(dh)
    if offset is not None:
        R = _np(rotation(model, layer, offset))  # (d_head, d_head)
        h = dh // 2
        out["cos"], out["sin"] = np.diag(R)[:h].copy(), R[np.arange(h), np.arange(h) + h].copy()
        out["angles"] = rotation_angles(model, layer, offset)  # δ·ω_k as the column says, not wrapped into (−π, π]
        out["q_rot"] = q @ R  # (d_head,)
    left = out["q_rot"] if offset is not None else q
    out["products"] = left * out["k"]  # (d_head,)
    out["entry"] = float(out["products"].sum())
    full = (Wq @ R) @ Wk.T  # (d, d): the package's whole circuit, formed only to check the entry
    out["full"] = float(full[i, j])
    out["diff"] = abs(out["full"] - out["entry"])
    return out


def parse_head(text, flag: str) -> tuple[int, int]:
    """``"L.H"`` (``--from 0.3``) → (L, H), or one sentence."""
    if isinstance(text, (tuple, list)) and len(text) == 2:
        return text[0], text[1]
    parts = str(text).split(".")
    if len(parts) != 2 or not all(p.strip().isdecimal() for p in parts):  # isdigit() passes "²", int() refuses it
        raise error(InputError, "errors.qkov_head_form", flag=flag, value=repr(text))
    return int(parts[0]), int(parts[1])


def gram_rows(left: np.ndarray, right: np.ndarray) -> dict:
    """``GL`` = LᵀL and ``GR`` = R Rᵀ (r, r), ``rows`` (r,) Σ_b (LᵀL)_ab (R Rᵀ)_ab per a, ``sq`` their
    sum ‖L R‖²_F and ``norm`` its square root."""
    GL, GR = left.T @ left, right @ right.T  # (r, r), (r, r)
    rows = (GL * GR).sum(axis=1)  # (r,)
    sq = float(rows.sum())
    return {"GL": GL, "GR": GR, "rows": rows, "sq": sq, "norm": float(np.sqrt(max(sq, 0.0)))}


def composition_values(model, kind: str, sender, receiver, *, offset: Optional[int] = None,
                       fold_norm: bool = True) -> dict:
    """One composition score by hand: ``A``, ``B``, ``AB`` each :func:`gram_rows` of its factors,
    ``score`` = ‖AB‖ / (‖A‖ ‖B‖); ``full`` the three norms and the score from the d × d matrices
    formed in NumPy, ``diff`` the largest difference of the four."""
    kind = check_kind(kind)
    s, r = parse_head(sender, "--from"), parse_head(receiver, "--to")
    A, B, AB = composition_parts(model, kind, s, r, offset=offset, fold_norm=fold_norm)
    parts = {name: (_np(f.left), _np(f.right)) for name, f in (("A", A), ("B", B), ("AB", AB))}
    out: dict = {"kind": kind, "sender": tuple(int(x) for x in s), "receiver": tuple(int(x) for x in r),
                 "offset": offset, "d": A.shape[0], "folded": head_weights(model, *s, fold_norm=fold_norm).folded}
    for name, (L, R) in parts.items():
        out[name] = dict(gram_rows(L, R), inner=int(L.shape[1]))
    out["score"] = out["AB"]["norm"] / (out["A"]["norm"] * out["B"]["norm"])
    fa, fb = parts["A"][0] @ parts["A"][1], parts["B"][0] @ parts["B"][1]  # (d, d) each
    nA, nB, nAB = (float(np.linalg.norm(m)) for m in (fa, fb, fa @ fb))
    out["full"] = {"A": nA, "B": nB, "AB": nAB, "score": nAB / (nA * nB)}
    out["diff"] = max(abs(out["full"]["score"] - out["score"]),
                      *(abs(out["full"][k] - out[k]["norm"]) / max(out["full"][k], 1e-300) for k in ("A", "B", "AB")))
    return out
