"""One query row of a decoder (Llama, Qwen2, Mistral, Gemma 3) worked out from before the rotation.

What the trace gives: each head's projections ``q_proj``, ``k_proj`` (and, with QK-norm, the
normalised ``q_normed``, ``k_normed``) and ``v``, for query head h and the k/v head it shares.
What is recomputed here in float64 (:mod:`attnscope.reference`):

    q̂, k̂ = RMSNorm(q_proj), RMSNorm(k_proj)         Gemma 3 (shown beside the model's q_normed)
    q', k' = rotate(q_pre, p), rotate(k_pre, j)      pair (i, i + d/2) turned by p · θ_i
    s_j = q' · k'_j,  × the model's factor            1/√d_head, or Gemma's query_pre_attn_scalar^−½
    masked: later keys (causal), keys ≥ window back   then softmax and Σ p_j v_j as for every row

The operands before the rotation are recomputed in float64 from the model's weights through every
earlier layer (:mod:`attnscope.reference_model`), or, without that pass, taken from the trace's
float32 ones (the viewer's, which stores the same operands); the model's float32 rotated q, k,
scores, weights and z are compared at the end.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from .. import reference as R
from ..positions import layer_inv_freq as inv_freq  # the rotation speeds of a layer


def decoder_row(model, text: str, layer: int, head: int, qpos: int, forward: Optional[dict] = None) -> dict:
    """Every float64 number of one decoder row, and the model's own float32 ones to compare with.

    ``forward``: the float64 pass from the weights (:func:`attnscope.reference_model.forward`); the
    operands before the rotation come from it. None: they are the trace's float32 ones.

    Returns ``q_pre (d,)``, ``k_pre (n, d)`` (the operands before rotation), ``q_rot``, ``k_rot``,
    ``V (n, d)``, ``raw (n,)``, ``factor``, ``allowed (n,)``, ``window``, ``inv_freq``, ``base``,
    ``scaling``, ``kv_head``; with QK-norm ``rms`` (q_proj, k_proj, weights, eps, offset, the
    float64 norms); ``trace`` (the model's q_rot, k_rot, scores, weights, z), ``diff`` and, from the
    weights, ``operand_diff`` (the model's float32 q, k, v against these, largest differences).
    """
    cfg = model.config
    steps = ["q_proj", "k_proj", "q", "k", "v", "scores", "weights", "z"]
    if cfg.qk_norm:
        steps += ["q_normed", "k_normed"]
    every = ["q_proj", "k_proj"] if _span_all(cfg) else []  # QK-norm over all heads reads every head
    tr = model.trace(text, names=[f"layers.{layer}.attn.{s}[{head}]" for s in steps]
                     + [f"layers.{layer}.attn.{s}" for s in every])
    model_f32 = lambda s: R.as_f64(tr.step(layer, s, head, text=0))  # noqa: E731  (n, d) or (n, n)
    n = tr.length(0)
    g = R.kv_head(head, cfg.n_heads, cfg.kv_heads)
    p = f"layers.{layer}.attn"
    if forward is None:
        get = model_f32
        heads = lambda s: R.as_f64(tr[f"{p}.{s}"])[0][:, :n]  # noqa: E731  (H, n, d)
    else:
        get = lambda s: forward[f"{p}.{s}"][g if s[0] in "kv" else head]  # noqa: E731
        heads = lambda s: forward[f"{p}.{s}"]  # noqa: E731  (H, n, d)
    pre = "normed" if cfg.qk_norm else "proj"
    q_pre, k_pre, V = get(f"q_{pre}")[qpos], get(f"k_{pre}"), get("v")
    inv, base, scaling = inv_freq(cfg, layer, n)
    q_rot = R.rotate(q_pre[None], [qpos], inv, "half")[0]  # (d,)
    k_rot = R.rotate(k_pre, np.arange(n), inv, "half")  # (n, d)
    raw = R.raw_scores(q_rot, k_rot)  # (n,)
    out = {"q_pre": q_pre, "k_pre": k_pre, "q_rot": q_rot, "k_rot": k_rot, "V": V, "raw": raw,
           "factor": R.trace_factor(tr), "allowed": tr.mask(layer, text=0)[0, qpos].cpu().numpy(),
           "window": cfg.window(layer), "inv_freq": inv, "base": base, "scaling": scaling, "kv_head": g, "n": n}
    trace = {"q_rot": model_f32("q")[qpos], "k_rot": model_f32("k"), "scores": model_f32("scores")[qpos],
             "weights": model_f32("weights")[qpos], "z": model_f32("z")[qpos]}
    out["trace"] = trace
    out["diff"] = {"q": float(np.abs(q_rot - trace["q_rot"]).max()), "k": float(np.abs(k_rot - trace["k_rot"]).max()),
                   "scores": float(np.abs(raw - trace["scores"]).max())}
    if forward is not None:
        out["operand_diff"] = {"q": out["diff"]["q"], "k": out["diff"]["k"],
                               "v": float(np.abs(V - model_f32("v")).max())}
    if cfg.qk_norm:
        attn = model.layers[layer].attn
        wq, wk = (R.as_f64(m.weight) for m in (attn.q_norm, attn.k_norm))
        eps, offset = float(attn.q_norm.eps), float(attn.q_norm.offset)
        if _span_all(cfg):  # OLMo 2: each token's q (all heads side by side) normed over H·d, then split
            qs, ks = slice(head * cfg.d_head, (head + 1) * cfg.d_head), slice(g * cfg.d_head, (g + 1) * cfg.d_head)
            q_proj, k_proj = heads("q_proj")[:, qpos].reshape(-1), heads("k_proj").transpose(1, 0, 2).reshape(n, -1)
            qn, kn = R.rms_norm(q_proj, wq, eps, offset)[qs], R.rms_norm(k_proj, wk, eps, offset)[:, ks]  # (d,), (n, d)
            wq, wk = wq[qs], wk[ks]  # the scale of this head's features
        else:
            q_proj, k_proj = get("q_proj")[qpos], get("k_proj")
            qn, kn = R.rms_norm(q_proj, wq, eps, offset), R.rms_norm(k_proj, wk, eps, offset)
        mq, mk = model_f32("q_normed")[qpos], model_f32("k_normed")
        out["rms"] = {"q_proj": q_proj, "k_proj": k_proj, "q_weight": wq, "k_weight": wk, "eps": eps,
                      "offset": offset, "q_normed": qn, "k_normed": kn, "span": "all" if _span_all(cfg) else "head",
                      "diff": float(max(np.abs(qn - mq).max(), np.abs(kn - mk).max()))}
    return out


def _span_all(cfg) -> bool:
    """QK-norm over all heads' features before the head split (OLMo 2), not each head's."""
    return bool(cfg.qk_norm) and getattr(cfg, "qk_norm_span", "head") == "all"


def decoder_parts(model, d: dict, vals: dict, dims: int) -> dict:
    """What a decoder row adds to :func:`~.row.build_row`: the intro, the steps before the scores
    (shared heads, QK-norm, rotation, distance proof), Gemma's scale, why keys are hidden, the
    comparison with the model's rotated q and k, and their values/meta."""
    from .blocks import Para, Sym, T, Table, t
    from .modern import distance_step, gemma_scale_para, heads_step, rms_step, rotation_step, split_hidden
    from .places import ordinal_list

    cfg, dec = model.config, d["decoder"]
    tokens, qpos, head, layer = d.get("labels") or d["tokens"], d["qpos"], d["head"], d["layer"]
    n = len(tokens)
    label = lambda j: f"{j}:{tokens[j]}"  # noqa: E731
    ok = np.isfinite(vals["masked"])
    top = int(max(np.flatnonzero(ok), key=lambda j: vals["weights"][j]))
    qsym, ksym = Sym(f"q ({label(qpos)})", "q"), Sym(f"k ({label(top)})", "k")
    # from the weights, or the trace's operands (which the intro names: before or after QK-norm)
    intro = [Para(t("row.intro_decoder_weights" if d.get("operands") == "weights" else "row.intro_decoder",
                    model=model.name, layer=layer, head=head, H=cfg.n_heads, L=n, tokens=ordinal_list(tokens),
                    tok=label(qpos), dk=d["d_k"], operands=T("row.operands_normed" if cfg.qk_norm else "row.operands", {})))]
    steps = []
    if cfg.kv_heads != cfg.n_heads:
        steps.append(heads_step(cfg.n_heads, cfg.kv_heads, head))
    if "rms" in dec:
        r = dec["rms"]
        rows = [(f"q {label(qpos)}", "q", r["q_proj"], r["q_normed"])] + \
               [(f"k {label(j)}", "k", r["k_proj"][j], r["k_normed"][j]) for j in range(n)]
        steps.append(rms_step(rows, eps=r["eps"], offset=r["offset"], weights={"q": r["q_weight"], "k": r["k_weight"]},
                              dims=dims, trace_diff=r["diff"]))
        if r["span"] == "all":  # the RMS is over every head's features, the table this head's part
            dh, blocks = len(r["q_normed"]), steps[-1].blocks
            blocks[1] = Para(t("rms.why_all", d=len(r["q_proj"]), dk=r["k_proj"].shape[1], h=head, dh=dh))
            table = next(b for b in blocks if isinstance(b, Table))
            table.caption = t("rms.caption_all", n=min(dims, dh), dh=dh, h=head)
            g = R.kv_head(head, cfg.n_heads, cfg.kv_heads)
            for b in blocks:  # w shown is this head's part of w (q: features h·d…, k: its k/v head's)
                if isinstance(b, Para) and isinstance(b.text, T) and b.text.key == "rms.weight":
                    first = (head if b.text.params["x"] == "q" else g) * dh
                    total = len(r["q_proj"]) if b.text.params["x"] == "q" else r["k_proj"].shape[1]
                    b.text = T("rms.weight_all", dict(b.text.params, first=first, last=first + dh - 1, d=total))
    rot_rows = [(f"q {label(qpos)}", qpos, dec["q_pre"], dec["q_rot"]), (f"k {label(top)}", top, dec["k_pre"][top],
                                                                        dec["k_rot"][top])]
    notes = [Para(t("rope.all_keys", k=label(top))),
             Para(t("rope.trace_check", dq=f"{dec['diff']['q']:.1e}", dk=f"{dec['diff']['k']:.1e}"), style="note")]
    steps.append(rotation_step(rot_rows, inv_freq=dec["inv_freq"], pairing="half", base=dec["base"],
                               scaling=dec["scaling"], model=True, dims=dims, notes=notes))
    dist, dvals = distance_step(dec["q_pre"], dec["k_pre"][top], inv_freq=dec["inv_freq"], pairing="half",
                                qlabel=qsym, klabel=ksym)
    steps.append(dist)
    scale_para = gemma_scale_para(cfg.query_scale, d["d_k"]) if cfg.query_scale is not None else None
    later, far = split_hidden(qpos, n, dec["window"], True)
    mask_paras = []
    if later:
        mask_paras.append(Para(t("row.masked_causal", keys=", ".join(label(j) for j in later), tok=label(qpos)),
                               style="note"))
    if far:
        mask_paras.append(Para(t("row.masked_window", keys=", ".join(label(j) for j in far), tok=label(qpos),
                                 w=dec["window"]), style="note"))
    elif dec["window"] is not None:
        mask_paras.append(Para(t("window.none", w=dec["window"], n=n) if n <= dec["window"] else
                               t("row.window_reach", w=dec["window"], tok=label(qpos)), style="note"))
    if dec["window"] is not None:
        mask_paras.append(Para(t("window.why", w=dec["window"]), style="note"))
    meta = {"kind": "decoder", "n_heads": cfg.n_heads, "n_kv_heads": cfg.kv_heads, "kv_head": dec["kv_head"],
            "window": dec["window"], "rope": {"base": dec["base"], "pairing": "half", "scaling": dec["scaling"]},
            "query_scale": cfg.query_scale, "qk_norm": bool(cfg.qk_norm),
            "hidden": {"causal": later, "window": far}, "rotation_key": top,
            "trace_rotation_max_abs_diff": {"q": dec["diff"]["q"], "k": dec["diff"]["k"]}}
    values = {"q_rot": dec["q_rot"], "k_rot": dec["k_rot"], "q_pre": dec["q_pre"], "k_pre": dec["k_pre"],
              "inv_freq": dec["inv_freq"], "distance": dvals}
    if "rms" in dec:
        values.update(q_normed=dec["rms"]["q_normed"], k_normed=dec["rms"]["k_normed"])
    return {"intro": intro, "pre_steps": steps, "scale_para": scale_para, "mask_paras": mask_paras or None,
            "trace_key": "row.trace_check_decoder", "values": values, "meta": meta,
            "trace_check": {"dq": f"{dec['diff']['q']:.1e}", "dk": f"{dec['diff']['k']:.1e}"}}
