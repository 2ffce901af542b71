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
batches ``k % world_size == r``; the sums are added with one collective. Batches are formed per
window, so every batch is the one a single process forms, and the sums are exact
(:mod:`.exact`), so the result is the single process's, bit for bit. The same split without a
collective is a shard (:mod:`.shards`): ``analyze --shard i/N`` now, ``--merge`` later.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Union

from ..errors import ConfigError, InputError
from ..i18n import Msg, error
from .accumulate import StatsAccumulator
from .analyzer import BatchAnalyzer
from .batching import TextEncoder, bucket, chunks
from .classify import classify_heads
from .corpus import CorpusReader, example_order
from .decoder_heads import DECODER_STATS, RepeatSettings, repeat_settings, run_repeat_pass
from .importance import Ladder, ablation_sums, metric_name
from .norm_shares import norm_shares
from .settings import NAMES, AnalysisConfig, AnalysisResult
from .stats import StatOptions
from .streamed import check_streamed, copying_of, statistics_batching
from .summary import layer_summary

__all__ = ["NAMES", "AnalysisConfig", "AnalysisResult", "analyze"]

# ----------------------------------------------------------------------------------------------

def load_model(model, device):
    """An :class:`attnscope.Model` (loaded when ``model`` is a path or None) on ``device``, in eval mode."""
    if model is None or isinstance(model, (str, Path)):
        from ..models import load
        model = load(model, device=device)
    elif device is not None:
        model = model.to(device)
    model.eval()
    return model


def distributed() -> tuple[int, int]:
    """(rank, world size) of the ``torch.distributed`` job this process is in; (0, 1) outside one."""
    import torch.distributed as dist
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def sync_error(err: Optional[BaseException], world: int) -> None:
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


class Progress:
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


def make_config(config: Optional[AnalysisConfig], overrides: dict) -> AnalysisConfig:
    """``config`` (or the defaults) with the keyword ``overrides`` replacing fields, validated
    (the caller's config is not changed)."""
    for k in overrides:
        if k not in AnalysisConfig.__dataclass_fields__:
            raise error(ConfigError, "errors.analysis_unknown_option", name=repr(k),
                        names=", ".join(AnalysisConfig.__dataclass_fields__))
    cfg = dataclasses.replace(config or AnalysisConfig(), **overrides)
    cfg.validate()
    return cfg


def count_texts(corpus, cfg: AnalysisConfig) -> int:
    """The texts of ``corpus`` within ``max_texts``, from the raw bytes (no decoding: every
    process gets the same answer); a missing or empty corpus fails here, before the model loads."""
    n_total = CorpusReader(corpus, unit=cfg.unit, on_decode_error=cfg.on_decode_error, max_texts=cfg.max_texts).count()
    if n_total == 0:
        raise error(InputError, "errors.analysis_corpus_empty", corpus=repr(str(corpus)),
                    unit=Msg(f"errors.analysis_unit_{cfg.unit}") if cfg.unit in ("line", "paragraph", "file") else cfg.unit)
    return n_total


@dataclass
class Passes:
    """What the passes of an encoder's or a decoder's analysis share (:func:`prepare`)."""

    max_length: int                    # the token limit used (cfg.max_length, or the model's)
    encoder: TextEncoder
    acc: StatsAccumulator
    options: StatOptions
    repeat: Optional[RepeatSettings]   # causal models: the induction pass's sequences
    timings: dict = field(default_factory=dict)
    shares: dict = field(default_factory=dict)


def key_windows(config) -> tuple:
    """Per layer, the sliding window of a causal model's layer (Gemma 3's local layers) or None."""
    window = getattr(config, "window", None)
    if not config.causal or not callable(window):
        return ()
    return tuple(window(i) for i in range(config.n_layers))


def prepare(model, cfg: AnalysisConfig) -> Passes:
    """The token limit, encoder, an empty accumulator and the options of ``model``'s passes."""
    check_streamed(model, cfg)  # a model loaded with stream_layers=True: what it cannot run, refused
    c = model.config
    check_repeat_settings(c.causal, cfg)
    limit = model.tokenizer.max_length if model.tokenizer is not None else c.max_positions
    # by default no text past the trained positions (BLOOM's seq_length: ALiBi sets no limit, see context_limit)
    max_length = min(limit, c.max_positions) if cfg.max_length is None else cfg.max_length
    if max_length > limit:
        raise error(ConfigError, "errors.analysis_max_length_model", max_length=max_length, limit=limit)
    return Passes(max_length, TextEncoder(model.tokenizer, max_length),
                  StatsAccumulator(c.n_layers, c.n_heads, NAMES + (DECODER_STATS if c.causal else ())),
                  StatOptions(special_queries=cfg.special_queries, window=cfg.window, causal=c.causal,
                              key_windows=key_windows(c)),
                  repeat_settings(model, cfg.induction_seqs, cfg.induction_length, cfg.seed, max_length,
                                  flag=cfg.max_length is not None)
                  if c.causal and cfg.induction_seqs > 0 else None)


#: The settings of one-stack passes that an encoder–decoder analysis does not run; 0 (none) passes.
ONE_STACK_ONLY = {"importance_texts": "--importance-texts", "importance_batch": "--importance-batch",
                  "norm_texts": "--norm-texts", "induction_seqs": "--induction-seqs",
                  "induction_length": "--induction-length", "seed": "--seed", "lanes": "--lanes", "thresholds": "--threshold"}


def check_seq2seq_settings(cfg: AnalysisConfig, name: str) -> None:
    """InputError naming the first setting an encoder–decoder analysis would drop (head importance,
    norm shares, repeated sequences, lanes, label thresholds: one-stack passes only)."""
    default = AnalysisConfig()
    for field_name, flag in ONE_STACK_ONLY.items():
        value = getattr(cfg, field_name)
        if value != getattr(default, field_name) and not (isinstance(value, int) and value == 0):
            if field_name == "thresholds":  # the labels' own thresholds: the changed ones
                value = ", ".join(f"{k}={v}" for k, v in vars(value).items() if v != getattr(default.thresholds, k))
            raise error(InputError, "errors.analysis_seq2seq_setting", setting=field_name, value=value, name=name,
                        flag=flag)


def check_repeat_settings(causal: bool, cfg: AnalysisConfig) -> None:
    """ConfigError when a model that is not causal is given settings of the repeated random sequences
    (previous-token, duplicate and induction scores: causal models only), which it would drop.
    ``induction_seqs=0`` (none) says the same as the model, so it passes."""
    given = [(name, getattr(cfg, name)) for name in ("induction_seqs", "induction_length", "seed")
             if getattr(cfg, name) not in (getattr(AnalysisConfig, name), 0)]
    if not causal and given:
        name, value = given[0]
        raise error(ConfigError, "errors.analysis_repeat_not_causal", name=name, flag="--" + name.replace("_", "-"),
                    value=value)


def owned_texts(n_total: int, chunk_size: int, rank: int, world: int) -> int:
    """How many of ``n_total`` texts fall in the windows of process ``rank`` (window k → k % world)."""
    return sum(min(chunk_size, n_total - k * chunk_size) for k in range(rank, math.ceil(n_total / chunk_size), world))


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
        :class:`AnalysisResult` (the same on every process of a distributed job). A part of the
        corpus alone, to merge later: :func:`.shards.analyze_shard`.
    """
    cfg = make_config(config, overrides)
    rank, world = distributed()
    t0 = time.perf_counter()
    n_total = count_texts(corpus, cfg)
    model = load_model(model, device)
    if getattr(model.config, "kind", "") == "seq2seq":  # T5, BART: three attentions over a parallel corpus (.seq2seq)
        from .seq2seq import analyze_seq2seq
        if cfg.max_length is not None:  # not a truncation it would silently skip
            raise error(InputError, "errors.analysis_seq2seq_max_length", value=cfg.max_length, name=model.name)
        check_seq2seq_settings(cfg, model.name)
        return analyze_seq2seq(corpus, model, batch_size=cfg.batch_size, max_texts=cfg.max_texts, unit=cfg.unit,  # type: ignore[return-value]
                               on_decode_error=cfg.on_decode_error, window=cfg.window,
                               special_queries=cfg.special_queries, progress=cfg.progress and rank == 0)
    p = prepare(model, cfg)
    acc = p.acc
    err: Optional[BaseException] = None
    reader = None
    try:
        reader = CorpusReader(corpus, unit=cfg.unit, on_decode_error=cfg.on_decode_error,
                              owner=lambda i: (i // cfg.chunk_size) % world == rank, max_texts=cfg.max_texts)
        t1 = time.perf_counter()
        run_statistics(model, reader, p, cfg, Progress(owned_texts(n_total, cfg.chunk_size, rank, world),
                                                       cfg.progress and rank == 0, "analyze"))
        p.timings["statistics"] = time.perf_counter() - t1
        run_other_passes(model, corpus, p, cfg, rank, world)
    except Exception as e:  # every process must reach the collective below, or the others hang
        err = e
    sync_error(err, world)

    assert reader is not None  # made, or sync_error raised its error
    log = reader.log
    acc.count(skipped_decode=log.skipped_decode, empty=(log.empty if rank == 0 else 0) + log.blank_owned)
    examples = list(log.decode_examples)
    if world > 1:
        import torch.distributed as dist
        acc.all_reduce()
        gathered: list = [None] * world
        dist.all_gather_object(gathered, examples)
        examples = sorted((x for part in gathered for x in part), key=example_order(corpus))[:100]
    return build_result(acc, cfg, model_facts(model), corpus=corpus, max_length=p.max_length, world=world,
                        seconds=time.perf_counter() - t0, timings=p.timings, examples=examples,
                        repeat=p.repeat.to_dict() if p.repeat is not None else {}, shares=p.shares,
                        copying=lambda means: copying_of(model, means, cfg.thresholds))


def run_other_passes(model, corpus, p: Passes, cfg: AnalysisConfig, rank: int, world: int, *,
                     importance_done: int = 0, on_importance: Optional[Callable[[int], None]] = None,
                     norm: bool = True) -> None:
    """The passes after the statistics: importance (process ``rank``'s batches, the first
    ``importance_done`` of them skipped, ``on_importance(n done)`` after each), the causal
    models' induction pass and (``norm``) the norm shares on the first texts."""
    t2 = time.perf_counter()
    if cfg.importance_texts > 0:
        run_importance(model, corpus, p.encoder, p.acc, cfg, rank, world, done=importance_done, on_batch=on_importance)
    t3 = time.perf_counter()
    p.timings["importance"] = t3 - t2
    if p.repeat is not None:  # causal models: previous-token, duplicate and induction scores
        run_repeat_pass(model, p.acc, p.repeat, cfg.batch_size, rank=rank, world=world,
                        progress=cfg.progress and rank == 0)
        p.timings["induction"] = time.perf_counter() - t3
    if cfg.norm_texts > 0 and norm:  # small: every process computes the same shares on the first texts
        t4 = time.perf_counter()
        p.shares = norm_shares(model, (t.text for t in first_texts(corpus, cfg, cfg.norm_texts)), p.max_length)
        p.timings["norm"] = time.perf_counter() - t4


def model_facts(model) -> dict:
    """What a result says of its model (kept by a shard, so that merging needs no model)."""
    c = model.config
    return {"name": model.name, "family": model.family, "n_layers": c.n_layers, "n_heads": c.n_heads,
            "causal": bool(c.causal), "importance_metric": metric_name(model)}


def build_result(acc: StatsAccumulator, cfg: AnalysisConfig, facts: dict, *, corpus, max_length: int, world: int,
                 seconds: float, timings: dict, examples: list, repeat: dict, shares: dict,
                 copying: Callable[[dict], dict]) -> AnalysisResult:
    """The :class:`AnalysisResult` of summed statistics (``copying(means)``: the induction heads'
    copying scores, :mod:`.decoder_copying`)."""
    if acc.counters["texts"] == 0:
        n = acc.counters["skipped_decode"]
        raise error(InputError, "errors.analysis_nothing_left_one" if n == 1 else "errors.analysis_nothing_left",
                    corpus=repr(str(corpus)), n=n, empty=acc.counters["empty"])
    means = acc.means()
    importance = means.pop("importance") if cfg.importance_texts > 0 else None
    baseline = float(means.pop("baseline_distance")[0, 0])
    labels = classify_heads(means, cfg.thresholds)
    return AnalysisResult(
        model_name=facts["name"], family=facts["family"], corpus=str(corpus), n_layers=facts["n_layers"],
        n_heads=facts["n_heads"], means=means, labels=labels, importance=importance,
        importance_metric=facts["importance_metric"], summary=layer_summary(means, labels, importance),
        counters=dict(acc.counters), decode_examples=examples, config=cfg, accumulator=acc, seconds=seconds,
        world_size=world, max_length=max_length, timings=timings, baseline_distance=baseline, repeat=repeat,
        norm_shares=shares, copying=copying(means) if facts["causal"] else {})


def run_statistics(model, reader, p: Passes, cfg: AnalysisConfig, progress: Progress, *,
                   on_window: Optional[Callable[[int], None]] = None) -> None:
    """The statistics over the texts of ``reader``, window by window; ``on_window(k)`` (a shard's
    checkpoint) is called once window k's sums are all added."""
    done = lambda tb: progress.update(len(tb), tb.n_tokens)  # noqa: E731
    batch_size, lanes = statistics_batching(model, cfg)  # streamed: a window per pass (.streamed)
    try:
        with BatchAnalyzer(model, p.acc, p.options, lanes=lanes, on_done=done) as analyzer:
            for group in chunks(reader, cfg.chunk_size):
                encoded = p.encoder.encode(group)  # while the lanes run the previous chunk's batches
                p.acc.count(empty=len(group) - len(encoded))  # texts that gave no tokens at all
                for items in bucket(encoded, batch_size):
                    analyzer.submit(p.encoder.pad(items))
                if on_window is not None:
                    analyzer.flush()
                    on_window(group[0].index // cfg.chunk_size)
            analyzer.flush()
    finally:
        progress.close()


def first_texts(corpus, cfg: AnalysisConfig, n: int) -> list:
    """The first ``n`` texts of those analysed (--max-texts bounds these passes too) that decode to
    something: a skipped undecodable line or a blank text takes no place (counted by number, the
    first 2 of a corpus whose second line is not UTF-8 were 1 text)."""
    return list(itertools.islice(CorpusReader(corpus, unit=cfg.unit, on_decode_error="skip", max_texts=cfg.max_texts), n))


def run_importance(model, corpus, encoder: TextEncoder, acc: StatsAccumulator, cfg: AnalysisConfig,
                   rank: int, world: int, *, done: int = 0, on_batch: Optional[Callable[[int], None]] = None) -> None:
    """Ablate every head on the first ``importance_texts`` texts; batch k runs on process k % world
    (its first ``done`` skipped; ``on_batch(n)`` after the n-th)."""
    sample = encoder.encode(first_texts(corpus, cfg, cfg.importance_texts))  # small: every process tokenizes it all
    batches = bucket(sample, cfg.importance_batch)
    mine = batches[rank::world]
    progress = Progress(sum(len(b) for b in mine[done:]), cfg.progress and rank == 0, "importance")
    ladder = Ladder.for_model(model)  # one replica for every batch
    try:
        for j, items in enumerate(mine[done:], done + 1):
            tb = encoder.pad(items)
            for layer, sums in ablation_sums(model, tb, ladder=ladder).items():
                acc.add(layer, {"importance": sums})
            acc.count(importance_texts=len(tb))
            progress.update(len(tb), tb.n_tokens)
            if on_batch is not None:
                on_batch(j)
    finally:
        progress.close()
