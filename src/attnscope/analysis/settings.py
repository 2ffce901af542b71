"""The settings and the result of a corpus analysis: :class:`AnalysisConfig`, :class:`AnalysisResult`.

Apart from the pipeline (:mod:`.run`) so that the pipeline, the shards (:mod:`.shards`) and the
reports can all read them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from numbers import Integral
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np

from ..errors import ConfigError
from ..i18n import error
from .accumulate import StatsAccumulator
from .classify import Thresholds, classify_heads
from .decoder_heads import DECODER_STATS, decoder_roles
from .stats import STAT_NAMES
from .summary import layer_summary

NAMES = STAT_NAMES + ("importance", "baseline_distance")
#: Whole-number settings (None allowed for the second group): a float or a bool there would be
#: used silently (max_texts=1.5 read two texts, window=2.5 is window 2 reported as ±2.5).
INT_FIELDS = ("batch_size", "chunk_size", "importance_batch", "importance_texts", "norm_texts", "induction_seqs",
              "window", "seed")
OPTIONAL_INT_FIELDS = ("max_length", "max_texts", "induction_length", "lanes")


def check_thresholds(thresholds) -> None:
    """ConfigError unless ``thresholds`` is a :class:`Thresholds` (a dict would fail inside the labelling)."""
    if not isinstance(thresholds, Thresholds):
        raise error(ConfigError, "errors.analysis_thresholds_type", got=type(thresholds).__name__)


@dataclass
class AnalysisConfig:
    """Settings of a corpus analysis (every field is a CLI option of ``attnscope analyze``).

    Attributes:
        batch_size: texts per forward pass.
        chunk_size: texts per length-bucketing window (sorted by length, then cut into batches).
        max_length: longest sequence in tokens (special tokens included); longer texts are
            truncated and counted. None = the model's position limit.
        max_texts: analyse only the first N texts.
        unit: "line", "paragraph" or "file" (what one text is, see :mod:`.corpus`).
        on_decode_error: "stop" or "skip" for bytes that are not UTF-8.
        special_queries: count [CLS]/[SEP] rows as queries (see :mod:`.stats`).
        window: half-width of the ``to_local`` window, in tokens.
        importance_texts: texts (the first N of the corpus, at most ``max_texts``) for head
            ablation; 0 = skip it.
        importance_batch: texts per ablation batch (each runs H times over).
        induction_seqs: causal models: repeated random token sequences for the previous-token,
            duplicate and induction scores (:mod:`.decoder_heads`); 0 = skip them.
        induction_length: tokens of one copy of those sequences (None: 50, or fewer to fit).
        norm_texts: the first N texts, one at a time, for each head's share of attention to the
            special tokens with raw weights and with norms (:mod:`.norm_shares`); 0 = skip it.
        seed: the seed the sequences are drawn with.
        lanes: CPU: batches analysed at once, each on one thread with its own replica of the
            model (:mod:`.analyzer`); None = torch's thread count.
        thresholds: classification thresholds, see :class:`.classify.Thresholds`.
        progress: show a progress bar (on process 0).
    """

    batch_size: int = 32
    chunk_size: int = 1024
    max_length: Optional[int] = None
    max_texts: Optional[int] = None
    unit: str = "line"
    on_decode_error: str = "stop"
    special_queries: bool = True
    window: int = 3
    importance_texts: int = 128
    importance_batch: int = 8
    induction_seqs: int = 64
    induction_length: Optional[int] = None
    seed: int = 0
    norm_texts: int = 64
    lanes: Optional[int] = None
    thresholds: Thresholds = field(default_factory=Thresholds)
    progress: bool = True

    def validate(self) -> None:
        for name in INT_FIELDS + OPTIONAL_INT_FIELDS:
            v = getattr(self, name)
            if (v is not None or name in INT_FIELDS) and (isinstance(v, bool) or not isinstance(v, Integral)):
                raise error(ConfigError, "errors.analysis_int_option", name=name, value=repr(v))
        for name in ("special_queries", "progress"):  # a truthy string ("no") would pass as True
            if not isinstance(getattr(self, name), bool):
                raise error(ConfigError, "errors.analysis_bool_option", name=name, value=repr(getattr(self, name)))
        check_thresholds(self.thresholds)
        for name in ("batch_size", "chunk_size", "importance_batch"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise error(ConfigError, "errors.analysis_positive_int", name=name, value=repr(getattr(self, name)))
        if self.chunk_size < self.batch_size:
            raise error(ConfigError, "errors.analysis_chunk_size", chunk=self.chunk_size, batch=self.batch_size)
        if self.importance_texts < 0 or self.norm_texts < 0:
            raise error(ConfigError, "errors.analysis_texts_counts", a=self.importance_texts, b=self.norm_texts)
        if self.induction_seqs < 0 or (self.induction_length is not None and self.induction_length < 2):
            raise error(ConfigError, "errors.analysis_induction_options", a=self.induction_seqs, b=self.induction_length)
        if self.lanes is not None and (isinstance(self.lanes, bool) or not isinstance(self.lanes, int) or self.lanes < 1):
            raise error(ConfigError, "errors.analysis_lanes_none", value=repr(self.lanes))
        if self.window < 0:
            raise error(ConfigError, "errors.analysis_window", value=self.window)
        if self.max_length is not None and self.max_length < 2:
            raise error(ConfigError, "errors.analysis_max_length", value=self.max_length)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["thresholds"] = self.thresholds.to_dict()
        return d


@dataclass
class AnalysisResult:
    """What :func:`analyze` returns: per-head means, labels, importance, layer summary, counters."""

    model_name: str
    family: str
    corpus: str
    n_layers: int
    n_heads: int
    means: dict
    labels: np.ndarray
    importance: Optional[np.ndarray]
    importance_metric: str
    summary: dict
    counters: dict
    decode_examples: list
    config: AnalysisConfig
    accumulator: StatsAccumulator
    seconds: float = 0.0
    world_size: int = 1
    max_length: int = 0          # the token limit used (cfg.max_length, or the model's)
    baseline_distance: float = float("nan")  # ``distance`` of attention spread evenly (tokens)
    timings: dict = field(default_factory=dict)  # seconds of the "statistics" and "importance" passes
    repeat: dict = field(default_factory=dict)   # causal models: the random sequences of the induction pass
    norm_shares: dict = field(default_factory=dict)  # special-token shares, raw and with norms (.norm_shares)
    copying: dict = field(default_factory=dict)  # causal models: the induction heads' OV copying scores (.decoder_copying)

    @property
    def roles(self) -> Optional[np.ndarray]:
        """Causal models: ``(n_layers, n_heads)`` decoder roles (:func:`.decoder_heads.decoder_roles`)."""
        return decoder_roles(self.means, self.config.thresholds) if "sink" in self.means else None

    def reclassify(self, thresholds: Thresholds) -> "AnalysisResult":
        """Labels and summary again with other thresholds (the statistics are not recomputed)."""
        check_thresholds(thresholds)  # a dict failed inside classify_heads, after being stored
        self.config.thresholds = thresholds
        self.labels = classify_heads(self.means, thresholds)
        self.summary = layer_summary(self.means, self.labels, self.importance)
        return self

    def heads(self) -> list[dict]:
        """One row per head: layer, head, every statistic, importance, label."""
        rows = []
        for l in range(self.n_layers):
            for h in range(self.n_heads):
                row: dict[str, Any] = {"layer": l, "head": h}
                row.update({s: float(self.means[s][l, h]) for s in STAT_NAMES})
                row["importance"] = None if self.importance is None else float(self.importance[l, h])
                row["label"] = str(self.labels[l, h])
                if "sink" in self.means:  # a causal model's decoder scores and roles
                    row.update({s: float(self.means[s][l, h]) for s in DECODER_STATS})
                    roles = self.roles
                    assert roles is not None  # there with the decoder statistics
                    row["roles"] = str(roles[l, h])
                rows.append(row)
        return rows

    def write(self, out_dir: Union[str, Path], lang: str = "en") -> dict:
        """Write heads.csv, heads.json, layers.csv, heatmaps/*.png and report.md (its words and the
        heatmaps' in ``lang``, "en" or "zh"); return their paths."""
        from .report import write_report
        return write_report(self, out_dir, lang)
