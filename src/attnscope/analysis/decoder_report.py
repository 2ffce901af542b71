"""The decoder part of an analysis report (causal models): sink, previous-token, duplicate and
induction scores per head and per layer, in CSV columns, JSON, the heatmaps' list and a Markdown section.

Everything here reads an :class:`.run.AnalysisResult` whose means hold the :data:`.decoder_heads.DECODER_STATS`
(``result.roles`` is not None); for other models every function returns nothing. ``lang`` picks
the language of the words (attnscope.i18n's ``analysis`` table); the numbers are the same in each.
"""

from __future__ import annotations

import math

import numpy as np

from ..i18n import Msg
from .decoder_heads import DECODER_DOCS, DECODER_STATS, REPEAT_STATS, ROLE_STAT
from .summary import counted_in, fmt_number, say

#: Per-layer columns (layers.csv, the JSON's ``decoder.layers``, the Markdown table).
LAYER_COLUMNS = ("sink", "sink_max", "sink_heads", "prev_token_max", "duplicate_max", "induction_max",
                 "induction_heads")


#: Heads listed by name per role in report.md (the strongest first; all of them are in heads.csv).
SHOWN = 24


def has_decoder(result) -> bool:
    return getattr(result, "roles", None) is not None


def _ran(result) -> bool:
    """Whether the repeated-token pass ran (``--induction-seqs 0`` skips it)."""
    return bool(result.repeat) and result.counters.get("repeat_texts", 0) > 0


def _max(v) -> float:
    v = np.asarray(v, dtype=float)
    return float(np.nanmax(v)) if np.isfinite(v).any() else float("nan")


def head_columns(result) -> list:
    """Extra heads.csv columns: the four scores and the roles."""
    return [*DECODER_STATS, "roles"] if has_decoder(result) else []


def layer_rows(result) -> list[dict]:
    """One dict per layer with :data:`LAYER_COLUMNS` (empty list for encoders)."""
    if not has_decoder(result):
        return []
    m, t, roles = result.means, result.config.thresholds, result.roles
    rows = []
    for l in range(result.n_layers):
        sink = np.asarray(m["sink"][l], dtype=float)
        rows.append({
            "layer": l, "sink": float(np.nanmean(sink)) if np.isfinite(sink).any() else float("nan"),
            "sink_max": _max(sink), "sink_heads": int(np.sum(np.nan_to_num(sink, nan=-1) >= t.sink)),
            "prev_token_max": _max(m["prev_token"][l]), "duplicate_max": _max(m["duplicate"][l]),
            "induction_max": _max(m["induction"][l]),
            "induction_heads": int(sum("induction" in r.split("+") for r in roles[l])),
        })
    return rows


def heads_with(result, role: str) -> list[tuple[int, int, float]]:
    """``[(layer, head, score)]`` of the heads with ``role``, strongest first."""
    stat = ROLE_STAT[role]
    out = [(l, h, float(result.means[stat][l, h])) for l in range(result.n_layers) for h in range(result.n_heads)
           if role in result.roles[l, h].split("+")]
    return sorted(out, key=lambda x: -x[2])


def to_json(result) -> dict:
    """The ``decoder`` entry of analysis.json (``{}`` for encoders); per-head scores are in ``heads``."""
    if not has_decoder(result):
        return {}
    t = result.config.thresholds
    num = lambda x: None if isinstance(x, float) and math.isnan(x) else x  # noqa: E731
    return {
        "statistics": dict(DECODER_DOCS), "repeat": result.repeat or None, "repeat_ran": _ran(result),
        "thresholds": {stat: getattr(t, stat) for stat in ROLE_STAT.values()},
        "roles": {role: [f"{l}.{h}" for l, h, _ in heads_with(result, role)] for role in ROLE_STAT},
        "layers": [{k: num(v) for k, v in r.items()} for r in layer_rows(result)],
        "copying": copying_json(result),
    }


def copying_json(result) -> dict:
    """The induction heads' OV copying scores (:mod:`.decoder_copying`): ``{"L.H": score}`` and why
    they are missing (None when computed)."""
    c = getattr(result, "copying", None) or {}
    return {"definition": "sum(eig) / sum(|eig|) of W_E W_OV W_U, norm scales folded (attnscope.circuits)",
            "scores": dict(c.get("scores", {})), "skipped": c.get("skipped")}


def copying_line(result, lang: str = "en") -> str:
    """report.md's sentence on the copying scores of the induction heads ('' when none is labelled)."""
    c = getattr(result, "copying", None) or {}
    found = heads_with(result, "induction")
    if not found or not c:
        return ""
    if c.get("skipped"):
        why = Msg(c["skipped_key"], **c.get("skipped_values", {})).render(lang) if c.get("skipped_key") else c["skipped"]
        return say("dec_copying_none", lang, why=why)
    scores = c.get("scores", {})
    return say("dec_copying", lang, heads=say("list_sep", lang).join(
        f"{l}.{h} {fmt_number(scores.get(f'{l}.{h}'), 2)}" for l, h, _ in found[:SHOWN]))


def heatmap_names(result) -> list:
    """The decoder scores that were measured (each has a heatmap)."""
    if not has_decoder(result):
        return []
    return [s for s in DECODER_STATS if s not in REPEAT_STATS or _ran(result)]


def markdown(result, lang: str = "en") -> str:
    """The "Decoder heads" section of report.md ('' for encoders)."""
    if not has_decoder(result):
        return ""
    t, rep = result.config.thresholds, result.repeat
    T = lambda key, **kw: say(key, lang, **kw)  # noqa: E731
    L = [T("dec_sec")]
    L.append(T("dec_sink", doc=T("dec_doc_sink")))
    if _ran(result):
        prefix = " ".join(f"`{x}`" for x in rep["prefix_tokens"]) or T("dec_no_prefix")
        capped = T("dec_capped", length=rep["length"], max_length=result.max_length) if rep.get("capped") else ""
        L.append(T("dec_repeat", sequences=counted_in(result.counters["repeat_texts"], "sequence", lang),
                   length=rep["length"], prefix=prefix, seed=rep["seed"], candidates=rep["candidates"], capped=capped))
    else:
        L.append(T("dec_not_measured"))
    L.append(T("dec_roles", rules=T("sep").join(T("rule", label=role, stat=stat, value=getattr(t, stat))
                                                for role, stat in ROLE_STAT.items())))
    for role in ROLE_STAT:
        if ROLE_STAT[role] in REPEAT_STATS and not _ran(result):
            continue
        found = heads_with(result, role)
        stat = ROLE_STAT[role]
        name = role.capitalize() if lang == "en" else role  # a sentence starts with it in English
        if found:
            more = len(found) - SHOWN
            L.append(T("dec_found", role=name, n=len(found), heads=T("list_sep").join(
                f"{l}.{h} ({s:.2f})" for l, h, s in found[:SHOWN]), more=T("dec_more", more=more) if more > 0 else ""))
        else:
            v = np.nan_to_num(np.asarray(result.means[stat], dtype=float), nan=-np.inf)
            l, h = np.unravel_index(int(np.argmax(v)), v.shape)
            L.append(T("dec_none", role=name, stat=stat, value=getattr(t, stat), head=f"{l}.{h}",
                       score=fmt_number(float(v[l, h]), 2)))
    if _ran(result) and copying_line(result, lang):
        L.append(copying_line(result, lang))
    L.append(T("dec_per_layer"))
    L.append(T("dec_table_head"))
    L.append("|---|" + "---|" * len(LAYER_COLUMNS))
    for r in layer_rows(result):  # the layer, then LAYER_COLUMNS: scores to 3 decimals, counts as they are
        L.append("| " + " | ".join(fmt_number(v) if isinstance(v, float) else str(v) for v in r.values()) + " |")
    L.append("")
    L.extend(f"![{s}](heatmaps/{s}.png)\n" for s in heatmap_names(result) if s in ("sink", "induction"))
    return "\n".join(L)


def summary_lines(result, lang: str = "en") -> list[str]:
    """What ``attnscope analyze`` prints for a causal model: the sink per layer and the heads of each role."""
    if not has_decoder(result):
        return []
    t = result.config.thresholds
    rows = layer_rows(result)
    out = [say("out_sink", lang, layers=" ".join(f"{r['layer']}:{fmt_number(r['sink'], 2)}" for r in rows))]
    for role, stat in ROLE_STAT.items():
        if stat in REPEAT_STATS and not _ran(result):
            continue
        found = heads_with(result, role)
        shown = say("list_sep", lang).join(f"{l}.{h} ({s:.2f})" for l, h, s in found[:12]) + \
            (" …" if len(found) > 12 else "")
        out.append(say("out_role", lang, role=role, stat=stat, value=getattr(t, stat), n=len(found))
                   + (say("out_role_list", lang, heads=shown) if found else ""))
    if not _ran(result):
        out.append(say("out_not_measured", lang))
    return out
