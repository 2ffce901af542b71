"""Writing an analysis: CSV and JSON per head, layer × head heatmaps (PNG), a Markdown report.

Files written into the output folder:

``heads.csv``        one row per head: layer, head, label, importance, every statistic
``layers.csv``       one row per layer: the means over its heads and its label counts
``analysis.json``    everything: model, corpus, settings, counters, heads, layers, trend tests
``heatmaps/*.png``   one layer × head heatmap per statistic, importance and the labels
``report.md``        the findings in words and tables, linking the heatmaps

``lang="zh"`` writes report.md and the heatmaps' titles and axes in Chinese (the strings are
attnscope.i18n's ``analysis`` table); the numbers, the CSV and the JSON are the same in every
language.
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import numpy as np

from ..errors import InputError
from ..i18n import check_lang, error
from . import decoder_report, norm_report
from .classify import FAMILY, LABELS, RULE_STAT
from .stats import STAT_DOCS, STAT_NAMES
from .summary import CLAIM, LAYER_STATS, claim_with_layers, counted_in, fmt_number, say, verdict_reading


def json_number(x):
    """JSON-safe float: NaN → None."""
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def csv_cell(x) -> str:
    """A CSV cell: "" for None or NaN, a float to 6 significant digits, anything else as written."""
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else (f"{x:.6g}" if isinstance(x, float) else str(x))


def write_csv(path: Path, cols: Sequence[str], rows) -> Path:
    """``rows`` (dicts) under the header ``cols``, one :func:`csv_cell` a cell (a column a row lacks: NaN,
    an empty cell); the single-stack and the encoder–decoder analyses write their CSV files with it."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow([csv_cell(r.get(c, float("nan"))) for c in cols])
    return path


def to_json(result) -> dict:
    s = result.summary
    return {
        "format": "attnscope.analysis", "version": 1,
        "model": result.model_name, "family": result.family, "corpus": result.corpus,
        "n_layers": result.n_layers, "n_heads": result.n_heads, "processes": result.world_size,
        "seconds": result.seconds, "timings": result.timings, "max_length": result.max_length,
        "baseline_distance": json_number(result.baseline_distance),
        "settings": result.config.to_dict(),
        "counters": result.counters, "decode_errors": result.decode_examples,
        "statistics": {k: STAT_DOCS[k] for k in STAT_NAMES},
        "importance_metric": result.importance_metric,
        "heads": [{k: json_number(v) for k, v in row.items()} for row in result.heads()],
        "layers": [{k: (json_number(v) if not isinstance(v, dict) else v) for k, v in row.items()} for row in s["layers"]],
        "trends": {k: {kk: json_number(vv) if not isinstance(vv, str) else vv for kk, vv in t.items()}
                   for k, t in s["trends"].items()},
        "claim": s["claim"],
        **({"decoder": decoder_report.to_json(result)} if decoder_report.has_decoder(result) else {}),
        **({"special_norms": norm_report.to_json(result)} if norm_report.has_shares(result) else {}),
    }


def heatmap(values: np.ndarray, title: str, path: Path, *, fmt: str = "{:.2f}", cmap: str = "viridis",
            labels: Optional[np.ndarray] = None, vmin=None, vmax=None, lang: str = "en") -> None:
    """A layer (rows) × head (columns) heatmap of ``values (n_layers, n_heads)`` with the values (or ``labels``)
    written in the cells."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..fonts import matplotlib_rc

    with plt.rc_context(matplotlib_rc() if lang == "zh" else {}):  # CJK glyphs behind DejaVu Sans
        n_layers, n_heads = values.shape
        w_in, h_in = 1.6 + 0.62 * n_heads, 1.0 + 0.5 * n_layers
        fig, ax = plt.subplots(figsize=(w_in, h_in), dpi=100)
        # over the figure, which grows to hold it: a statistic's doc is wider than a model of few heads (4 in Gemma 3 270M)
        head = fig.suptitle(title, fontsize=10, y=1 - 0.06 / h_in)
        w_in = max(w_in, head.get_window_extent().width / fig.dpi + 0.2)
        fig.set_figwidth(w_in)
        # fixed margins in inches (tight_layout would lay the text out a second time)
        fig.subplots_adjust(left=0.6 / w_in, right=1 - (1.0 if labels is None else 0.2) / w_in,
                            bottom=0.5 / h_in, top=1 - 0.35 / h_in)
        im = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, aspect="auto", vmin=vmin, vmax=vmax)
        ax.set_xticks(range(n_heads))
        ax.set_yticks(range(n_layers))
        ax.set_xlabel(say("col_head", lang))
        ax.set_ylabel(say("col_layer", lang))
        if n_layers * n_heads <= 400:
            lo, hi = np.nanmin(values) if np.isfinite(values).any() else 0, np.nanmax(values) if np.isfinite(values).any() else 1
            # the colour's place on the scale drawn: a fixed 0..1 (the decoder scores) is not the values' own range
            lo, hi = lo if vmin is None else vmin, hi if vmax is None else vmax
            for i in range(n_layers):
                for j in range(n_heads):
                    v = values[i, j]
                    text = labels[i, j] if labels is not None else ("–" if not np.isfinite(v) else fmt.format(v))
                    dark = labels is None and np.isfinite(v) and hi > lo and (v - lo) / (hi - lo) < 0.6
                    ax.text(j, i, text, ha="center", va="center", fontsize=6.5,
                            color="white" if dark else "black")
        # an all-NaN statistic (to_cls of a model without [CLS]) has no scale: matplotlib's -0.1 … 0.1 would be made up
        if labels is None and np.isfinite(values).any():
            fig.colorbar(im, ax=ax, fraction=0.04, pad=0.02)
        fig.savefig(path)
        plt.close(fig)


def report_folder(out_dir: Union[str, Path]) -> Path:
    """``out_dir`` with its ``heatmaps`` folder made; InputError naming it when it cannot be."""
    out = Path(out_dir)
    try:
        (out / "heatmaps").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise error(InputError, "errors.analysis_out_folder", path=repr(str(out)), why=e) from None
    return out


def write_report(result, out_dir: Union[str, Path], lang: str = "en") -> dict:
    """Write the files of the module doc into ``out_dir`` (report.md and the heatmaps in ``lang``);
    return their paths."""
    lang = check_lang(lang)
    out = report_folder(out_dir)
    paths = {}
    cols = ["layer", "head", "label", "importance", *STAT_NAMES, *decoder_report.head_columns(result)]
    paths["heads.csv"] = write_csv(out / "heads.csv", cols, result.heads())
    layers = result.summary["layers"]
    extra = decoder_report.layer_rows(result)  # causal models: sink and induction per layer
    lcols = ["layer", *LAYER_STATS, *(["importance"] if result.importance is not None else []), *LABELS,
             *(decoder_report.LAYER_COLUMNS if extra else ())]
    rows = ({**r, **{lab: r["labels"].get(lab, 0) for lab in LABELS}, **x}
            for r, x in zip(layers, extra or [{}] * len(layers)))
    # every cell as in heads.csv (csv_cell: 6 significant digits; 6 decimals wrote 1e-7 as 0.000000)
    paths["layers.csv"] = write_csv(out / "layers.csv", lcols, rows)
    (out / "analysis.json").write_text(json.dumps(to_json(result), indent=1, ensure_ascii=False), encoding="utf-8")
    paths["analysis.json"] = out / "analysis.json"

    # (name, values, title, heatmap options), in the order the files are listed
    maps: list[tuple[str, Any, str, dict]] = [
        (s, result.means[s], say("map_title", lang, name=s, doc=say("doc_" + s, lang)), {}) for s in STAT_NAMES]
    if result.importance is not None:
        maps.append(("importance", result.importance, say("map_title", lang, name="importance", doc=say(
            "map_importance", lang, metric=result.importance_metric)), {"cmap": "magma"}))
    maps += [(s, result.means[s], say("dec_title_" + s, lang), {"cmap": "cividis", "vmin": 0.0, "vmax": 1.0})
             for s in decoder_report.heatmap_names(result)]  # short titles: the figure is as wide as the heads
    codes = {lab: i for i, lab in enumerate(LABELS)}
    short = {"previous": "prev", "next": "next", "self": "self", "cls": "CLS", "sep": "SEP", "punct": "punc",
             "local": "loc", "broad": "brd", "other": "·"}
    # Pastel1 has 9 colours, one per label, fixed by vmin/vmax so a label keeps its colour
    legend = say("list_sep", lang).join(f"{short[lab]} = {lab}" for lab in LABELS if short[lab] != lab)
    maps.append(("labels", np.vectorize(codes.get)(result.labels), say("map_labels", lang, legend=legend),
                 {"cmap": "Pastel1", "labels": np.vectorize(short.get)(result.labels), "vmin": -0.5,
                  "vmax": len(LABELS) - 0.5}))
    for name, values, title, options in maps:
        p = out / "heatmaps" / f"{name}.png"
        heatmap(np.asarray(values, dtype=float), title, p, fmt="{:.1f}" if name in ("distance", "distance_content")
                else "{:.2f}", lang=lang, **options)
        paths[f"heatmaps/{name}.png"] = p
    (out / "report.md").write_text(markdown(result, lang), encoding="utf-8")
    paths["report.md"] = out / "report.md"
    return paths


def pass_sentence(result, lang: str = "en") -> str:
    """How many texts each pass used and how long it took (the report and the CLI say it alike)."""
    c, t = result.counters, result.timings
    stats = say("pass_stats", lang, texts=counted_in(c["texts"], "text", lang))
    if t.get("statistics"):
        stats += say("pass_time", lang, seconds=t["statistics"])
    if result.importance is None:
        imp = say("pass_no_importance", lang)
    else:
        imp = say("pass_importance", lang, texts=counted_in(c["importance_texts"], "text", lang),
                  heads=counted_in(result.n_layers * result.n_heads, "head", lang))
        if t.get("importance"):
            imp += say("pass_time", lang, seconds=t["importance"])
    return say("passes", lang, stats=stats, importance=imp)


def left_out(c: dict, lang: str, max_length: int = 0) -> str:
    """The report's sentence on what was left out of the corpus (``c``: the counters; an
    encoder–decoder analysis truncates nothing)."""
    notes: list[str] = []
    n = lambda k: "1" if c[k] == 1 else "n"  # noqa: E731 (English: was / were)
    if c.get("truncated"):
        notes.append(say("note_truncated_" + n("truncated"), lang, texts=counted_in(c["truncated"], "text", lang),
                         max_length=max_length, tokens=counted_in(c["truncated_tokens"], "token", lang)))
    if c.get("skipped_decode"):
        notes.append(say("note_decode_" + n("skipped_decode"), lang,
                         lines=counted_in(c["skipped_decode"], "line", lang)))
    if c.get("empty"):
        notes.append(say("note_empty_" + n("empty"), lang, texts=counted_in(c["empty"], "empty", lang)))
    return say("left_out", lang, notes=say("sep", lang).join(notes)) if notes else say("nothing_left_out", lang)


_DECODE = re.compile(r"(?P<where>.+): (?P<b>bytes?) (?P<hex>[0-9a-f ]+) at byte (?P<pos>\d+) is not valid "
                     r"(?P<encoding>\S+)\Z")


def decode_line(line: str, lang: str = "en") -> str:
    """A skipped line as the corpus reader described it (``FILE:LINE: byte 80 at byte 4 is not valid
    utf-8``), in ``lang``."""
    m = _DECODE.match(line)
    if lang == "en" or m is None:
        return line
    return say("decode_line", lang, where=m["where"], bytes=say(m["b"], lang, hex=m["hex"]), pos=m["pos"],
               encoding=m["encoding"])


def markdown(result, lang: str = "en") -> str:
    """The report in Markdown: corpus, per-layer table, trend tests, classification, importance."""
    c, s, cfg = result.counters, result.summary, result.config
    T = lambda key, **kw: say(key, lang, **kw)  # noqa: E731
    n = lambda count, unit: counted_in(count, unit, lang)  # noqa: E731
    L = []
    L.append(T("title", model=result.model_name))
    unit = T("per_builtin") if result.corpus.startswith("builtin:") else T("per_" + cfg.unit)
    L.append(T("corpus", corpus=result.corpus, unit=unit, texts=n(c["texts"], "text"), tokens=n(c["tokens"], "token"),
               batches=n(c["batches"], "batch"), batch_size=n(cfg.batch_size, "text"),
               layers=n(result.n_layers, "layer"), heads=n(result.n_heads, "head"),
               processes=n(result.world_size, "process"), seconds=result.seconds))
    L.append(pass_sentence(result, lang) + "\n")
    L.append(left_out(result.counters, lang, result.max_length))
    L.append("")
    L.append(T("queries", which=T("queries_incl" if cfg.special_queries else "queries_excl"), window=cfg.window,
               baseline=fmt_number(result.baseline_distance, 2)))

    L.append(T("sec_layers"))
    show = ["distance", "distance_content", "entropy", "entropy_norm", "to_local", "to_cls", "to_sep", "to_punct",
            "to_prev", "to_next"]
    head = [T("col_layer"), *show] + ([T("col_importance")] if result.importance is not None else []) + [T("col_labels")]
    L.append("| " + " | ".join(head) + " |")
    L.append("|" + "---|" * len(head))
    for r in s["layers"]:
        cells = [str(r["layer"])] + [fmt_number(r[k], 2 if "distance" in k else 3) for k in show]
        if result.importance is not None:
            cells.append(fmt_number(r["importance"], 4))
        cells.append(T("list_sep").join(f"{k} {v}" for k, v in r["labels"].items()))
        L.append("| " + " | ".join(cells) + " |")
    L.append("")

    L.append(T("sec_trends"))
    L.append(T("trends_intro"))
    L.append(T("trends_head"))
    L.append("|---|---|---|---|---|---|---|")
    for k, t in s["trends"].items():
        L.append(f"| {k} | {T('rises' if CLAIM[k] > 0 else 'falls')} | {fmt_number(t['rho_heads'], 2)} | "
                 f"{fmt_number(t['p_heads'], 4)} | {fmt_number(t['rho_layers'], 2)} | {fmt_number(t['p_layers'], 4)} | "
                 f"{verdict_reading(k, t, lang=lang)} |")
    L.append(T("verdict_line", claim=s["claim"] if lang == "en" else claim_with_layers(s["trends"], s["layers"], lang)))

    L.append(T("sec_types"))
    th = cfg.thresholds.to_dict()
    L.append(T("rules", rules=T("sep").join(T("rule", label=lab, stat=RULE_STAT[lab], value=th[lab])
                                            for lab in RULE_STAT)))
    L.append(T("types_head"))
    L.append("|---|---|---|---|")
    for lab in LABELS:
        where = [f"{l}.{h}" for l in range(result.n_layers) for h in range(result.n_heads) if result.labels[l, h] == lab]
        if where:
            L.append(f"| {lab} | {T('family_' + FAMILY[lab].replace('/', '_'))} | {len(where)} | {' '.join(where)} |")
    L.append("")
    if result.importance is not None:
        metric = T("metric_cosine" if result.importance_metric == "one_minus_cosine" else "metric_loss")
        L.append(T("sec_importance", texts=n(c["importance_texts"], "text"), metric=metric))
        imp = result.importance
        order = np.argsort(-np.nan_to_num(imp, nan=-np.inf), axis=None)[:10]
        L.append(f"| {T('col_head')} | {T('col_importance')} | {T('col_label')} | distance | entropy_norm |")
        L.append("|---|---|---|---|---|")
        for flat in order:
            l, h = divmod(int(flat), result.n_heads)
            L.append(f"| {l}.{h} | {fmt_number(float(imp[l, h]), 4)} | {result.labels[l, h]} | "
                     f"{fmt_number(float(result.means['distance'][l, h]), 2)} | "
                     f"{fmt_number(float(result.means['entropy_norm'][l, h]), 3)} |")
        L.append("")
    if decoder_report.has_decoder(result):
        L.append(decoder_report.markdown(result, lang))
    if norm_report.has_shares(result):
        L.append(norm_report.markdown(result, lang))
    L.append(T("sec_heatmaps"))
    names = list(STAT_NAMES) + (["importance"] if result.importance is not None else []) + ["labels"]
    names += decoder_report.heatmap_names(result)
    L.append(" · ".join(f"[{x}](heatmaps/{x}.png)" for x in names) + "\n")
    L.append("![labels](heatmaps/labels.png)\n")
    L.append("![distance](heatmaps/distance.png)\n")
    if result.decode_examples:
        L.append(T("sec_skipped"))
        L.extend(f"- {decode_line(x, lang)}" for x in result.decode_examples)
        if c["skipped_decode"] > len(result.decode_examples):
            L.append(T("skipped_more", n=c["skipped_decode"] - len(result.decode_examples)))
        L.append("")
    return "\n".join(L)
