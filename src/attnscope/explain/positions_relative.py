"""``explain positions --scheme rotary`` and ``--scheme t5``: the relative position schemes.

Rotary (RoFormer; the rotation a model's q and k get, :func:`attnscope.reference.rotate`)::

    pair i = features (a_i, b_i), θ_i = base^(−2i/d),   (x_a, x_b) → R(p·θ_i)·(x_a, x_b)
    R((p + k)·θ) = R(k·θ)·R(p·θ)          so  q'_m · k'_n depends on m − n only

The rotation step and the distance proof are :mod:`.modern`'s, as in a decoder row; a model
(``model=``) gives its own head width, base, scaling and the rotate_half pairing.

T5 (Raffel et al. §2.1): the distance δ = key − query goes into a bucket
(:func:`attnscope.reference.t5_bucket_steps`, float32 logs as T5 computes them); each head adds
a learned number per bucket to its raw scores.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from .. import reference as R
from ..errors import InputError
from ..i18n import Msg, error
from ..positions import layer_inv_freq
from . import inputs
from .doc import DotRow, Matrix, Para, Step, Sym, Table, Worked, t
from .modern import distance_step, rotation_step
from .numbers import short
from .positions_worked import position_arg, positive, shown_pairs, whole

# ----------------------------------------------------------------------------------------------
# rotary
# ----------------------------------------------------------------------------------------------

def _scheme(cfg):
    """A model's position scheme as an error names it ("no" where it has none)."""
    scheme = getattr(cfg, "position", None)
    return Msg("errors.explain_no_positions") if scheme is None else scheme


def rotary_setup(model=None, layer: int = 0, d_k: Optional[int] = None, base: Optional[float] = None,
                 pairing: Optional[str] = None, n: int = 1) -> dict:
    """The rotation's settings: ``d`` (head width), ``inv_freq`` (d/2,) float64, ``base``, ``scaling``
    (kind or None), ``pairing``, ``model`` (name or None), for a text of ``n`` positions."""
    if model is None:
        d = 8 if d_k is None else whole(d_k, "d_k", 2)
        if d % 2:
            raise error(InputError, "errors.explain_d_k_even", d=d)
        b = 10000.0 if base is None else positive(base, "base")
        pairing = "half" if pairing is None else str(pairing)
        if pairing not in R.PAIRINGS:
            raise error(InputError, "errors.explain_pairing", value=repr(pairing))
        return {"d": d, "inv_freq": R.rope_inv_freq(d, b), "base": b, "scaling": None, "pairing": pairing,
                "model": None}
    given = [k for k, v in (("d_k", d_k), ("base", base), ("pairing", pairing)) if v is not None]
    if given:
        raise error(InputError, "errors.explain_from_model", name=given[0])
    m = inputs.loaded(model)
    cfg = m.config
    if getattr(cfg, "position", None) != "rotary":
        raise error(InputError, "errors.explain_not_rotary_model", model=m.name, kind=_scheme(cfg))
    layer = inputs.model_layer(layer, cfg.n_layers)
    inv, b, scaling = layer_inv_freq(cfg, layer, n)
    return {"d": int(cfg.d_head), "inv_freq": np.asarray(inv, dtype=np.float64), "base": float(b), "scaling": scaling,
            "pairing": "half", "model": m.name, "layer": int(layer)}


def explain_rotary(position: int, dim: Optional[int], offset: int, model=None, layer: int = 0,
                   d_k: Optional[int] = None, base: Optional[float] = None, pairing: Optional[str] = None,
                   vector=None) -> Worked:
    p = position_arg(position)
    k = whole(offset, "offset")
    if p + k < 0:
        raise error(InputError, "errors.explain_offset_negative", k=k, p=p, at=p + k)
    s = rotary_setup(model, layer, d_k, base, pairing, n=max(p, p + k) + 1)
    d, inv, pairing = s["d"], s["inv_freq"], s["pairing"]
    a, b = R.rope_pairs(d, pairing)
    dim = int(a[min(1, d // 2 - 1)]) if dim is None else whole(dim, "dim")
    if not 0 <= dim < d:
        raise error(InputError, "errors.explain_dim_range_head", dim=dim, d=d, last=d - 1)
    i = int(np.flatnonzero((a == dim) | (b == dim))[0])
    if vector is None:
        x = np.zeros(d)
        x[a] = 1.0  # each pair (1, 0): turned, it is (cos φ, sin φ), the rotary twin of PE(p)
    else:
        x = inputs.vector(vector, "vector", size=d)
    xp, xpk = (R.rotate(x[None], [q], inv, pairing)[0] for q in (p, p + k))  # (d,) each
    th = float(inv[i])
    Rp, Rk, Rpk = (R.rotation_matrix(q * th) for q in (p, k, p + k))
    intro = [Para(t("pos.rope_intro_model", model=s["model"], layer=s["layer"], d=d, p=p, k=k, pk=p + k)
                  if s["model"] else t("pos.rope_intro", d=d, base=short(s["base"]), p=p, k=k, pk=p + k)),
             Para(t("pos.rope_why")), Para(t("counting"), style="note")]
    if s["scaling"]:
        intro.append(Para(t("rope.scaled", kind=s["scaling"], base=short(s["base"])), style="note"))
    steps = []

    rows = [[t("pos.q_pair"), f"{dim} → ({a[i]}, {b[i]})", i],
            [t("pos.q_theta"), f"θ_{i} = {short(s['base'])}^(−2·{i}/{d})" if not s["scaling"] else f"θ_{i}", th],
            [t("pos.q_angle"), f"φ = p · θ_{i} = {p} · θ_{i}", p * th],
            [Sym("cos φ", r"\cos\varphi"), f"cos({p} · θ_{i})", float(Rp[0, 0])],
            [Sym("sin φ", r"\sin\varphi"), f"sin({p} · θ_{i})", float(Rp[1, 0])]]
    xa, xb = x[a[i]], x[b[i]]
    blocks = [Para(t("pos.rope_pair", dim=dim, i=i, fa=int(a[i]), fb=int(b[i]))),
              Table([t("pos.col_quantity"), t("pos.col_formula"), t("pos.col_value")], rows),
              Matrix(Sym(f"R({p}·θ_{i})", rf"R({p}\,\theta_{{{i}}})"), Rp, rows=["a", "b"], cols=["a", "b"]),
              DotRow(Sym(f"x'[{a[i]}, {b[i]}]", f"x'_{{{a[i]},{b[i]}}}"),
                     [[(Rp[0, 0], xa), (Rp[0, 1], xb)], [(Rp[1, 0], xa), (Rp[1, 1], xb)]],
                     [float(xp[a[i]]), float(xp[b[i]])])]
    steps.append(Step("pair", t("pos.step_rope_pair", p=p, i=i), blocks))

    steps.append(rotation_step([(Sym(f"x@{p}", f"x_{{{p}}}"), p, x, xp), (Sym(f"x@{p + k}", f"x_{{{p + k}}}"), p + k, x, xpk)],
                               inv_freq=inv, pairing=pairing, base=s["base"], scaling=s["scaling"],
                               model=bool(s["model"]), dims=max(8, i + 1),  # the chosen pair among them
                               notes=[Para(t("pos.rope_default_x"))] if vector is None else ()))

    show = shown_pairs(d // 2, i)
    prod = Rk @ Rp
    body = []
    for j in show:
        tj = float(inv[j])
        diff = float(np.abs(R.rotation_matrix(k * tj) @ R.rotation_matrix(p * tj) - R.rotation_matrix((p + k) * tj)).max())
        body.append([j, f"{a[j]}, {b[j]}", k * tj, p * tj, (p + k) * tj, diff])
    blocks = [Para(t("pos.rope_compose", i=i, p=p, k=k, pk=p + k)),
              Matrix(Sym(f"R({k}·θ_{i})", rf"R({k}\,\theta_{{{i}}})"), Rk, rows=["a", "b"], cols=["a", "b"]),
              Matrix(Sym(f"R({k}·θ_{i})·R({p}·θ_{i})", rf"R({k}\,\theta_{{{i}}})R({p}\,\theta_{{{i}}})"), prod,
                     rows=["a", "b"], cols=["a", "b"]),
              Matrix(Sym(f"R({p + k}·θ_{i})", rf"R({p + k}\,\theta_{{{i}}})"), Rpk, rows=["a", "b"], cols=["a", "b"]),
              Table([t("pos.col_pair"), t("pos.col_features"), Sym("k·θ_i", r"k\,\theta_i"), Sym("p·θ_i", r"p\,\theta_i"),
                     Sym("(p+k)·θ_i", r"(p+k)\,\theta_i"), t("pos.col_compose_diff")], body,
                    caption=t("pos.pairs_caption", n=len(show), m=d // 2) if len(show) < d // 2 else None)]
    worst = max(r[-1] for r in body)
    blocks.append(Para(t("pos.rope_compose_result", diff=f"{worst:.1e}", k=k)))
    steps.append(Step("compose", t("pos.step_rope_compose", p=p, k=k, pk=p + k), blocks))

    st, dist = distance_step(x, x, inv_freq=inv, pairing=pairing, qlabel="q = x", klabel="k = x")
    steps.append(st)
    steps.append(Step("meaning", t("pos.step_meaning"), [Para(t("pos.rope_meaning"))]))
    values = {"inv_freq": inv, "x": x, "rotated": xp, "rotated_shifted": xpk, "rotation": Rp, "rotation_offset": Rk,
              "rotation_shifted": Rpk, "distance": dist}
    meta = {"scheme": "rotary", "position": p, "dim": dim, "pair": i, "offset": k, "d_k": d, "base": s["base"],
            "pairing": pairing, "scaling": s["scaling"], "model": s["model"], "compose_max_abs_diff": worst}
    return Worked("positions", t("pos.title_rope", p=p, i=i), intro, steps, values=values, meta=meta)


# ----------------------------------------------------------------------------------------------
# T5 relative buckets
# ----------------------------------------------------------------------------------------------

def explain_t5(position: int, offset: Optional[int] = None, model=None, buckets: Optional[int] = None,
               max_distance: Optional[int] = None, causal: bool = False) -> Worked:
    i = position_arg(position, Msg("errors.explain_query_position"))
    # by default 13 keys back (a far bucket), or the first key for a query nearer the start
    delta = -min(13, i) if offset is None else whole(offset, "offset")
    j = i + delta
    if j < 0:
        raise error(InputError, "errors.explain_offset_key", k=delta, p=i, at=j)
    name, rel = None, None
    if model is not None:
        if buckets is not None or max_distance is not None:
            raise error(InputError, "errors.explain_buckets_from_model")
        m = inputs.loaded(model)
        if getattr(m.config, "position", None) != "t5_relative":
            raise error(InputError, "errors.explain_not_t5_model", model=m.name, kind=_scheme(m.config))
        buckets, max_distance, name = int(m.config.relative_buckets), int(m.config.relative_max_distance), m.name
        stack = getattr(m, "decoder" if causal else "encoder", None)
        rel = getattr(stack, "rel_bias", None)  # the stack's learned table (buckets, H), shared by its layers
    nb = 32 if buckets is None else whole(buckets, "buckets", 2)
    md = 128 if max_distance is None else whole(max_distance, "max_distance", 1)
    bidir = not causal
    half = nb // 2 if bidir else nb
    if half // 2 < 1 or (bidir and nb % 2):
        raise error(InputError, "errors.explain_t5_buckets_bi" if bidir else "errors.explain_t5_buckets_causal", nb=nb)
    if md <= half // 2:
        raise error(InputError, "errors.explain_t5_max_distance", md=md, n=half // 2)
    s = {k: v.item() if hasattr(v, "item") else v for k, v in
         R.t5_bucket_steps(np.array(delta), bidirectional=bidir, num_buckets=nb, max_distance=md).items()}
    b = int(s["bucket"])
    kind = "bi" if bidir else "causal"
    intro = [Para(t("pos.t5_intro_model", model=name) if name else t("pos.t5_intro")),
             Para(t(f"pos.t5_rule_{kind}", nb=nb, n=half, exact=half // 2, md=md)),
             Para(t("counting"), style="note")]
    rows = [[t("pos.q_delta"), f"δ = j − i = {j} − {i}", delta]]
    if bidir:
        rows.append([t("pos.q_side"), f"δ > 0 ? {half} : 0", int(s["offset"])])
        rows.append([t("pos.q_distance"), "|δ|", int(s["distance"])])
    else:
        rows.append([t("pos.q_distance"), "max(−δ, 0)", int(s["distance"])])
    rows.append([t("pos.q_exact"), f"n / 2 = {half} / 2", int(s["exact"])])
    if s["small"]:
        rows.append([t("pos.q_small"), f"{int(s['distance'])} < {int(s['exact'])}", int(s["distance"])])
    else:
        ex = int(s["exact"])
        rows += [[t("pos.q_log_ratio"), f"ln({int(s['distance'])} / {ex})", float(s["log_ratio"])],
                 [t("pos.q_log_span"), f"ln({md} / {ex})", float(s["log_span"])],
                 [t("pos.q_scaled"), f"ln({int(s['distance'])}/{ex}) / ln({md}/{ex}) · ({half} − {ex})", float(s["scaled"])],
                 [t("pos.q_large"), f"min({ex} + ⌊{int(np.floor(s['scaled']))}.…⌋, {half} − 1)", int(s["large"])]]
    rows.append([t("pos.q_bucket"), "offset + …" if bidir else "…", b])
    steps = [Step("bucket", t("pos.step_t5_bucket", d=delta),
                  [Para(t("pos.t5_float32"), style="note"),
                   Table([t("pos.col_quantity"), t("pos.col_formula"), t("pos.col_value")], rows),
                   Para(t("pos.t5_result", i=i, j=j, d=delta, b=b))]
                  + ([Para(t("pos.t5_future", d=delta), style="note")] if causal and delta > 0 else []))]

    span = np.arange(-2 * md, 2 * md + 1)
    got = R.t5_bucket(span, bidirectional=bidir, num_buckets=nb, max_distance=md)  # (4·md + 1,)
    ranges = []
    for bk in np.unique(got):
        ds = span[got == bk]
        lo, hi = int(ds.min()), int(ds.max())
        ranges.append([int(bk), _edge(lo, -2 * md), _edge(hi, 2 * md),
                       "-" if lo == -2 * md or hi == 2 * md else int(ds.size)])
    steps.append(Step("table", t("pos.step_t5_table"),
                      [Para(t("pos.t5_table_why", md=md)),
                       Table([t("pos.col_bucket"), t("pos.col_delta_from"), t("pos.col_delta_to"), t("pos.col_count")],
                             ranges)]))
    pairs = [[q, q + delta, delta, int(R.t5_bucket(np.array(delta), bidirectional=bidir, num_buckets=nb,
                                                    max_distance=md))] for q in range(max(0, -delta), max(0, -delta) + 4)]
    steps.append(Step("relative", t("pos.step_t5_relative"),
                      [Para(t("pos.t5_relative", d=delta, b=b)),
                       Table([t("pos.col_query"), t("pos.col_key"), Sym("δ", r"\delta"), t("pos.col_bucket")], pairs),
                       Para(t("pos.t5_meaning"))]))
    values = {k: (float(v) if isinstance(v, float) else v) for k, v in s.items()}
    if rel is not None:
        table = R.as_f64(rel.embedding.weight)  # (buckets, H)
        values["bias"] = table[b]  # (H,)
        steps.append(Step("bias", t("pos.step_t5_bias", b=b),
                          [Para(t("pos.t5_bias", model=name, stack=t("pos.stack_decoder" if causal else "pos.stack_encoder"),
                                  b=b, H=table.shape[1])),
                           Table([t("pos.col_head"), t("pos.col_bias")],
                                 [[h, float(table[b, h])] for h in range(table.shape[1])])]))
    values["bucket_of_delta"] = {"delta": span, "bucket": got}
    meta = {"scheme": "t5", "position": i, "key_position": j, "offset": delta, "buckets": nb, "max_distance": md,
            "bidirectional": bidir, "bucket": b, "model": name}
    return Worked("positions", t("pos.title_t5", d=delta), intro, steps, values=values, meta=meta)


def _edge(x: int, end: int):
    """A δ at the end of the table's range stands for 'and beyond' (the last log bucket is open)."""
    return ("≤ " if end < 0 else "≥ ") + str(x) if x == end else x
