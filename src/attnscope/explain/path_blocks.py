"""The worked blocks of one token's whole path (:mod:`.path`): a vector's first features, a
LayerNorm or RMSNorm written out, a projection ``y = x W + b`` with its first products, an
activation, the heads side by side and ``W_O`` head by head.

Every number comes in as float64 (from :mod:`attnscope.reference_model`); nothing is rounded here.
Features are counted from 0, as in the trace and the viewer. Weights are read in the ``x W``
convention: column c of W is row c of the ``nn.Linear`` weight.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np

from .. import reference as R
from .blocks import Cell, Divide, Formula, Para, Step, Sym, Table, t
from .numbers import short

#: Products written out in a projection table before "the other d − N".
TERMS = 3


def trace_para(*names: str) -> Para:
    """"In the trace and the viewer: layers.0.attn.q[3]" (one or several names)."""
    return Para(t("path.trace", names=", ".join(names)), style="note")


def feats(n: int) -> list:
    return [Sym(str(c), str(c)) for c in range(n)]


def vector_table(rows: Sequence[tuple], dims: int) -> Table:
    """``rows``: (label, vector (d,)) — one row each, the first ``dims`` features as columns."""
    d = len(rows[0][1])
    n = min(dims, d)
    body = [[label] + [float(a) for a in np.asarray(x)[:n]] for label, x in rows]
    return Table([t("col.vector")] + feats(n), body, caption=t("path.first_features", n=n, d=d) if n < d else None)


# ----------------------------------------------------------------------------------------------
# norms
# ----------------------------------------------------------------------------------------------

def norm_blocks(x, norm, y, dims: int) -> list:
    """The model's norm module ``norm`` applied to one vector x, written out into y: a LayerNorm's
    mean, variance, normalised features, γ, β; an RMSNorm's mean(x²), RMS, x / RMS and its scale w
    (Gemma: 1 + w)."""
    x = np.asarray(x, dtype=np.float64)
    d, n, eps, w = len(x), min(dims, len(x)), float(norm.eps), R.as_f64(norm.weight)
    cap = t("path.first_features", n=n, d=d) if n < d else None
    if norm_kind(norm) == "rms":
        offset = float(norm.offset)
        ms = float(np.mean(x * x))
        rms = math.sqrt(ms + eps)
        blocks = [Formula("RMS = √((1/d) Σ_i x_i² + ε),   y_i = x_i / RMS · " + ("(1 + w_i)" if offset else "w_i"),
                          r"\mathrm{RMS}=\sqrt{\tfrac{1}{d}\textstyle\sum_i x_i^2+\varepsilon},\quad "
                          r"y_i=\frac{x_i}{\mathrm{RMS}}\," + (r"(1+w_i)" if offset else r"w_i")),
                  Para(t("path.rms_stats_gemma" if offset else "path.rms_stats", d=d, ms=ms, eps=short(eps), rms=rms)),
                  # the division worked out: the rounding note names it where the shown numbers miss
                  Divide(Sym("x_i / RMS", r"x_i/\mathrm{RMS}"), [x[c] for c in range(n)], rms, [x[c] / rms for c in range(n)])]
        header = [t("col.feature"), Sym("x_i", "x_i"), Sym("x_i / RMS", r"x_i/\mathrm{RMS}"),
                  Sym("1 + w_i", "1+w_i") if offset else Sym("w_i", "w_i"), Sym("y_i", "y_i")]
        return blocks + [Table(header, [[c, x[c], x[c] / rms, float(offset + w[c]), float(y[c])] for c in range(n)],
                               caption=cap)]
    mu = float(x.mean())
    var = float(((x - mu) ** 2).mean())
    root = math.sqrt(var + eps)
    b = np.zeros(d) if norm.bias is None else R.as_f64(norm.bias)
    header = [t("col.feature"), Sym("x_i", "x_i"), Sym("x_i − μ", r"x_i-\mu"), Sym("x̂_i", r"\hat{x}_i"),
              Sym("γ_i", r"\gamma_i"), Sym("β_i", r"\beta_i"), Sym("y_i", "y_i")]
    return [Formula("μ = (1/d) Σ_i x_i,   σ² = (1/d) Σ_i (x_i − μ)²,   y_i = γ_i · (x_i − μ) / √(σ² + ε) + β_i",
                    r"\mu=\tfrac{1}{d}\textstyle\sum_i x_i,\quad \sigma^2=\tfrac{1}{d}\sum_i (x_i-\mu)^2,\quad "
                    r"y_i=\gamma_i\,\frac{x_i-\mu}{\sqrt{\sigma^2+\varepsilon}}+\beta_i"),
            Para(t("path.ln_stats", d=d, mu=mu, var=var, eps=short(eps), root=root)),
            Divide(Sym("x̂_i", r"\hat{x}_i"), [x[c] - mu for c in range(n)], root, [(x[c] - mu) / root for c in range(n)]),
            Table(header, [[c, x[c], x[c] - mu, (x[c] - mu) / root, w[c], b[c], float(y[c])] for c in range(n)],
                  caption=cap)]


def norm_kind(norm) -> str:
    return "rms" if hasattr(norm, "offset") else "ln"


# ----------------------------------------------------------------------------------------------
# projections
# ----------------------------------------------------------------------------------------------

def projection_table(x: np.ndarray, weight, rows: Sequence[int], bias, y: np.ndarray, *, dims: int,
                     xname: str = "x", wname: str = "W") -> Table:
    """``y_c = Σ_i x_i W_ic + b_c`` for the first ``dims`` outputs c, with its first products.

    ``weight``: the ``nn.Linear`` weight (out, in); ``rows[c]`` is the weight row of output c (its
    column of W in the ``x W`` convention); ``bias``: the bias tensor (indexed the same) or None;
    ``y (len(rows),)``: the float64 outputs (from the forward pass)."""
    x = np.asarray(x, dtype=np.float64)
    d_in = len(x)
    n = min(dims, len(rows))
    k = min(TERMS, d_in)
    header: list[Cell] = [t("col.feature")]
    header += [Sym(f"{xname}[{i}]·{wname}[{i},c]", rf"{xname}_{{{i}}}{wname}_{{{i},c}}") for i in range(k)]
    if d_in > k:
        header.append(t("path.col_other", n=d_in - k))
    header += [Sym("Σ", r"\Sigma")]
    if bias is not None:
        header.append(Sym("b_c", "b_c"))
    header.append(t("path.col_result"))
    body = []
    for c in range(n):
        col = R.as_f64(weight[rows[c]])  # (d_in,)
        prods = x * col
        row: list[Cell] = [c]
        row += [t("path.product", a=float(x[i]), b=float(col[i])) for i in range(k)]
        if d_in > k:
            row.append(float(prods[k:].sum()))
        row.append(float(prods.sum()))
        if bias is not None:
            row.append(float(R.as_f64(bias[rows[c]])))
        row.append(float(y[c]))
        body.append(row)
    cap = t("path.proj_caption", n=n, m=len(rows), d=d_in) if n < len(rows) else t("path.proj_caption_all", d=d_in)
    return Table(header, body, caption=cap)


# ----------------------------------------------------------------------------------------------
# activations
# ----------------------------------------------------------------------------------------------

def activation_blocks(name: str, pre: np.ndarray, out: np.ndarray, dims: int, up: Optional[np.ndarray] = None,
                      hidden: Optional[np.ndarray] = None) -> list:
    """The activation of the first ``dims`` hidden features: ``pre`` → ``out`` (GELU, tanh GELU,
    ReLU, SiLU); with ``up`` and ``hidden`` a gated MLP's ``hidden = act(gate) ⊙ up``."""
    pre = np.asarray(pre, dtype=np.float64)
    n = min(dims, len(pre))
    a = pre[:n]
    if name == "gelu":
        f = Formula("GELU(a) = a · Φ(a),   Φ(a) = ½ (1 + erf(a / √2))",
                    r"\mathrm{GELU}(a)=a\,\Phi(a),\quad \Phi(a)=\tfrac12\big(1+\mathrm{erf}(a/\sqrt{2})\big)")
        mid = [Sym("Φ(a)", r"\Phi(a)")], [[0.5 * (1 + math.erf(v / math.sqrt(2)))] for v in a]
    elif name == "gelu_tanh":
        f = Formula("GELU(a) ≈ ½ a (1 + tanh(√(2/π) (a + 0.044715 a³)))",
                    r"\mathrm{GELU}(a)\approx\tfrac12 a\big(1+\tanh(\sqrt{2/\pi}\,(a+0.044715\,a^3))\big)")
        mid = [Sym("tanh(…)", r"\tanh(\ldots)")], [[math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3))]
                                                     for v in a]
    elif name == "silu":
        f = Formula("SiLU(a) = a · σ(a),   σ(a) = 1 / (1 + e^(−a))",
                    r"\mathrm{SiLU}(a)=a\,\sigma(a),\quad \sigma(a)=\frac{1}{1+e^{-a}}")
        mid = [Sym("σ(a)", r"\sigma(a)")], [[1 / (1 + math.exp(-v)) if v > -700 else 0.0] for v in a]
    else:
        f = Formula("ReLU(a) = max(0, a)", r"\mathrm{ReLU}(a)=\max(0,a)")
        mid = [], [[] for _ in a]
    header = [t("col.feature"), Sym("a", "a")] + mid[0] + [Sym("act(a)", r"\mathrm{act}(a)")]
    body = [[c, float(a[c])] + mid[1][c] + [float(out[c])] for c in range(n)]
    if up is not None:
        assert hidden is not None  # a gated MLP gives both
        header += [Sym("up", r"\mathrm{up}"), Sym("act(a)·up", r"\mathrm{act}(a)\cdot\mathrm{up}")]
        for c in range(n):
            body[c] += [float(up[c]), float(hidden[c])]
    return [f, Table(header, body, caption=t("path.first_features", n=n, d=len(pre)) if n < len(pre) else None)]


# ----------------------------------------------------------------------------------------------
# heads: concatenation and W_O
# ----------------------------------------------------------------------------------------------

def concat_step(z: np.ndarray, head: int, dims: int, tok: str, names: Sequence[str]) -> Step:
    """``z (H, d_head)`` of one token: the heads side by side in ``merged``."""
    H, dh = z.shape
    n = min(dims, dh)
    body = [[t("path.head_share_this", h=h) if h == head else t("path.head_share", h=h), f"{h * dh} … {(h + 1) * dh - 1}"]
            + [float(v) for v in z[h, :n]] for h in range(H)]
    header = [t("col.head"), t("col.merged_features")] + feats(n)
    blocks = [Formula("merged = [z⁽⁰⁾ | z⁽¹⁾ | … | z⁽ᴴ⁻¹⁾]", r"\mathrm{merged}=[z^{(0)}\mid z^{(1)}\mid\cdots\mid z^{(H-1)}]"),
              Para(t("path.concat_why", H=H, dh=dh, d=H * dh, tok=tok)),
              Table(header, body, caption=t("path.concat_caption", n=n, dh=dh)), trace_para(*names)]
    return Step("concat", t("path.step_concat"), blocks)


def output_step(z: np.ndarray, W_O, bias, out: np.ndarray, dims: int, head: int, names: Sequence[str]) -> Step:
    """``out_c = Σ_h z⁽ʰ⁾ · W_O⁽ʰ⁾[:, c] + b_c``: each head's share of the first ``dims`` outputs."""
    H, dh = z.shape
    d = len(out)
    n = min(dims, d)
    W = R.as_f64(W_O[:n])  # (n, H·d_head): output c's row
    body: list[list] = []
    for h in range(H):
        share = [float(z[h] @ W[c, h * dh:(h + 1) * dh]) for c in range(n)]
        body.append([t("path.head_share", h=h) if h != head else t("path.head_share_this", h=h)] + share)
    if bias is not None:
        body.append([Sym("b_O", "b_O")] + [float(v) for v in R.as_f64(bias[:n])])
    body.append([t("path.col_result")] + [float(v) for v in out[:n]])
    blocks = [Formula("out = merged · W_O + b_O = Σ_h z⁽ʰ⁾ W_O⁽ʰ⁾ + b_O",
                      r"\mathrm{out}=\mathrm{merged}\,W_O+b_O=\sum_h z^{(h)}W_O^{(h)}+b_O"),
              Para(t("path.wo_why", H=H, dh=dh, d=d)),
              Table([""] + feats(n), body, caption=t("path.first_features", n=n, d=d) if n < d else None),
              trace_para(*names)]
    return Step("attn_out", t("path.step_wo"), blocks)
