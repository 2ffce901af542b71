"""The "Special tokens with and without norms" part of an analysis: JSON and report.md (en/zh).

The numbers are :func:`.norm_shares.norm_shares`'s; this module only writes them. Its words are the
``analysis.norms_*`` keys of ``i18n/catalog/viewer_attribution.toml``.
"""

from __future__ import annotations

import numpy as np

from .summary import counted_in, say

#: The heads listed in report.md: those with the largest raw share.
SHOWN = 10



def has_shares(result) -> bool:
    return bool(getattr(result, "norm_shares", None)) and result.norm_shares.get("texts", 0) > 0


def to_json(result) -> dict:
    """``{"texts", "rows", "kinds", "specials", kind: {"raw", "norm" (per layer, a list per head),
    "layer_raw", "layer_norm" (per layer)}}``, or {} when the pass did not run."""
    if not has_shares(result):
        return {}
    s = result.norm_shares
    out: dict = {"texts": s["texts"], "rows": s["rows"], "kinds": s["kinds"], "specials": s["specials"],
                 "definition": say("norms_doc", "en")}
    for k in s["kinds"]:
        out[k] = {what: np.asarray(s[k][what]).round(6).tolist() for what in ("raw", "norm", "layer_raw", "layer_norm")}
    return out


def markdown(result, lang: str = "en") -> str:
    """The report's section ('' when the pass did not run)."""
    if not has_shares(result):
        return ""
    s = result.norm_shares
    T = lambda key, **kw: say(key, lang, **kw)  # noqa: E731
    L = [T("norms_sec"), T("norms_intro", texts=counted_in(s["texts"], "text", lang), rows=s["rows"],
                           doc=T("norms_doc"))]
    kinds = s["kinds"]
    kind = {k: T("norms_kind_" + k) for k in kinds}  # norms_kind_cls, norms_kind_sep, norms_kind_first
    L.append("| " + T("norms_col_layer") + " | " + " | ".join(
        T("norms_cell", kind=kind[k], what=T(what)) for k in kinds for what in ("norms_raw", "norms_norm", "norms_layer"))
        + " |")
    L.append("|---|" + "---|---|---|" * len(kinds))
    for layer in range(len(s[kinds[0]]["layer_raw"])):
        cells = []
        for k in kinds:
            d = s[k]
            cells += [f"{d['layer_raw'][layer]:.3f}", f"{float(np.mean(d['norm'][layer])):.3f}", f"{d['layer_norm'][layer]:.3f}"]
        L.append(f"| {layer} | " + " | ".join(cells) + " |")
    L.append("")
    total = {k: (float(np.mean(s[k]["raw"])), float(np.mean(s[k]["norm"]))) for k in kinds}
    L.append(T("norms_overall", items=T("list_sep").join(
        T("norms_item", kind=kind[k], raw=f"{total[k][0]:.3f}", norm=f"{total[k][1]:.3f}") for k in kinds)))
    raw = np.sum([s[k]["raw"] for k in kinds], axis=0)  # (n_layers, H): every special kind together
    norm = np.sum([s[k]["norm"] for k in kinds], axis=0)
    L.append(T("norms_top", n=min(SHOWN, raw.size)))
    L.append(f"| {T('col_head')} | {T('norms_raw')} | {T('norms_norm')} |")
    L.append("|---|---|---|")
    for flat in np.argsort(-raw, axis=None)[:SHOWN]:
        layer, h = divmod(int(flat), raw.shape[1])
        L.append(f"| {layer}.{h} | {raw[layer, h]:.3f} | {norm[layer, h]:.3f} |")
    L.append("")
    return "\n".join(L)
