"""``explain positions``: how a Transformer knows where a token is, worked out in numbers.

Three schemes (``scheme=``):

* ``sinusoidal`` (Vaswani et al.; BERT-style absolute positions, added to the embeddings)::

      PE(p, 2i) = sin(p·ω_i),  PE(p, 2i + 1) = cos(p·ω_i),  ω_i = base^(−2i/d_model)

  one dimension worked (its exponent, frequency, angle and sinusoid), the whole vector PE(p), and
  why PE(p + k) is a rotation of PE(p): each pair (sin, cos) is turned by the 2×2 matrix
  [[cos kω_i, sin kω_i], [−sin kω_i, cos kω_i]], which depends on k only, never on p;
* ``rotary`` (RoFormer; Llama, Qwen2, Gemma: q and k are turned, nothing is added) —
  :mod:`.positions_relative`;
* ``t5`` (T5's relative bias: the distance key − query goes into a log bucket) —
  :mod:`.positions_relative`.

Every number is float64 from :mod:`attnscope.reference` (sin and cos of float64 angles, correct
to about 1e-16, far below any shown digit). Positions and dimensions count from 0, as in the
formulas.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .. import reference as R
from ..errors import InputError
from ..i18n import error
from .doc import DotRow, Formula, Matrix, Para, Step, Sym, Table, Worked, t
from .numbers import short
from .places import Where

#: The pairs shown in full while there are at most this many; beyond, the first, the chosen, the last.
ALL_PAIRS = 16


def whole(value, name: Where, low: Optional[int] = None) -> int:
    """``value`` as an int, or InputError naming the option ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer, float)) or float(value) != int(value):
        raise error(InputError, "errors.explain_option_whole", name=name, value=repr(value))
    if low is not None and int(value) < low:
        raise error(InputError, "errors.explain_option_at_least", name=name, low=low, value=int(value))
    return int(value)


def position_arg(value, name: Where = "position") -> int:
    v = whole(value, name)
    if v < 0:
        raise error(InputError, "errors.explain_option_position", name=name, value=v)
    return v


def positive(value, name: Where) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise error(InputError, "errors.explain_option_number", name=name, value=repr(value)) from None
    if not math.isfinite(x) or x <= 0:
        raise error(InputError, "errors.explain_option_positive", name=name, value=repr(value))
    return x


def shown_pairs(n: int, chosen: int) -> list:
    """The pair indices a table shows: all of them, or the first 8, the chosen one and the last."""
    if n <= ALL_PAIRS:
        return list(range(n))
    return sorted(set(range(8)) | {chosen, n - 1})


def sinusoidal_values(p: int, d: int, k: int, base: float) -> dict:
    """Every number of the lesson, float64: ``freq`` ω (d/2,), ``angle`` p·ω, ``pe`` PE(p) (d,),
    ``pe_shifted`` PE(p + k), ``rotation`` (d/2, 2, 2) the matrix of each pair that turns PE(p)
    into PE(p + k), ``rotated`` (d,) its product with PE(p) and ``max_abs_diff`` from PE(p + k)."""
    freq = R.sinusoidal_freq(d, base)  # (d/2,)
    pe, shifted = R.sinusoidal_pe([p, p + k], d, base)  # (d,) each
    # (sin, cos) of (p + k)ω = [[cos kω, sin kω], [−sin kω, cos kω]] · (sin pω, cos pω): R(−kω) in sin/cos order
    rot = R.rotation_matrix(-k * freq)  # (d/2, 2, 2)
    pairs = pe.reshape(-1, 2)  # (d/2, 2): (sin, cos)
    rotated = np.einsum("iab,ib->ia", rot, pairs).reshape(-1)  # (d,)
    return {"freq": freq, "angle": p * freq, "pe": pe, "pe_shifted": shifted, "rotation": rot, "rotated": rotated,
            "max_abs_diff": float(np.abs(rotated - shifted).max())}


def explain_sinusoidal(position: int, dim: Optional[int], offset: int, d_model: int, base: float) -> Worked:
    p = position_arg(position)
    d = whole(d_model, "d_model", 2)
    if d % 2:
        raise error(InputError, "errors.explain_d_model_even", d=d)
    dim = 2 if dim is None and d > 2 else (0 if dim is None else whole(dim, "dim"))
    if not 0 <= dim < d:
        raise error(InputError, "errors.explain_dim_range", dim=dim, d=d, last=d - 1)
    k = whole(offset, "offset")
    if p + k < 0:
        raise error(InputError, "errors.explain_offset_negative", k=k, p=p, at=p + k)
    base = positive(base, "base")
    v = sinusoidal_values(p, d, k, base)
    i, n = dim // 2, d // 2
    fn = "sin" if dim % 2 == 0 else "cos"
    b = short(base)
    intro = [Para(t("pos.sin_intro", p=p, d=d, k=k, pk=p + k)),
             Formula("PE(p, 2i) = sin(p · ω_i),   PE(p, 2i + 1) = cos(p · ω_i),   ω_i = base^(−2i/d_model)",
                     r"PE(p,2i)=\sin(p\,\omega_i),\quad PE(p,2i+1)=\cos(p\,\omega_i),\quad \omega_i=\mathrm{base}^{-2i/d}"),
             # one pair (d_model = 2): no frequencies "falling" to a slower last pair
             Para(t("pos.sin_why" if d > 2 else "pos.sin_why_one", n=d // 2 - 1, slow=float(v["freq"][-1]),
                    longest=2 * math.pi / float(v["freq"][-1]))),
             Para(t("counting"), style="note")]
    steps = []

    # 1. one dimension, every number
    expo = 2 * i / d
    rows = [[t("pos.q_pair"), f"i = ⌊{dim} / 2⌋", i],
            [t("pos.q_exponent"), f"2i / d_model = {2 * i}/{d}", expo],
            [t("pos.q_power"), f"{b}^({2 * i}/{d})", float(base) ** expo],
            [t("pos.q_freq"), "ω_i = 1 / base^(2i/d)", float(v["freq"][i])],
            [t("pos.q_angle"), f"p · ω_i = {p} · ω_{i}", float(v["angle"][i])],
            [t("pos.q_value"), f"PE({p}, {dim}) = {fn}({p} · ω_{i})", float(v["pe"][dim])]]
    steps.append(Step("dim", t("pos.step_dim", p=p, dim=dim),
                      [Para(t("pos.dim_why_sin" if fn == "sin" else "pos.dim_why_cos", dim=dim, i=i)),
                       Table([t("pos.col_quantity"), t("pos.col_formula"), t("pos.col_value")], rows),
                       Para(t("pos.wavelength", i=i, w=2 * math.pi / float(v["freq"][i])))]))

    # 2. the whole vector
    show = shown_pairs(n, i)
    body = [[j, f"{2 * j}, {2 * j + 1}", float(v["freq"][j]), float(v["angle"][j]), float(v["pe"][2 * j]),
             float(v["pe"][2 * j + 1])] for j in show]
    tab = Table([t("pos.col_pair"), t("pos.col_dims"), Sym("ω_i", r"\omega_i"), Sym("p·ω_i", r"p\,\omega_i"),
                 Sym("sin", r"\sin"), Sym("cos", r"\cos")], body,
                caption=t("pos.pairs_caption", n=len(show), m=n) if len(show) < n else None)
    vec = [Matrix(Sym(f"PE({p})", f"PE({p})"), v["pe"][None, :], rows=[str(p)], cols=[str(c) for c in range(d)])]
    steps.append(Step("vector", t("pos.step_vector", p=p), [tab] + (vec if d <= 16 else [])))

    # 3. PE(p + k) = a rotation of PE(p), pair by pair
    M = v["rotation"][i]
    s, c = v["pe"][2 * i], v["pe"][2 * i + 1]
    blocks = [Formula("[sin((p+k)ω), cos((p+k)ω)] = [[cos kω, sin kω], [−sin kω, cos kω]] · [sin pω, cos pω]",
                      r"\begin{bmatrix}\sin((p+k)\omega)\\ \cos((p+k)\omega)\end{bmatrix}=\begin{bmatrix}\cos k\omega & "
                      r"\sin k\omega\\ -\sin k\omega & \cos k\omega\end{bmatrix}\begin{bmatrix}\sin p\omega\\ \cos p\omega"
                      r"\end{bmatrix}"),
              Para(t("pos.rot_why")),
              Matrix(Sym(f"M_{i}({k})", f"M_{{{i}}}({k})"), M, rows=["sin", "cos"], cols=["sin", "cos"],
                     caption=t("pos.rot_caption", i=i, k=k, a=float(k * v["freq"][i]))),
              DotRow(Sym(f"PE({p + k})[{2 * i}, {2 * i + 1}]", f"PE({p + k})_{{{2 * i},{2 * i + 1}}}"),
                     [[(M[0, 0], s), (M[0, 1], c)], [(M[1, 0], s), (M[1, 1], c)]],
                     [float(v["rotated"][2 * i]), float(v["rotated"][2 * i + 1])]),
              Para(t("pos.rot_direct", pk=p + k, a=float(v["pe_shifted"][2 * i]), b=float(v["pe_shifted"][2 * i + 1])))]
    body = [[j, float(k * v["freq"][j]), float(v["rotation"][j, 0, 0]), float(v["rotation"][j, 0, 1]),
             float(v["rotated"][2 * j]), float(v["rotated"][2 * j + 1]), float(v["pe_shifted"][2 * j]),
             float(v["pe_shifted"][2 * j + 1])] for j in show]
    blocks.append(Table([t("pos.col_pair"), Sym("k·ω_i", r"k\,\omega_i"), Sym("cos kω_i", r"\cos k\omega_i"),
                         Sym("sin kω_i", r"\sin k\omega_i"), t("pos.col_rot_sin"), t("pos.col_rot_cos"),
                         Sym(f"PE({p + k}, 2i)", f"PE({p + k},2i)"), Sym(f"PE({p + k}, 2i+1)", f"PE({p + k},2i+1)")],
                        body, caption=t("pos.pairs_caption", n=len(show), m=n) if len(show) < n else None))
    blocks.append(Para(t("pos.rot_result", diff=f"{v['max_abs_diff']:.1e}", k=k)))
    other = [q for q in (0, p + 10) if q != p][:2]
    same = []
    for q in other:
        w = sinusoidal_values(q, d, k, base)
        same.append([q, q + k, float(np.abs(w["rotation"] - v["rotation"]).max()), w["max_abs_diff"]])
    blocks.append(Table([t("pos.col_from"), t("pos.col_to"), t("pos.col_same_matrix"), t("pos.col_rot_diff")], same,
                        caption=t("pos.same_caption", k=k)))
    dots = [[q, q + k, float(R.sinusoidal_pe([q], d, base)[0] @ R.sinusoidal_pe([q + k], d, base)[0])]
            for q in [p] + other]
    blocks.append(Para(t("pos.dot_why", k=k, s=float(np.cos(k * v["freq"]).sum()))))
    blocks.append(Table([t("pos.col_from"), t("pos.col_to"), Sym("PE(p)·PE(p+k)", r"PE(p)\cdot PE(p+k)")], dots))
    steps.append(Step("rotation", t("pos.step_rotation", p=p, k=k, pk=p + k), blocks))
    # k > 0: from p + k the token at p is k places back; k < 0: it is |k| places ahead
    meaning = (t("pos.sin_meaning", k=k) if k > 0 else t("pos.sin_meaning_ahead", k=k, n=-k) if k < 0
               else t("pos.sin_meaning_zero"))
    steps.append(Step("meaning", t("pos.step_meaning"), [Para(meaning)]))

    values = {"freq": v["freq"], "angle": v["angle"], "pe": v["pe"], "pe_shifted": v["pe_shifted"],
              "rotation": v["rotation"], "rotated": v["rotated"], "value": float(v["pe"][dim])}
    meta = {"scheme": "sinusoidal", "position": p, "dim": dim, "pair": i, "offset": k, "d_model": d, "base": base,
            "max_abs_diff": v["max_abs_diff"], "dims_from": 0}
    return Worked("positions", t("pos.title_sin", p=p, dim=dim), intro, steps, values=values, meta=meta)
