"""The corpus analysis pipeline: stream → batch → trace with a statistics hook → reduce → result.

    >>> from attnscope.analysis import analyze
    >>> result = analyze("builtin:python-docs", max_texts=200)
    >>> result.means["distance"].shape                     # (n_layers, n_heads)
    >>> result.write("report/")                           # CSV, JSON, PNG heatmaps, report.md

The statistics are computed inside a hook on ``layers.*.attn.weights``: each layer's weights are
reduced to per-head sums while the forward pass runs and then dropped, so no (B, H, L, L) tensor
outlives its layer and nothing is kept per text. On a CPU several batches run at once, one per
core (:mod:`.analyzer`); their sums are added in corpus order.

Distributed: inside a ``torch.distributed`` job (``torchrun``), process r analyses the windows
of ``chunk_size`` texts whose number k satisfies ``k % world_size == r`` and the importance
batches ``k % world_size == r``; the sums are added with one all-reduce. Batches are formed per
window, so every batch is the one a single process forms and the results agree to float64
rounding.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np

from ..errors import ConfigError, InputError
from ..i18n import Msg, error
from .accumulate import StatsAccumulator
from .analyzer import BatchAnalyzer
from .batching import TextEncoder, bucket, chunks
from .classify import Thresholds, classify_heads
from .corpus import CorpusReader
from .decoder_copying import induction_copying
from .decoder_heads import DECODER_STATS, decoder_roles, repeat_settings, run_repeat_pass
from .importance import Ladder, ablation_sums, metric_name
from .norm_shares import norm_shares
from .stats import STAT_NAMES, StatOptions
from .summary import layer_summary

NAMES = STAT_NAMES + ("importance", "baseline_distance")


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


# ----------------------------------------------------------------------------------------------

def _load_model(model, device):
    if model is None or isinstance(model, (str, Path)):
        from ..models import load
        return load(model, device=device)
    if device is not None:
        model = model.to(device)
    return model


def _distributed() -> tuple[int, int]:
    import torch.distributed as dist
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _sync_error(err: Optional[BaseException], world: int) -> None:
    """Re-raise on every process an error that any process hit (so that no process hangs)."""
    if world == 1:
        if err is not None:
            raise err
        return
    import torch.distributed as dist
    msgs: list = [None] * world
    dist.all_gather_object(msgs, None if err is None else (type(err).__name__, str(err)))
    for rank, m in enumerate(msgs):
        if m is not None:
            if err is not None:
                raise err
            raise error(InputError, "errors.analysis_process_failed", rank=rank, world=world, message=m[1])


class _Progress:
    """A tqdm bar in texts with tokens/s beside it, on process 0 only."""

    def __init__(self, total: Optional[int], enabled: bool, desc: str) -> None:
        self.bar = None
        self.tokens = 0
        self.t0 = time.perf_counter()
        if enabled:
            from tqdm.auto import tqdm
            self.bar = tqdm(total=total, unit="text", desc=desc, dynamic_ncols=True, file=sys.stderr,
                            smoothing=0.1)

    def update(self, texts: int, tokens: int) -> None:
        self.tokens += tokens
        if self.bar is not None:
            self.bar.update(texts)
            dt = max(time.perf_counter() - self.t0, 1e-9)
            self.bar.set_postfix_str(f"{self.tokens / dt:,.0f} tok/s", refresh=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def analyze(corpus: Union[str, Path], model=None, config: Optional[AnalysisConfig] = None, *,
            device=None, **overrides) -> AnalysisResult:
    """Analyse every head of ``model`` over ``corpus``.

    Args:
        corpus: a text file (``.gz`` ok), a folder of ``.txt`` files, or ``builtin:python-docs``.
        model: an :class:`attnscope.Model`, a checkpoint folder, or None (all-MiniLM-L6-v2).
        config: :class:`AnalysisConfig`; keyword ``overrides`` replace its fields
            (``analyze(path, max_texts=100)``).
        device: where to run the model (default: where it is).
    Returns:
        :class:`AnalysisResult` (the same on every process of a distributed job).
    """
    for k in overrides:
        if k not in AnalysisConfig.__dataclass_fields__:
            raise error(ConfigError, "errors.analysis_unknown_option", name=repr(k),
                        names=", ".join(AnalysisConfig.__dataclass_fields__))
    cfg = dataclasses.replace(config or AnalysisConfig(), **overrides)  # the caller's config is not changed
    cfg.validate()
    rank, world = _distributed()
    t0 = time.perf_counter()
    # Read-side checks first: a missing or empty corpus fails before the model loads. The count
    # reads raw bytes only (no decoding); every process gets the same answer.
    n_total = CorpusReader(corpus, unit=cfg.unit, on_decode_error=cfg.on_decode_error, max_texts=cfg.max_texts).count()
    if n_total == 0:
        raise error(InputError, "errors.analysis_corpus_empty", corpus=repr(str(corpus)),
                    unit=Msg(f"errors.analysis_unit_{cfg.unit}") if cfg.unit in ("line", "paragraph", "file") else cfg.unit)
    model = _load_model(model, device)
    model.eval()
    c = model.config
    if getattr(c, "kind", "") == "seq2seq":  # T5, BART: three attentions over a parallel corpus (.seq2seq)
        from .seq2seq import analyze_seq2seq
        return analyze_seq2seq(corpus, model, batch_size=cfg.batch_size, max_texts=cfg.max_texts, unit=cfg.unit,  # type: ignore[return-value]
                               on_decode_error=cfg.on_decode_error, window=cfg.window,
                               special_queries=cfg.special_queries, progress=cfg.progress and rank == 0)
    limit = model.tokenizer.max_length if model.tokenizer is not None else c.max_positions
    max_length = limit if cfg.max_length is None else cfg.max_length
    if max_length > limit:
        raise error(ConfigError, "errors.analysis_max_length_model", max_length=max_length, limit=limit)
    encoder = TextEncoder(model.tokenizer, max_length)
    acc = StatsAccumulator(c.n_layers, c.n_heads, NAMES + (DECODER_STATS if c.causal else ()))
    repeat = (repeat_settings(model, cfg.induction_seqs, cfg.induction_length, cfg.seed, max_length)
              if c.causal and cfg.induction_seqs > 0 else None)
    opt = StatOptions(special_queries=cfg.special_queries, window=cfg.window, causal=c.causal)

    err: Optional[BaseException] = None
    reader = None
    timings: dict = {}
    shares: dict = {}
    try:
        reader = CorpusReader(corpus, unit=cfg.unit, on_decode_error=cfg.on_decode_error,
                              owner=lambda i: (i // cfg.chunk_size) % world == rank, max_texts=cfg.max_texts)
        mine = sum(min(cfg.chunk_size, n_total - k * cfg.chunk_size)
                   for k in range(rank, math.ceil(n_total / cfg.chunk_size), world))
        t1 = time.perf_counter()
        _run_statistics(model, reader, encoder, acc, opt, cfg,
                        _Progress(mine, cfg.progress and rank == 0, "analyze"))
        t2 = time.perf_counter()
        if cfg.importance_texts > 0:
            _run_importance(model, corpus, encoder, acc, cfg, rank, world)
        t3 = time.perf_counter()
        timings = {"statistics": t2 - t1, "importance": t3 - t2}
        if repeat is not None:  # causal models: previous-token, duplicate and induction scores
            run_repeat_pass(model, acc, repeat, cfg.batch_size, rank=rank, world=world,
                            progress=cfg.progress and rank == 0)
            timings["induction"] = time.perf_counter() - t3
        if cfg.norm_texts > 0:  # small: every process computes the same shares on the first texts
            t4 = time.perf_counter()
            n = cfg.norm_texts if cfg.max_texts is None else min(cfg.norm_texts, cfg.max_texts)
            shares = norm_shares(model, (t.text for t in CorpusReader(corpus, unit=cfg.unit, on_decode_error="skip",
                                                                       max_texts=n)), max_length)
            timings["norm"] = time.perf_counter() - t4
    except Exception as e:  # every process must reach the collective below, or the others hang
        err = e
    _sync_error(err, world)

    assert reader is not None  # made, or _sync_error raised its error
    log = reader.log
    acc.count(skipped_decode=log.skipped_decode, empty=(log.empty if rank == 0 else 0) + log.blank_owned)
    examples = list(log.decode_examples)
    if world > 1:
        import torch.distributed as dist
        acc.all_reduce()
        gathered: list = [None] * world
        dist.all_gather_object(gathered, examples)
        examples = sorted(x for part in gathered for x in part)[:100]
    if acc.counters["texts"] == 0:
        n = acc.counters["skipped_decode"]
        raise error(InputError, "errors.analysis_nothing_left_one" if n == 1 else "errors.analysis_nothing_left",
                    corpus=repr(str(corpus)), n=n, empty=acc.counters["empty"])
    means = acc.means()
    importance = means.pop("importance") if cfg.importance_texts > 0 else None
    baseline = float(means.pop("baseline_distance")[0, 0])
    labels = classify_heads(means, cfg.thresholds)
    copying = induction_copying(model, means, cfg.thresholds) if c.causal else {}
    return AnalysisResult(
        model_name=model.name, family=model.family, corpus=str(corpus), n_layers=c.n_layers, n_heads=c.n_heads,
        means=means, labels=labels, importance=importance, importance_metric=metric_name(model),
        summary=layer_summary(means, labels, importance), counters=dict(acc.counters),
        decode_examples=examples, config=cfg, accumulator=acc, seconds=time.perf_counter() - t0,
        world_size=world, max_length=max_length, timings=timings, baseline_distance=baseline,
        repeat=repeat.to_dict() if repeat is not None else {}, norm_shares=shares, copying=copying)


def _run_statistics(model, reader, encoder: TextEncoder, acc: StatsAccumulator, opt: StatOptions,
                    cfg: AnalysisConfig, progress: _Progress) -> None:
    done = lambda tb: progress.update(len(tb), tb.n_tokens)  # noqa: E731
    try:
        with BatchAnalyzer(model, acc, opt, lanes=cfg.lanes, on_done=done) as analyzer:
            for group in chunks(reader, cfg.chunk_size):
                encoded = encoder.encode(group)  # while the lanes run the previous chunk's batches
                acc.count(empty=len(group) - len(encoded))  # texts that gave no tokens at all
                for items in bucket(encoded, cfg.batch_size):
                    analyzer.submit(encoder.pad(items))
            analyzer.flush()
    finally:
        progress.close()


def _run_importance(model, corpus, encoder: TextEncoder, acc: StatsAccumulator, cfg: AnalysisConfig,
                    rank: int, world: int) -> None:
    """Ablate every head on the first ``importance_texts`` texts; batch k runs on process k % world."""
    # --max-texts bounds this pass too: the ablation uses the first texts of those analysed.
    n = cfg.importance_texts if cfg.max_texts is None else min(cfg.importance_texts, cfg.max_texts)
    reader = CorpusReader(corpus, unit=cfg.unit, on_decode_error="skip", max_texts=n)
    sample = encoder.encode(list(reader))  # small by construction: every process tokenizes it all
    batches = bucket(sample, cfg.importance_batch)
    mine = batches[rank::world]
    progress = _Progress(sum(len(b) for b in mine), cfg.progress and rank == 0, "importance")
    ladder = Ladder.for_model(model)  # one replica for every batch
    try:
        for items in mine:
            tb = encoder.pad(items)
            for layer, sums in ablation_sums(model, tb, ladder=ladder).items():
                acc.add(layer, {"importance": sums})
            acc.count(importance_texts=len(tb))
            progress.update(len(tb), tb.n_tokens)
    finally:
        progress.close()
