"""What do the heads attend to? Per-head statistics, classification and importance over a corpus.

    >>> from attnscope.analysis import analyze
    >>> r = analyze("builtin:python-docs")             # all-MiniLM-L6-v2 over Python's own docs
    >>> r.summary["claim"], r.labels[0]                 # the layer trend verdict, layer 0's labels
    >>> r.write("analysis/")                            # heads.csv, analysis.json, heatmaps, report.md

Modules: :mod:`.stats` (the statistics as functions of the weights), :mod:`.accumulate`
(streaming sums, mergeable across processes), :mod:`.corpus` and :mod:`.batching` (reading and
length-bucketed batches), :mod:`.classify`, :mod:`.summary` (per layer, trend tests),
:mod:`.importance` (ablation), :mod:`.report`, :mod:`.run` (the pipeline), :mod:`.shards` (parts of
a corpus analysed apart and merged, exactly: :mod:`.exact`).
"""

from .accumulate import StatsAccumulator
from .classify import LABELS, Thresholds, classify_heads
from .corpus import CorpusReader, python_docs_paragraphs
from .run import AnalysisConfig, AnalysisResult, analyze
from .shards import analyze_shard, merge_shards
from .stats import STAT_DOCS, STAT_NAMES, StatOptions, attention_means, attention_sums
from .summary import layer_summary, spearman

__all__ = ["StatsAccumulator", "LABELS", "Thresholds", "classify_heads", "CorpusReader", "python_docs_paragraphs",
           "AnalysisConfig", "AnalysisResult", "analyze", "analyze_shard", "merge_shards", "STAT_DOCS", "STAT_NAMES",
           "StatOptions", "attention_means", "attention_sums", "layer_summary", "spearman"]
