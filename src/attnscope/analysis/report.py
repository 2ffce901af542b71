"""Writing an analysis: CSV and JSON per head, layer × head heatmaps (PNG), a Markdown report.

Files written into the output folder:

``heads.csv``        one row per head: layer, head, label, importance, every statistic
``layers.csv``       one row per layer: the means over its heads and its label counts
``analysis.json``    everything: model, corpus, settings, counters, heads, layers, trend tests
``heatmaps/*.png``   one layer × head heatmap per statistic, importance and the labels
``report.md``        the findings in words and tables, linking the heatmaps
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Optional, Sequence, Union

import numpy as np

from ..errors import InputError
from ..explain.numbers import counted
from . import decoder_report
from .classify import FAMILY, LABELS, RULE_STAT
from .stats import STAT_DOCS, STAT_NAMES
from .summary import CLAIM, LAYER_STATS


def _num(x):
    """JSON-safe float: NaN → None."""
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def _fmt(x, digits=3) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def to_json(result) -> dict:
    s = result.summary
    return {
        "format": "attnscope.analysis", "version": 1,
        "model": result.model_name, "family": result.family, "corpus": result.corpus,
        "n_layers": result.n_layers, "n_heads": result.n_heads, "processes": result.world_size,
        "seconds": result.seconds, "timings": result.timings, "max_length": result.max_length,
        "baseline_distance": _num(result.baseline_distance),
        "settings": result.config.to_dict(),
        "counters": result.counters, "decode_errors": result.decode_examples,
        "statistics": {k: STAT_DOCS[k] for k in STAT_NAMES},
        "importance_metric": result.importance_metric,
        "heads": [{k: _num(v) for k, v in row.items()} for row in result.heads()],
        "layers": [{k: (_num(v) if not isinstance(v, dict) else v) for k, v in row.items()} for row in s["layers"]],
        "trends": {k: {kk: _num(vv) if not isinstance(vv, str) else vv for kk, vv in t.items()}
                   for k, t in s["trends"].items()},
        "claim": s["claim"],
        **({"decoder": decoder_report.to_json(result)} if decoder_report.has_decoder(result) else {}),
    }


def heatmap(values: np.ndarray, title: str, path: Path, *, fmt: str = "{:.2f}", cmap: str = "viridis",
            labels: Optional[np.ndarray] = None, vmin=None, vmax=None) -> None:
    """A layer (rows) × head (columns) heatmap with the values (or ``labels``) written in the cells."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n_layers, n_heads = values.shape
    w_in, h_in = 1.6 + 0.62 * n_heads, 1.0 + 0.5 * n_layers
    fig, ax = plt.subplots(figsize=(w_in, h_in), dpi=100)
    # fixed margins in inches (tight_layout would lay the text out a second time)
    fig.subplots_adjust(left=0.6 / w_in, right=1 - (1.0 if labels is None else 0.2) / w_in,
                        bottom=0.5 / h_in, top=1 - 0.35 / h_in)
    im = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, aspect="auto", vmin=vmin, vmax=vmax)
    ax.set_xticks(range(n_heads))
    ax.set_yticks(range(n_layers))
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    ax.set_title(title, fontsize=10)
    if n_layers * n_heads <= 400:
        lo, hi = np.nanmin(values) if np.isfinite(values).any() else 0, np.nanmax(values) if np.isfinite(values).any() else 1
        for i in range(n_layers):
            for j in range(n_heads):
                v = values[i, j]
                text = labels[i, j] if labels is not None else ("–" if not np.isfinite(v) else fmt.format(v))
                dark = labels is None and np.isfinite(v) and hi > lo and (v - lo) / (hi - lo) < 0.6
                ax.text(j, i, text, ha="center", va="center", fontsize=6.5,
                        color="white" if dark else "black")
    if labels is None:
        fig.colorbar(im, ax=ax, fraction=0.04, pad=0.02)
    fig.savefig(path)
    plt.close(fig)


def report_folder(out_dir: Union[str, Path]) -> Path:
    """``out_dir`` with its ``heatmaps`` folder made; InputError naming it when it cannot be."""
    out = Path(out_dir)
    try:
        (out / "heatmaps").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot create the output folder {str(out)!r}: {e}") from None
    return out


def write_report(result, out_dir: Union[str, Path]) -> dict:
    out = report_folder(out_dir)
    paths = {}
    rows = result.heads()
    cols = ["layer", "head", "label", "importance", *STAT_NAMES, *decoder_report.head_columns(result)]
    with open(out / "heads.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow(["" if r[c] is None or (isinstance(r[c], float) and math.isnan(r[c]))
                        else (f"{r[c]:.6g}" if isinstance(r[c], float) else r[c]) for c in cols])
    paths["heads.csv"] = out / "heads.csv"
    layers = result.summary["layers"]
    lcols = ["layer", *LAYER_STATS, *(["importance"] if result.importance is not None else []), *LABELS]
    extra = decoder_report.layer_rows(result)  # causal models: sink and induction per layer
    lcols += list(decoder_report.LAYER_COLUMNS) if extra else []
    with open(out / "layers.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(lcols)
        cells: Sequence[Optional[dict]] = extra if extra else [None] * len(layers)  # None: no decoder cells
        for r, x in zip(layers, cells):
            w.writerow([r["layer"], *[_fmt(r[s], 6) for s in LAYER_STATS],
                        *([_fmt(r["importance"], 6)] if result.importance is not None else []),
                        *[r["labels"].get(lab, 0) for lab in LABELS], *decoder_report.layer_cells(x)])
    paths["layers.csv"] = out / "layers.csv"
    (out / "analysis.json").write_text(json.dumps(to_json(result), indent=1, ensure_ascii=False), encoding="utf-8")
    paths["analysis.json"] = out / "analysis.json"

    maps = {s: result.means[s] for s in STAT_NAMES}
    if result.importance is not None:
        maps["importance"] = result.importance
    for name, values in maps.items():
        p = out / "heatmaps" / f"{name}.png"
        doc = STAT_DOCS.get(name, f"importance ({result.importance_metric})")
        heatmap(np.asarray(values, dtype=float), f"{name}: {doc}", p,
                fmt="{:.2f}" if name not in ("distance", "distance_content") else "{:.1f}",
                cmap="magma" if name == "importance" else "viridis")
        paths[f"heatmaps/{name}.png"] = p
    paths.update(decoder_report.write_heatmaps(result, out / "heatmaps", heatmap))
    codes = {lab: i for i, lab in enumerate(LABELS)}
    short = {"previous": "prev", "next": "next", "self": "self", "cls": "CLS", "sep": "SEP", "punct": "punc",
             "local": "loc", "broad": "brd", "other": "·"}
    p = out / "heatmaps" / "labels.png"
    # Pastel1 has 9 colours, one per label, fixed by vmin/vmax so a label keeps its colour
    heatmap(np.vectorize(codes.get)(result.labels).astype(float), "head labels (" + ", ".join(
            f"{short[lab]} = {lab}" for lab in LABELS if short[lab] != lab) + ")", p, cmap="Pastel1",
            labels=np.vectorize(short.get)(result.labels), vmin=-0.5, vmax=len(LABELS) - 0.5)
    paths["heatmaps/labels.png"] = p
    (out / "report.md").write_text(markdown(result), encoding="utf-8")
    paths["report.md"] = out / "report.md"
    return paths


def pass_sentence(result) -> str:
    """How many texts each pass used and how long it took (the report and the CLI say it alike)."""
    c, t = result.counters, result.timings
    stats = f"statistics pass: {counted(c['texts'], 'text')}"
    if t.get("statistics"):
        stats += f" in {t['statistics']:.1f} s"
    if result.importance is None:
        imp = "importance pass: not run (--importance-texts 0)"
    else:
        imp = (f"importance pass: {counted(c['importance_texts'], 'text')} (the first ones) × "
               f"{counted(result.n_layers * result.n_heads, 'head')} ablated")
        if t.get("importance"):
            imp += f" in {t['importance']:.1f} s"
    return f"Texts used: {stats}; {imp}."


def markdown(result) -> str:
    """The report in Markdown: corpus, per-layer table, trend tests, classification, importance."""
    c, s, cfg = result.counters, result.summary, result.config
    L = []
    L.append(f"# Head analysis: {result.model_name}\n")
    unit = "paragraph (built-in corpus)" if result.corpus.startswith("builtin:") else cfg.unit
    L.append(f"Corpus `{result.corpus}` (one text per {unit}): **{counted(c['texts'], 'text')}, "
             f"{counted(c['tokens'], 'token')}** in {counted(c['batches'], 'batch', 'batches')} of ≤ "
             f"{counted(cfg.batch_size, 'text')}; {counted(result.n_layers, 'layer')} × "
             f"{counted(result.n_heads, 'head')}; {counted(result.world_size, 'process', 'processes')}, "
             f"{result.seconds:.1f} s.\n")
    L.append(pass_sentence(result) + "\n")
    notes = []
    if c["truncated"]:
        notes.append(f"{counted(c['truncated'], 'text')} longer than {result.max_length} tokens "
                     f"{'was' if c['truncated'] == 1 else 'were'} truncated "
                     f"({counted(c['truncated_tokens'], 'token')} cut)")
    if c["skipped_decode"]:
        notes.append(f"{counted(c['skipped_decode'], 'line')} {'was' if c['skipped_decode'] == 1 else 'were'} "
                     "not valid UTF-8 and skipped (listed at the end)")
    if c["empty"]:
        notes.append(f"{counted(c['empty'], 'empty text')} {'was' if c['empty'] == 1 else 'were'} skipped")
    L.append("Nothing else was left out." if not notes else "Left out: " + "; ".join(notes) + ".")
    L.append("")
    L.append("Queries are real tokens" + (" including [CLS]/[SEP]" if cfg.special_queries else " except [CLS]/[SEP]")
             + "; padding never counts. Each head's value is the mean over all counted queries of the corpus "
             f"(`to_local`: window ±{cfg.window}). Entropy in nats, distances in tokens. A head that spread "
             f"every query's attention evenly over the keys it sees would have distance "
             f"**{_fmt(result.baseline_distance, 2)}** on this corpus: the scale against which to read `distance`.\n")

    L.append("## Per layer (means over heads)\n")
    show = ["distance", "distance_content", "entropy", "entropy_norm", "to_local", "to_cls", "to_sep", "to_punct",
            "to_prev", "to_next"]
    head = ["layer", *show] + (["importance"] if result.importance is not None else []) + ["labels"]
    L.append("| " + " | ".join(head) + " |")
    L.append("|" + "---|" * len(head))
    for r in s["layers"]:
        cells = [str(r["layer"])] + [_fmt(r[k], 2 if "distance" in k else 3) for k in show]
        if result.importance is not None:
            cells.append(_fmt(r["importance"], 4))
        cells.append(", ".join(f"{k} {v}" for k, v in r["labels"].items()))
        L.append("| " + " | ".join(cells) + " |")
    L.append("")

    L.append("## Local in low layers, global in high layers?\n")
    L.append("Spearman ρ of each head's statistic against its layer index (over all heads; permutation p-value), "
             "and over the per-layer means:\n")
    L.append("| statistic | claim predicts | ρ (heads) | p | ρ (layer means) | p | reading |")
    L.append("|---|---|---|---|---|---|---|")
    for k, t in s["trends"].items():
        L.append(f"| {k} | {'rises' if CLAIM[k] > 0 else 'falls'} | {_fmt(t['rho_heads'], 2)} | {_fmt(t['p_heads'], 4)} | "
                 f"{_fmt(t['rho_layers'], 2)} | {_fmt(t['p_layers'], 4)} | {t['verdict'].split(': ', 1)[-1]} |")
    L.append(f"\n**Verdict: {s['claim']}.**\n")

    L.append("## Head types\n")
    th = cfg.thresholds.to_dict()
    L.append("Rules (settable with `--threshold NAME=VALUE`): " + "; ".join(
        f"{lab}: {RULE_STAT[lab]} ≥ {th[lab]:g}" for lab in RULE_STAT) +
        ". The dominant-key rule with the largest fraction wins, then local, then broad; otherwise other.\n")
    L.append("| label | family | heads | which (layer.head) |")
    L.append("|---|---|---|---|")
    for lab in LABELS:
        where = [f"{l}.{h}" for l in range(result.n_layers) for h in range(result.n_heads) if result.labels[l, h] == lab]
        if where:
            L.append(f"| {lab} | {FAMILY[lab]} | {len(where)} | {' '.join(where)} |")
    L.append("")
    if result.importance is not None:
        metric = ("1 − cosine similarity of the pooled sentence embedding"
                  if result.importance_metric == "one_minus_cosine" else "change of the next-token loss (nats/token)")
        L.append(f"## Head importance\n\nAblating one head (z = 0) on the first {counted(c['importance_texts'], 'text')}; "
                 f"measure: {metric}. Most important heads:\n")
        imp = result.importance
        order = np.argsort(-np.nan_to_num(imp, nan=-np.inf), axis=None)[:10]
        L.append("| head | importance | label | distance | entropy_norm |")
        L.append("|---|---|---|---|---|")
        for flat in order:
            l, h = divmod(int(flat), result.n_heads)
            L.append(f"| {l}.{h} | {_fmt(float(imp[l, h]), 4)} | {result.labels[l, h]} | "
                     f"{_fmt(float(result.means['distance'][l, h]), 2)} | {_fmt(float(result.means['entropy_norm'][l, h]), 3)} |")
        L.append("")
    if decoder_report.has_decoder(result):
        L.append(decoder_report.markdown(result))
    L.append("## Heatmaps\n")
    names = list(STAT_NAMES) + (["importance"] if result.importance is not None else []) + ["labels"]
    names += decoder_report.heatmap_names(result)
    L.append(" · ".join(f"[{n}](heatmaps/{n}.png)" for n in names) + "\n")
    L.append("![labels](heatmaps/labels.png)\n")
    L.append("![distance](heatmaps/distance.png)\n")
    if result.decode_examples:
        L.append("## Lines skipped (not UTF-8)\n")
        L.extend(f"- {x}" for x in result.decode_examples)
        if c["skipped_decode"] > len(result.decode_examples):
            L.append(f"- … and {c['skipped_decode'] - len(result.decode_examples)} more")
        L.append("")
    return "\n".join(L)
