"""``analyze`` for encoder–decoder models (T5, BART) over a parallel corpus.

The corpus holds one pair per line, ``source<TAB>target`` (a file, ``.gz`` or a folder of ``.txt``
files, as :mod:`.corpus` reads them). Three stacks are measured, each per layer and head:

* ``encoder`` — the encoder's self-attention over the source: the statistics of :mod:`.stats`;
* ``self`` — the decoder's causal self-attention over the target: the same, causal;
* ``cross`` — every target token's attention over the source: :mod:`.cross_stats` (entropy,
  weight on the source token at the same relative position, a band around it, how often the
  most attended source token is there, distance from the diagonal, weight on ``</s>``, monotony).

Pairs are read in batches of ``batch_size``; each batch is traced once, reduced to sums and
dropped (nothing is kept per pair). The result writes heads.csv (one row per stack, layer and
head), layers.csv, analysis.json, heatmaps/*.png and report.md.
"""

from __future__ import annotations

import csv
import json
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

import numpy as np

from ..errors import InputError
from .accumulate import StatsAccumulator
from .batching import is_punctuation
from .corpus import CorpusReader
from .cross_stats import CROSS_DOCS, CROSS_STATS, cross_sums, special_kinds
from .stats import STAT_DOCS, STAT_NAMES, StatOptions, attention_sums

STACKS = ("encoder", "self", "cross")
TITLES = {"encoder": "encoder self-attention", "self": "decoder self-attention (causal)",
          "cross": "cross-attention (target → source)"}
#: The statistics each stack reports.
STACK_STATS = {"encoder": STAT_NAMES, "self": STAT_NAMES, "cross": CROSS_STATS}
#: Per stack, the statistics the report's tables and heatmaps show.
SHOWN = {"encoder": ("entropy_norm", "distance", "to_prev", "to_self", "to_sep"),
         "self": ("entropy_norm", "distance", "to_prev", "to_self", "to_cls"),
         "cross": ("entropy_norm", "to_diagonal", "diagonal_band", "argmax_diagonal", "diagonal_offset",
                   "to_source_end", "monotonic")}


def split_pair(text: str, where: str) -> tuple[str, str]:
    """``source<TAB>target`` → the two texts; InputError naming the line when either is missing."""
    if "\t" not in text:
        raise InputError(f"{where}: a parallel corpus line is 'source<TAB>target'; this line has no tab between two "
                         f"texts (a target without its source, or a source without its target?)")
    source, target = text.split("\t", 1)
    if not source.strip():
        raise InputError(f"{where}: the target has no source (the text before the tab is empty)")
    if not target.strip():
        raise InputError(f"{where}: the source has no target (the text after the tab is empty)")
    return source, target


@dataclass
class Seq2SeqAnalysis:
    """Per stack ``means[stack][stat]`` (n_layers of that stack, n_heads); counters; settings."""

    model_name: str
    family: str
    corpus: str
    n_heads: int
    layers: dict
    means: dict
    counters: dict
    window: int
    seconds: float = 0.0
    kind: str = "seq2seq"
    settings: dict = field(default_factory=dict)

    def heads(self) -> list[dict]:
        rows = []
        for stack in STACKS:
            for l in range(self.layers[stack]):
                for h in range(self.n_heads):
                    row = {"stack": stack, "layer": l, "head": h}
                    row.update({s: float(self.means[stack][s][l, h]) for s in STACK_STATS[stack]})
                    rows.append(row)
        return rows

    def layer_rows(self) -> list[dict]:
        """Per stack and layer, the mean over heads of each statistic (heads with no value left out)."""
        rows = []
        for stack in STACKS:
            for l in range(self.layers[stack]):
                row = {"stack": stack, "layer": l}
                for s in STACK_STATS[stack]:
                    v = self.means[stack][s][l]
                    row[s] = float(np.nanmean(v)) if np.isfinite(v).any() else float("nan")
                rows.append(row)
        return rows

    def best_aligned(self, n: int = 5) -> list[dict]:
        """The cross-attention heads whose most attended source token is most often at a(t)."""
        rows = [r for r in self.heads() if r["stack"] == "cross" and not math.isnan(r["argmax_diagonal"])]
        return sorted(rows, key=lambda r: (-r["argmax_diagonal"], -r["to_diagonal"]))[:n]

    def write(self, out_dir: Union[str, Path]) -> dict:
        return write_report(self, out_dir)

    def print_summary(self, out, n_files: int) -> None:
        c = self.counters
        print(f"{self.model_name}: {c['texts']} pairs ({c['source_tokens']} source, {c['target_tokens']} target "
              f"tokens) from {self.corpus} in {self.seconds:.1f} s")
        for stack in STACKS:
            print(f"{TITLES[stack]}:")
            stats = SHOWN[stack]
            print(f"{'layer':>7} " + " ".join(f"{s[:15]:>15}" for s in stats))
            for r in (r for r in self.layer_rows() if r["stack"] == stack):
                print(f"{r['layer']:>7} " + " ".join(f"{r[s]:>15.3f}" for s in stats))
        best = self.best_aligned(3)
        if best:
            print("most diagonal cross-attention heads: " + ", ".join(
                f"{r['layer']}.{r['head']} (argmax at a(t) ±{self.window}: {r['argmax_diagonal']:.2f})" for r in best))
        print(f"wrote {n_files} files to {out}/ (report.md, heads.csv, layers.csv, analysis.json, heatmaps/)")


def analyze_seq2seq(corpus, model, *, batch_size: int = 16, max_texts: Optional[int] = None, unit: str = "line",
                    on_decode_error: str = "stop", window: int = 1, special_queries: bool = True,
                    progress: bool = False) -> Seq2SeqAnalysis:
    """Analyse every attention of an encoder–decoder ``model`` over a parallel ``corpus`` (module doc)."""
    import torch

    t0 = time.perf_counter()
    if batch_size < 1:
        raise InputError(f"batch_size must be a positive integer, got {batch_size}")
    c = model.config
    H = c.n_heads
    layers = {"encoder": c.n_layers, "self": c.n_decoder_layers, "cross": c.n_decoder_layers}
    accs = {s: StatsAccumulator(layers[s], H, STACK_STATS[s]) for s in STACKS}
    tok = model.tokenizer
    backend = tok.backend
    specials = {t.content for t in backend.get_added_tokens_decoder().values() if t.special}
    names = ["encoder.layers.*.attn.weights", "decoder.layers.*.self_attn.weights", "decoder.layers.*.cross_attn.weights"]
    reader = CorpusReader(corpus, unit=unit, on_decode_error=on_decode_error, max_texts=max_texts)
    counters = {"texts": 0, "source_tokens": 0, "target_tokens": 0, "batches": 0}
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(unit="pair", desc="analyze", file=sys.stderr, dynamic_ncols=True)
    batch: list[tuple[str, str]] = []

    def run(pairs):
        tr = model.trace([p[0] for p in pairs], [p[1] for p in pairs], names=names)
        src_mask, tgt_mask = tr.attention_mask, tr.decoder_attention_mask
        S, T = src_mask.shape[1], tgt_mask.shape[1]
        kinds_s = special_kinds(tr.tokens, specials, S, is_punctuation)
        kinds_t = special_kinds(tr.target_tokens, specials, T, is_punctuation)
        opts = {"encoder": StatOptions(special_queries=special_queries, window=window, causal=False),
                "self": StatOptions(special_queries=special_queries, window=window, causal=True)}
        for l in range(layers["encoder"]):
            accs["encoder"].add(l, attention_sums(tr[f"encoder.layers.{l}.attn.weights"], src_mask, kinds_s,
                                                  opts["encoder"]))
        for l in range(layers["self"]):
            accs["self"].add(l, attention_sums(tr[f"decoder.layers.{l}.self_attn.weights"], tgt_mask, kinds_t,
                                               opts["self"]))
            accs["cross"].add(l, cross_sums(tr[f"decoder.layers.{l}.cross_attn.weights"], tgt_mask, src_mask,
                                            window=window))
        counters["texts"] += len(pairs)
        counters["source_tokens"] += int(src_mask.sum())
        counters["target_tokens"] += int(tgt_mask.sum())
        counters["batches"] += 1
        if bar is not None:
            bar.update(len(pairs))

    try:
        with torch.no_grad():
            for text in reader:
                batch.append(split_pair(text.text, text.where))  # where: "file:line"
                if len(batch) == batch_size:
                    run(batch)
                    batch = []
            if batch:
                run(batch)
    finally:
        if bar is not None:
            bar.close()
    if counters["texts"] == 0:
        raise InputError(f"corpus {str(corpus)!r} has no (source, target) pair to analyse")
    means = {s: accs[s].means() for s in STACKS}
    return Seq2SeqAnalysis(model_name=model.name, family=model.family, corpus=str(corpus), n_heads=H, layers=layers,
                           means=means, counters=counters, window=window, seconds=time.perf_counter() - t0,
                           settings={"batch_size": batch_size, "max_texts": max_texts, "unit": unit,
                                     "window": window, "special_queries": special_queries})


# ----------------------------------------------------------------------------------------------
# the report
# ----------------------------------------------------------------------------------------------

def _cell(x) -> str:
    return "" if isinstance(x, float) and math.isnan(x) else (f"{x:.6g}" if isinstance(x, float) else str(x))


def _num(x):
    return None if isinstance(x, float) and math.isnan(x) else x


def write_report(result: Seq2SeqAnalysis, out_dir) -> dict:
    from .report import heatmap, report_folder

    out = report_folder(out_dir)
    paths = {}
    every = list(dict.fromkeys(STAT_NAMES + CROSS_STATS))
    for name, rows in (("heads.csv", result.heads()), ("layers.csv", result.layer_rows())):
        cols = ["stack", "layer"] + (["head"] if name == "heads.csv" else []) + every
        with open(out / name, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(cols)
            for r in rows:
                w.writerow([_cell(r.get(c, float("nan"))) for c in cols])
        paths[name] = out / name
    doc = {"format": "attnscope.analysis", "version": 1, "kind": "seq2seq", "model": result.model_name,
           "family": result.family, "corpus": result.corpus, "n_heads": result.n_heads, "layers": result.layers,
           "settings": result.settings, "counters": result.counters, "seconds": result.seconds,
           "statistics": {"encoder": {k: STAT_DOCS[k] for k in STAT_NAMES}, "self": {k: STAT_DOCS[k] for k in STAT_NAMES},
                          "cross": dict(CROSS_DOCS)},
           "heads": [{k: _num(v) for k, v in r.items()} for r in result.heads()],
           "layer_means": [{k: _num(v) for k, v in r.items()} for r in result.layer_rows()]}
    (out / "analysis.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False), encoding="utf-8")
    paths["analysis.json"] = out / "analysis.json"
    for stack in STACKS:
        for s in SHOWN[stack]:
            p = out / "heatmaps" / f"{stack}_{s}.png"
            bounded = s not in ("entropy", "distance")
            heatmap(result.means[stack][s], f"{TITLES[stack]}: {s}", p, vmin=0 if bounded else None,
                    vmax=1 if bounded else None)
            paths[f"heatmaps/{p.name}"] = p
    (out / "report.md").write_text(report_markdown(result), encoding="utf-8")
    paths["report.md"] = out / "report.md"
    return paths


def report_markdown(r: Seq2SeqAnalysis) -> str:
    c = r.counters
    lines = [f"# Attention of {r.model_name} over {r.corpus}", "",
             f"{c['texts']} (source, target) pairs: {c['source_tokens']} source tokens, {c['target_tokens']} target "
             f"tokens (the decoder's start token included), {c['batches']} batches, {r.seconds:.1f} s. Three "
             "attentions, each per layer and head: the encoder's self-attention over the source, the decoder's "
             "causal self-attention over the target, and the cross-attention of every target token over the source. "
             "(Head labels and importance by ablation are measured for one-text models only.)", ""]
    for stack in STACKS:
        stats = SHOWN[stack]
        lines += [f"## {TITLES[stack].capitalize()}", "", "Means over the heads of each layer:", "",
                  "| layer | " + " | ".join(stats) + " |", "|---:|" + "---:|" * len(stats)]
        for row in (x for x in r.layer_rows() if x["stack"] == stack):
            lines.append(f"| {row['layer']} | " + " | ".join("n/a" if math.isnan(row[s]) else f"{row[s]:.3f}"
                                                           for s in stats) + " |")
        lines += ["", " ".join(f"![{s}](heatmaps/{stack}_{s}.png)" for s in stats), ""]
        docs = CROSS_DOCS if stack == "cross" else STAT_DOCS
        lines += [f"- `{s}`: {docs[s]}" for s in stats] + [""]
    best = r.best_aligned()
    lines += ["## Alignment", "",
              f"Target token t of a pair with T target and S source tokens is compared with the source token at the "
              f"same relative position, a(t) = round(t·(S − 1)/(T − 1)). A head that aligns the two texts "
              f"monotonically puts its largest weight within ±{r.window} of a(t) (`argmax_diagonal` near 1), moves "
              "forward with the target (`monotonic` near 1) and stays close to the diagonal (`diagonal_offset` near 0); "
              "a head that spreads evenly has `entropy_norm` near 1. The cross-attention heads most often at a(t):", "",
              "| layer | head | argmax_diagonal | to_diagonal | diagonal_band | diagonal_offset | monotonic | entropy_norm |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for x in best:
        lines.append(f"| {x['layer']} | {x['head']} | " + " | ".join(
            "n/a" if math.isnan(x[s]) else f"{x[s]:.3f}" for s in ("argmax_diagonal", "to_diagonal", "diagonal_band",
                                                                  "diagonal_offset", "monotonic", "entropy_norm")) + " |")
    lines += ["", "Every head of every stack is in heads.csv; the per-layer means in layers.csv.", ""]
    return "\n".join(lines)
