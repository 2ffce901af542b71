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
head), layers.csv, analysis.json, heatmaps/*.png and report.md (report.md, the heatmaps' titles
and the printed summary in English or Chinese, from attnscope.i18n's ``analysis`` table).
"""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

import numpy as np

from ..errors import InputError
from ..i18n import check_lang, error
from ..trace.seq2seq import BLOCKS
from .accumulate import StatsAccumulator
from .batching import is_punctuation
from .corpus import CorpusReader
from .cross_stats import CROSS_DOCS, CROSS_STATS, cross_sums, special_kinds
from .report import decode_line, fmt_number, heatmap, json_number, left_out, report_folder, write_csv
from .stats import STAT_DOCS, STAT_NAMES, StatOptions, attention_sums
from .summary import counted_in, left_out_line, pad_left, say

STACKS = ("encoder", "self", "cross")
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
        raise error(InputError, "errors.analysis_pair_no_tab", where=where)
    if text.count("\t") > 1:  # split at the first, the rest (other columns, other lines) would join the target
        raise error(InputError, "errors.analysis_pair_tabs", where=where, n=text.count("\t"))
    source, target = text.split("\t", 1)
    if not source.strip():
        raise error(InputError, "errors.analysis_pair_no_source", where=where)
    if not target.strip():
        raise error(InputError, "errors.analysis_pair_no_target", where=where)
    return source, target


def check_pair_lengths(model, source: str, target: str, where: str) -> None:
    """InputError naming the corpus line when the source or the target has more tokens than its stack
    reads (the encoder: the tokenizer's limit; the decoder: one fewer than its positions, after its
    start token, as :meth:`~attnscope.models.seq2seq_model.Seq2SeqModel.target_batch`)."""
    tok = model.tokenizer
    decoder = min(int(model.config.max_positions) - 1, tok.max_length)
    for side, text, limit in (("source", source, tok.max_length), ("target", target, decoder)):
        n = len(tok.backend.encode(text).ids)  # the tokens encode() counts, special ones included
        if n > limit:
            raise error(InputError, f"errors.analysis_pair_{side}_too_long", where=where, n=n, limit=limit)


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
    decode_examples: list = field(default_factory=list)  # the first lines skipped as not UTF-8 ("file:line: …")

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

    def write(self, out_dir: Union[str, Path], lang: str = "en") -> dict:
        return write_report(self, out_dir, lang)

    def print_summary(self, out, n_files: int, lang: str = "en") -> None:
        c = self.counters
        print(say("s2s_out_head", lang, model=self.model_name, pairs=counted_in(c["texts"], "pair", lang),
                  source=c["source_tokens"], target=c["target_tokens"], corpus=self.corpus, seconds=self.seconds))
        left = left_out_line(c, lang)
        if left:
            print(left)
        for stack in STACKS:
            print(say("s2s_out_stack", lang, stack=say("s2s_stack_" + stack, lang)))
            stats = SHOWN[stack]
            print(f"{pad_left(say('col_layer', lang), 7)} " + " ".join(f"{s[:15]:>15}" for s in stats))
            for r in (r for r in self.layer_rows() if r["stack"] == stack):
                print(f"{r['layer']:>7} " + " ".join(f"{r[s]:>15.3f}" for s in stats))
        best = self.best_aligned(3)
        if best:
            print(say("s2s_out_best", lang, heads=say("list_sep", lang).join(
                say("s2s_out_best_head", lang, head=f"{r['layer']}.{r['head']}", window=self.window,
                    value=r["argmax_diagonal"]) for r in best)))
        print(say("out_wrote", lang, n=n_files, out=out))


def analyze_seq2seq(corpus, model, *, batch_size: int = 16, max_texts: Optional[int] = None, unit: str = "line",
                    on_decode_error: str = "stop", window: int = 1, special_queries: bool = True,
                    progress: bool = False) -> Seq2SeqAnalysis:
    """Analyse every attention of an encoder–decoder ``model`` over a parallel ``corpus`` (module doc)."""
    import torch
    from tqdm.auto import tqdm

    t0 = time.perf_counter()
    if batch_size < 1:
        raise error(InputError, "errors.analysis_batch_size", value=batch_size)
    c = model.config
    H = c.n_heads
    layers = {"encoder": c.n_layers, "self": c.n_decoder_layers, "cross": c.n_decoder_layers}
    accs = {s: StatsAccumulator(layers[s], H, STACK_STATS[s]) for s in STACKS}
    specials = {t.content for t in model.tokenizer.backend.get_added_tokens_decoder().values() if t.special}
    names = [BLOCKS[stack][0].format("*") + ".weights" for stack in STACKS]  # every layer's weights
    reader = CorpusReader(corpus, unit=unit, on_decode_error=on_decode_error, max_texts=max_texts)
    counters = {"texts": 0, "source_tokens": 0, "target_tokens": 0, "batches": 0}
    opts = {"encoder": StatOptions(special_queries=special_queries, window=window, causal=False),
            "self": StatOptions(special_queries=special_queries, window=window, causal=True)}

    byte_level = type(model.tokenizer.backend.decoder).__name__ == "ByteLevel"  # BART: pieces spell bytes

    def punct(tok: str) -> bool:
        return is_punctuation(tok, byte_level)

    def run(pairs):
        tr = model.trace([p[0] for p in pairs], [p[1] for p in pairs], names=names)
        src, tgt = tr.attention_mask, tr.decoder_attention_mask  # (B, S), (B, T)
        masks = {"encoder": src, "self": tgt}
        kinds = {"encoder": special_kinds(tr.tokens, specials, src.shape[1], punct),
                 "self": special_kinds(tr.target_tokens, specials, tgt.shape[1], punct)}
        # the cross rows are the decoder's queries: --no-special-queries leaves out the same rows as in "self"
        cross_queries = None if special_queries else ~kinds["self"]["special"].to(tgt.device)  # (B, T)
        for stack in STACKS:  # the stack names are the trace's attention blocks
            for l in range(layers[stack]):
                w = tr.weights(l, attention=stack)  # (B, H, L, S)
                accs[stack].add(l, cross_sums(w, tgt, src, window=window, queries=cross_queries) if stack == "cross" else
                                attention_sums(w, masks[stack], kinds[stack], opts[stack]))
        counters["texts"] += len(pairs)
        counters["source_tokens"] += int(src.sum())
        counters["target_tokens"] += int(tgt.sum())
        counters["batches"] += 1
        bar.update(len(pairs))

    batch: list[tuple[str, str]] = []
    with torch.no_grad(), tqdm(unit="pair", desc="analyze", file=sys.stderr, dynamic_ncols=True,
                               disable=not progress) as bar:
        for text in reader:
            pair = split_pair(text.text, text.where)  # where: "file:line"
            check_pair_lengths(model, *pair, text.where)
            batch.append(pair)
            if len(batch) == batch_size:
                run(batch)
                batch = []
        if batch:
            run(batch)
    # what reading left out, counted as the one-stack analysis counts it (the report and the summary say it)
    counters.update(skipped_decode=reader.log.skipped_decode, empty=reader.log.empty + reader.log.blank_owned)
    if counters["texts"] == 0:
        raise error(InputError, "errors.analysis_no_pairs", corpus=repr(str(corpus)))
    means = {s: accs[s].means() for s in STACKS}
    return Seq2SeqAnalysis(model_name=model.name, family=model.family, corpus=str(corpus), n_heads=H, layers=layers,
                           means=means, counters=counters, window=window, seconds=time.perf_counter() - t0,
                           settings={"batch_size": batch_size, "max_texts": max_texts, "unit": unit,
                                     "window": window, "special_queries": special_queries},
                           decode_examples=list(reader.log.decode_examples))


# ----------------------------------------------------------------------------------------------
# the report
# ----------------------------------------------------------------------------------------------

def write_report(result: Seq2SeqAnalysis, out_dir, lang: str = "en") -> dict:
    lang = check_lang(lang)
    out = report_folder(out_dir)
    paths = {}
    every = list(dict.fromkeys(STAT_NAMES + CROSS_STATS))
    for name, rows in (("heads.csv", result.heads()), ("layers.csv", result.layer_rows())):
        paths[name] = write_csv(out / name, ["stack", "layer"] + (["head"] if name == "heads.csv" else []) + every, rows)
    doc = {"format": "attnscope.analysis", "version": 1, "kind": "seq2seq", "model": result.model_name,
           "family": result.family, "corpus": result.corpus, "n_heads": result.n_heads, "layers": result.layers,
           "settings": result.settings, "counters": result.counters, "seconds": result.seconds,
           "statistics": {"encoder": {k: STAT_DOCS[k] for k in STAT_NAMES}, "self": {k: STAT_DOCS[k] for k in STAT_NAMES},
                          "cross": dict(CROSS_DOCS)},
           "heads": [{k: json_number(v) for k, v in r.items()} for r in result.heads()],
           "layer_means": [{k: json_number(v) for k, v in r.items()} for r in result.layer_rows()]}
    (out / "analysis.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False), encoding="utf-8")
    paths["analysis.json"] = out / "analysis.json"
    for stack in STACKS:
        for s in SHOWN[stack]:
            p = out / "heatmaps" / f"{stack}_{s}.png"
            bounded = s not in ("entropy", "distance")
            heatmap(result.means[stack][s], say("map_title", lang, name=say("s2s_stack_" + stack, lang), doc=s), p,
                    vmin=0 if bounded else None, vmax=1 if bounded else None, lang=lang)
            paths[f"heatmaps/{p.name}"] = p
    (out / "report.md").write_text(report_markdown(result, lang), encoding="utf-8")
    paths["report.md"] = out / "report.md"
    return paths


def report_markdown(r: Seq2SeqAnalysis, lang: str = "en") -> str:
    """report.md of an encoder–decoder analysis in ``lang``."""
    c = r.counters
    T = lambda key, **kw: say(key, lang, **kw)  # noqa: E731
    lines = [T("s2s_title", model=r.model_name, corpus=r.corpus), "",
             T("s2s_intro", pairs=counted_in(c["texts"], "source_target_pair", lang), source=c["source_tokens"],
               target=c["target_tokens"], batches=counted_in(c["batches"], "batch", lang), seconds=r.seconds),
             "", left_out(c, lang), ""]
    for stack in STACKS:
        stats = SHOWN[stack]
        title = T("s2s_stack_" + stack)
        lines += [f"## {title.capitalize() if lang == 'en' else title}", "", T("s2s_means"), "",
                  f"| {T('col_layer')} | " + " | ".join(stats) + " |", "|---:|" + "---:|" * len(stats)]
        for row in (x for x in r.layer_rows() if x["stack"] == stack):
            lines.append(f"| {row['layer']} | " + " | ".join(fmt_number(row[s]) for s in stats) + " |")
        lines += ["", " ".join(f"![{s}](heatmaps/{stack}_{s}.png)" for s in stats), ""]
        doc = (lambda s: T("cross_doc_" + s)) if stack == "cross" else (lambda s: T("doc_" + s))
        lines += [T("s2s_doc", stat=s, doc=doc(s)) for s in stats] + [""]
    cols = ("argmax_diagonal", "to_diagonal", "diagonal_band", "diagonal_offset", "monotonic", "entropy_norm")
    lines += [T("s2s_sec_alignment"), "", T("s2s_alignment", window=r.window), "",
              f"| {T('col_layer')} | {T('col_head')} | " + " | ".join(cols) + " |", "|---:|---:|" + "---:|" * len(cols)]
    for x in r.best_aligned():
        lines.append(f"| {x['layer']} | {x['head']} | " + " | ".join(fmt_number(x[s]) for s in cols) + " |")
    lines += ["", T("s2s_end"), ""]
    if r.decode_examples:  # what left_out's sentence promises at the end
        lines += [T("sec_skipped")] + [f"- {decode_line(x, lang)}" for x in r.decode_examples]
        if c["skipped_decode"] > len(r.decode_examples):
            lines.append(T("skipped_more", n=c["skipped_decode"] - len(r.decode_examples)))
        lines.append("")
    return "\n".join(lines)
