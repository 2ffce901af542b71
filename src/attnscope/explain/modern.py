"""The steps today's decoders add to attention, as blocks of a worked calculation: which key/value
head a query head shares (GQA/MQA), QK-norm's RMS step, the rotation of q and k by their positions
(rotary), the numeric proof that a rotated score depends on the distance only, Gemma's scale and
the keys a sliding window hides. Shared by the toy (:mod:`.toy`) and a real row (:mod:`.row`);
every number comes in as float64 from :mod:`attnscope.reference` and is never rounded here.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence, Union

import numpy as np

from .. import exact as E
from .. import reference as R
from .blocks import Block, Formula, Matrix, Para, Step, Sym, Table, VecParam, t
from .numbers import short

#: The (query, key) positions of the distance proof: two pairs two apart, one pair three apart.
DISTANCE_PAIRS = ((3, 1), (7, 5), (3, 0))


def _given(x: float) -> str:
    """A number given as input, as written: 1000000, 0.5, 1e-06."""
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 1e16 else short(x)


# ----------------------------------------------------------------------------------------------
# shared key/value heads
# ----------------------------------------------------------------------------------------------

def heads_step(n_heads: int, n_kv_heads: int, head: int) -> Step:
    """Which k/v head query head ``head`` reads, and the whole sharing table."""
    group = n_heads // n_kv_heads
    g = R.kv_head(head, n_heads, n_kv_heads)
    kind = "mqa" if n_kv_heads == 1 and n_heads > 1 else ("gqa" if n_kv_heads < n_heads else "mha")
    sharing = [h for h in range(n_heads) if R.kv_head(h, n_heads, n_kv_heads) == g]
    rows = [[j, ", ".join(str(h) for h in range(n_heads) if R.kv_head(h, n_heads, n_kv_heads) == j)]
            for j in range(n_kv_heads)]
    blocks = [Formula("g = ⌊h / (H / H_kv)⌋", r"g = \left\lfloor h \,/\, (H / H_{\mathrm{kv}}) \right\rfloor"),
              Para(t(f"heads.{kind}", H=n_heads, Hkv=n_kv_heads, group=group)),
              Para(t("heads.this", h=head, g=g, group=group, heads=", ".join(map(str, sharing)))),
              Table([t("col.kv_head"), t("col.q_heads")], rows)]
    return Step("heads", t("step.heads"), blocks)


# ----------------------------------------------------------------------------------------------
# QK-norm
# ----------------------------------------------------------------------------------------------

def rms_step(rows: Sequence[tuple], *, eps: float, offset: float, weights: dict, dims: int,
             matrices: Sequence[Matrix] = (), trace_diff: Optional[float] = None) -> Step:
    """``rows``: (label, "q"|"k", x (d,), x̂ (d,)); ``weights``: {"q": w (d,) | None, "k": …}."""
    d = len(rows[0][2])
    n = min(d, dims)
    formula = ("RMS(x) = √(mean(x²) + ε),   x̂ = x / RMS(x) · (1 + w)" if offset else
               "RMS(x) = √(mean(x²) + ε),   x̂ = x / RMS(x) · w")
    tex = (r"\mathrm{RMS}(x)=\sqrt{\tfrac{1}{d}\textstyle\sum_i x_i^2+\varepsilon},\quad \hat{x}=\frac{x}{\mathrm{RMS}(x)}"
           + (r"\,(1+w)" if offset else r"\,w"))
    blocks = [Formula(formula, tex), Para(t("rms.why_gemma" if offset else "rms.why", d=d, eps=_given(eps)))]
    for which in ("q", "k"):
        w = weights.get(which)
        if w is not None:
            key = "rms.weight_gemma" if offset else "rms.weight"
            blocks.append(Para(t(key, x=which, n=n, w=VecParam([float(a) for a in np.asarray(w)[:n]]))))
    header = [t("col.vector"), Sym("mean(x²)", r"\overline{x^2}"), Sym("RMS", r"\mathrm{RMS}")]
    header += [Sym(f"x̂[{i}]", rf"x̂_{{{i}}}") for i in range(n)]
    body = []
    for label, _which, x, xn in rows:
        x = np.asarray(x, dtype=np.float64)
        ms = float(np.mean(x * x))
        body.append([label, ms, math.sqrt(ms + eps)] + [float(a) for a in np.asarray(xn)[:n]])
    blocks.append(Table(header, body, caption=t("rms.caption", n=n, d=d) if n < d else None))
    blocks += list(matrices)
    if trace_diff is not None:
        blocks.append(Para(t("rms.trace_check", diff=f"{trace_diff:.1e}"), style="note"))
    return Step("qk_norm", t("step.qk_norm"), blocks)


# ----------------------------------------------------------------------------------------------
# rotary positions
# ----------------------------------------------------------------------------------------------

def rotation_step(rows: Sequence[tuple], *, inv_freq: np.ndarray, pairing: str, base: float,
                  scaling: Optional[str] = None, model: bool = False, dims: int = 3,
                  matrices: Sequence[Matrix] = (), notes: Sequence[Para] = ()) -> Step:
    """``rows``: (label, position, x (d,), x' (d,)); each gets a table of its first pairs."""
    d = len(rows[0][2])
    a, b = R.rope_pairs(d, pairing)
    n = d // 2 if d // 2 <= 8 else max(1, min(dims, d // 2))
    blocks: list[Block] = [
        Formula("(x_a, x_b) → (x_a·cos φ − x_b·sin φ,  x_a·sin φ + x_b·cos φ),   φ = p·θ_i,   θ_i = base^(−2i/d)",
                r"(x_a, x_b)\mapsto(x_a\cos\varphi - x_b\sin\varphi,\; x_a\sin\varphi + x_b\cos\varphi),"
                r"\quad \varphi = p\,\theta_i,\quad \theta_i = \mathrm{base}^{-2i/d}")]
    if pairing == "half":
        key = "rope.pairs_half_model" if model else "rope.pairs_half"
        blocks.append(Para(t(key, half=d // 2, last=f"{d // 2 - 1}, {d - 1}")))
    else:
        blocks.append(Para(t("rope.pairs_adjacent")))
    if scaling:
        blocks.append(Para(t("rope.scaled", kind=scaling, base=_given(base)), style="note"))
    else:
        blocks.append(Para(t("rope.freq" if d > 2 else "rope.freq_one", base=_given(base), d=d,  # one pair: no "last"
                             last=float(inv_freq[-1]), n=d // 2)))
    blocks.append(Table([t("col.pair"), t("col.features"), Sym("θ_i", r"\theta_i")],
                        [[i, f"{a[i]}, {b[i]}", float(inv_freq[i])] for i in range(n)],
                        caption=t("rope.pairs_caption", n=n, m=d // 2) if n < d // 2 else None))
    for label, p, x, xr in rows:
        x, xr = np.asarray(x, dtype=np.float64), np.asarray(xr, dtype=np.float64)
        phi = float(p) * np.asarray(inv_freq, dtype=np.float64)
        body = [[i, f"{a[i]}, {b[i]}", float(phi[i]), math.cos(phi[i]), math.sin(phi[i]),
                 x[a[i]], x[b[i]], xr[a[i]], xr[b[i]]] for i in range(n)]
        header = [t("col.pair"), t("col.features"), Sym("φ", r"\varphi"), Sym("cos φ", r"\cos\varphi"),
                  Sym("sin φ", r"\sin\varphi"), Sym("x_a", "x_a"), Sym("x_b", "x_b"), Sym("x'_a", "x'_a"),
                  Sym("x'_b", "x'_b")]
        blocks.append(Table(header, body, caption=t("rope.row_caption", x=label, p=int(p))))
        # one exact length for both: R(pθ)ᵀR(pθ) = I, and √(Σ x²) of the decimals can sit exactly half-way
        # (|(0.60003, 0.80004)| = 1.00005), where float64 norms give 1.0000499… before and after
        length = E.CTX.sqrt(sum((E.dec(v) * E.dec(v) for v in x), E.ZERO))
        blocks.append(Para(t("rope.norm", x=label, before=length, after=length)))
    blocks += list(matrices)
    blocks += list(notes)
    return Step("rotation", t("step.rotation"), blocks)


def distance_values(q: np.ndarray, k: np.ndarray, inv_freq: np.ndarray, pairing: str,
                    pairs: Sequence[tuple] = DISTANCE_PAIRS) -> list[dict]:
    """For each (m, n): q'·k' with q turned at m and k at n, and the same score from the
    distance formula Σ_i [(q_a k_a + q_b k_b) cos((m − n)θ_i) + (q_a k_b − q_b k_a) sin((m − n)θ_i)]."""
    q, k = np.asarray(q, dtype=np.float64), np.asarray(k, dtype=np.float64)
    a, b = R.rope_pairs(len(q), pairing)
    out = []
    for m, n in pairs:
        rotated = float(R.rotate(q[None], [m], inv_freq, pairing)[0] @ R.rotate(k[None], [n], inv_freq, pairing)[0])
        ang = (m - n) * np.asarray(inv_freq, dtype=np.float64)
        formula = float(np.sum((q[a] * k[a] + q[b] * k[b]) * np.cos(ang) + (q[a] * k[b] - q[b] * k[a]) * np.sin(ang)))
        out.append({"m": m, "n": n, "rotated": rotated, "formula": formula})
    return out


def distance_step(q: np.ndarray, k: np.ndarray, *, inv_freq: np.ndarray, pairing: str, qlabel: Union[str, Sym],
                  klabel: Union[str, Sym]) -> tuple[Step, list]:
    """The same q and k (before rotation) put at the positions of :data:`DISTANCE_PAIRS`."""
    vals = distance_values(q, k, inv_freq, pairing)
    blocks = [Para(t("dist.intro", q=qlabel, k=klabel)),
              Formula("q'_m · k'_n = Σ_i [(q_a k_a + q_b k_b)·cos((m − n)θ_i) + (q_a k_b − q_b k_a)·sin((m − n)θ_i)]",
                      r"q'_m\cdot k'_n=\sum_i\big[(q_a k_a+q_b k_b)\cos((m-n)\theta_i)"
                      r"+(q_a k_b-q_b k_a)\sin((m-n)\theta_i)\big]"),
              Table([Sym("m", "m"), Sym("n", "n"), Sym("m − n", "m-n"), t("col.score_rotated"), t("col.score_formula")],
                    [[v["m"], v["n"], v["m"] - v["n"], v["rotated"], v["formula"]] for v in vals])]
    s31, s75, s30 = (v["rotated"] for v in vals)
    blocks.append(Para(t("dist.result", a=s31, b=s75, diff=f"{abs(s31 - s75):.1e}", c=s30)))
    return Step("distance", t("step.distance"), blocks), vals


# ----------------------------------------------------------------------------------------------
# scale and window
# ----------------------------------------------------------------------------------------------

def gemma_scale_para(query_scale: float, d: int) -> Para:
    """Gemma 3's factor query_pre_attn_scalar^(−½) in place of 1/√d_k."""
    s = 1.0 / query_scale ** 2
    s = round(s) if abs(s - round(s)) < 1e-9 * max(1.0, s) else s
    same = math.isclose(query_scale, 1 / math.sqrt(d), rel_tol=1e-12)
    return Para(t("scale.gemma_same" if same else "scale.gemma", s=_given(s), c=query_scale,
                  root=1 / math.sqrt(d), d=d))


def split_hidden(query: int, n: int, window: Optional[int], causal: bool) -> tuple[list, list]:
    """Keys hidden from query position ``query`` among ``n``: (after it: causal, too far back: window)."""
    later = list(range(query + 1, n)) if causal else []
    far = list(range(0, max(0, query - window + 1))) if window is not None else []
    return later, far


def window_paras(window: int, n: int, rows: Sequence[tuple]) -> list:
    """``rows``: (label, [hidden key labels]) per query row that loses keys to the window."""
    out = []
    hit = [(label, keys) for label, keys in rows if keys]
    for label, keys in hit:
        out.append(Para(t("window.row", tok=label, keys=", ".join(keys), w=window)))
    if not hit:
        out.append(Para(t("window.none", w=window, n=n)))
    out.append(Para(t("window.why", w=window), style="note"))
    return out
