"""Mergeable shards of a corpus analysis: ``analyze --shard i/N`` now, ``analyze --merge`` later.

Shard i of N is process i of an N-process ``torchrun`` job without the collective
(:mod:`.run`): the windows of ``chunk_size`` texts numbered k with ``k % N == i`` and the
importance batches likewise; batches are formed per window, so each is the batch a single run
forms. A shard writes its exact sums (:mod:`.exact`), counters, what reading skipped and the
fingerprints of the model, the settings and the corpus (:mod:`.fingerprint`) and the attnscope
version to ``DIR/shard.json`` — after every window and every importance batch (a temporary file,
then ``os.replace``: a kill leaves the last whole checkpoint). Run again on the same folder, a
shard goes on after its last checkpoint, counting no text twice. Shard 0 also keeps what every process of a single run computes
alike: the norm shares of the first texts and (causal models) every head's copying score.

:func:`merge_shards` adds the sums of shards 0 … N−1 of one fingerprint and builds the result a
single run gives, bit for bit (the sums are exact and the per-batch numbers the same); it
needs no model.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import numpy as np

from ..errors import InputError
from ..i18n import Msg, error
from .accumulate import COUNTERS, StatsAccumulator
from .classify import Thresholds
from .corpus import MAX_EXAMPLES, CorpusReader
from .decoder_copying import every_copying, pick_copying
from .fingerprint import combined, corpus_fingerprint, model_fingerprint, settings_fingerprint
from .run import (
    Passes,
    Progress,
    build_result,
    count_texts,
    distributed,
    load_model,
    make_config,
    model_facts,
    owned_texts,
    prepare,
    run_other_passes,
    run_statistics,
)
from .settings import AnalysisConfig, AnalysisResult

STATE = "shard.json"
FORMAT = "attnscope.analysis-shard"
PARTS = ("model", "settings", "corpus", "version")


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/N"`` → (i, N), 0 ≤ i < N (InputError otherwise)."""
    i, sep, n = str(text).partition("/")
    if sep and i.strip().isdecimal() and n.strip().isdecimal():  # isdigit() passes "²", int() refuses it
        return check_shard((int(i), int(n)))
    raise error(InputError, "errors.shard_spec", value=repr(str(text)))


def check_shard(shard) -> tuple[int, int]:
    try:
        i, n = (int(x) for x in shard)
    except (TypeError, ValueError):
        raise error(InputError, "errors.shard_spec", value=repr(shard)) from None
    if not 0 <= i < n:
        raise error(InputError, "errors.shard_spec", value=f"{i}/{n}")
    return i, n


class LogWatch:
    """The owner predicate of a shard's reader, which also notes what reading had logged (skipped
    lines, blank texts, decode examples with their text's number) when each window began: the
    reader calls it for every text in order, before decoding an owned one."""

    def __init__(self, chunk_size: int, i: int, n: int, start: int) -> None:
        self.chunk_size, self.i, self.n, self.start = chunk_size, i, n, start
        self.reader: Optional[CorpusReader] = None
        self.at: dict[int, tuple[int, int, int]] = {}  # window → (skipped, blank, examples) before it
        self.examples: list[list] = []                # [text number, example], in reading order
        self.last, self.seen = -1, 0

    def __call__(self, index: int) -> bool:
        self.catch_up()
        k = index // self.chunk_size
        if k not in self.at:
            self.at[k] = self.counts()
        self.last = index
        return k % self.n == self.i and k >= self.start

    def catch_up(self) -> None:
        """Examples noted since the last call belong to the text decoded then."""
        assert self.reader is not None
        new = self.reader.log.decode_examples[self.seen:]
        self.examples += [[self.last, x] for x in new]
        self.seen += len(new)

    def counts(self) -> tuple[int, int, int]:
        assert self.reader is not None
        return self.reader.log.skipped_decode, self.reader.log.blank_owned, len(self.examples)

    def through(self, k: int) -> tuple[int, int, int]:
        """(skipped, blank, examples) of the texts of windows ≤ k: noted when window k+1 began, or
        everything when the reader has ended (the only other way a window's group is complete)."""
        if k + 1 in self.at:
            return self.at[k + 1]
        self.catch_up()
        return self.counts()


def analyze_shard(corpus: Union[str, Path], shard: Sequence[int], out: Union[str, Path], model=None,
                  config: Optional[AnalysisConfig] = None, *, device=None, restart: bool = False,
                  on_checkpoint=None, **overrides) -> dict:
    """Analyse shard ``(i, N)`` of ``corpus`` into the folder ``out`` (``out/shard.json``).

    Args:
        corpus, model, config, device, overrides: as :func:`.run.analyze`.
        shard: (i, N), 0 ≤ i < N.
        out: the shard's folder; a checkpoint there of the same shard and fingerprint is resumed.
        restart: start afresh, replacing a checkpoint there.
        on_checkpoint: called with the state after each checkpoint is written.
    Returns:
        The shard's final state (what ``shard.json`` holds).
    """
    i, n = check_shard(shard)
    cfg = make_config(config, overrides)
    if distributed()[1] > 1:
        raise error(InputError, "errors.shard_torchrun")
    t0 = time.perf_counter()
    n_total = count_texts(corpus, cfg)
    model = load_model(model, device)
    if getattr(model.config, "kind", "") == "seq2seq":
        raise error(InputError, "errors.shard_seq2seq", model=model.name)
    p = prepare(model, cfg)
    import attnscope  # (its version: shards of another version may define or compute a statistic otherwise)
    parts = {"model": model_fingerprint(model), "settings": settings_fingerprint(cfg.to_dict(), p.max_length),
             "corpus": corpus_fingerprint(corpus), "version": attnscope.__version__}
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    state = None if restart or not (out / STATE).exists() else read_state(out)
    if state is not None and (state["shard"] != [i, n] or state["fingerprint"] != combined(parts)):
        raise error(InputError, "errors.shard_other_run", out=repr(str(out)), shard=f"{state['shard'][0]}/{state['shard'][1]}",
                    what=differs(state["parts"], parts) if state["shard"] == [i, n] else Msg("errors.shard_part_shard"))
    if state is None:
        state = {"format": FORMAT, "version": 1, "shard": [i, n], "fingerprint": combined(parts), "parts": parts,
                 "corpus": str(corpus), "config": cfg.to_dict(), "facts": model_facts(model),
                 "max_length": p.max_length, "repeat": p.repeat.to_dict() if p.repeat is not None else {},
                 "progress": {"windows": 0, "statistics": False, "importance": 0, "finished": False},
                 "log": {"skipped_decode": 0, "blank_owned": 0, "examples": []},
                 "timings": {}, "seconds": 0.0, "shares": {}, "copying": {}}
    elif state["progress"]["finished"]:
        return state
    else:
        p.acc = StatsAccumulator.from_state_dict(state["accumulator"])

    def save() -> None:
        state["accumulator"] = p.acc.state_dict()
        state["seconds"] = seconds + time.perf_counter() - t0
        write_state(out, state)
        if on_checkpoint is not None:
            on_checkpoint(state)

    seconds, progress = state["seconds"], state["progress"]
    if not progress["statistics"]:
        run_shard_statistics(model, corpus, p, cfg, state, i, n, n_total, save)

    def importance_done(j: int) -> None:
        progress["importance"] = j
        save()
    run_other_passes(model, corpus, p, cfg, i, n, importance_done=progress["importance"],
                     on_importance=importance_done, norm=i == 0)
    if i == 0:
        state["shares"] = to_jsonable(p.shares)
        state["copying"] = every_copying(model) if model.config.causal else {}
    for k, v in p.timings.items():  # this run's importance, induction and norm passes
        state["timings"][k] = state["timings"].get(k, 0.0) + v
    progress["finished"] = True
    save()
    return state


def run_shard_statistics(model, corpus, p: Passes, cfg: AnalysisConfig, state: dict, i: int, n: int,
                         n_total: int, save) -> None:
    """The statistics pass of shard i/n from its first window not yet checkpointed."""
    progress, log0 = state["progress"], dict(state["log"])
    watch = LogWatch(cfg.chunk_size, i, n, progress["windows"])
    reader = CorpusReader(corpus, unit=cfg.unit, on_decode_error=cfg.on_decode_error, owner=watch,
                          max_texts=cfg.max_texts)
    watch.reader = reader

    def log_through(k: int) -> None:
        skipped, blank, m = watch.through(k)
        state["log"] = {"skipped_decode": log0["skipped_decode"] + skipped, "blank_owned": log0["blank_owned"] + blank,
                        "examples": (log0["examples"] + watch.examples[:m])[:MAX_EXAMPLES]}

    def window_done(k: int) -> None:
        log_through(k)
        progress["windows"] = k + 1
        save()
    t1 = time.perf_counter()
    run_statistics(model, reader, p, cfg, Progress(owned_texts(n_total, cfg.chunk_size, i, n), cfg.progress,
                                                   f"shard {i}/{n}"), on_window=window_done)
    log_through(n_total)  # no window n_total + 1 began: everything the reader (now ended) logged
    p.acc.count(skipped_decode=state["log"]["skipped_decode"],
                empty=(reader.log.empty if i == 0 else 0) + state["log"]["blank_owned"])
    state["timings"]["statistics"] = state["timings"].get("statistics", 0.0) + time.perf_counter() - t1
    progress["statistics"] = True
    save()


def differs(a: dict, b: dict) -> Msg:
    """Which of the fingerprints differ, in the message's language."""
    names = [k for k in PARTS if a.get(k) != b.get(k)] or ["format"]
    what = Msg(f"errors.shard_part_{names[0]}")
    for k in names[1:]:
        what = Msg("errors.shard_part_and", a=what, b=Msg(f"errors.shard_part_{k}"))
    return what


# -- the state file --------------------------------------------------------------------------------

def write_state(out: Path, state: dict) -> None:
    """Write ``out/shard.json`` whole or not at all: a temporary file, flushed, then renamed."""
    tmp = out / f".{STATE}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, out / STATE)


def read_state(folder: Union[str, Path]) -> dict:
    path = Path(folder) / STATE
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise error(InputError, "errors.shard_unreadable", path=repr(str(path))) from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise error(InputError, "errors.shard_unreadable", path=repr(str(path)))
    check_state(state, path)
    return state


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def check_state(state: dict, path: Path) -> None:
    """InputError naming ``path`` and the field when a field that resuming or merging reads is
    missing or not of its kind (a hand-edited or damaged file), before anything reads it."""
    def need(ok: bool, field: str) -> None:
        if not ok:
            raise error(InputError, "errors.shard_damaged", path=repr(str(path)), field=field)
    shard = state.get("shard")
    need(isinstance(shard, list) and len(shard) == 2 and all(map(_count, shard)) and shard[0] < shard[1], "shard")
    for k, kind in (("fingerprint", str), ("parts", dict), ("facts", dict), ("repeat", dict), ("shares", dict),
                    ("copying", dict), ("timings", dict), ("corpus", str)):
        need(isinstance(state.get(k), kind), k)
    need(_count(state.get("max_length")), "max_length")
    need(isinstance(state.get("seconds"), (int, float)) and not isinstance(state["seconds"], bool), "seconds")
    need(all(isinstance(v, (int, float)) for v in state["timings"].values()), "timings")
    p = state.get("progress")
    need(isinstance(p, dict) and _count(p.get("windows")) and _count(p.get("importance"))
         and isinstance(p.get("statistics"), bool) and isinstance(p.get("finished"), bool), "progress")
    log = state.get("log")
    need(isinstance(log, dict) and _count(log.get("skipped_decode")) and _count(log.get("blank_owned"))
         and isinstance(log.get("examples"), list)
         and all(isinstance(e, list) and len(e) == 2 and isinstance(e[0], int) for e in log["examples"]), "log")
    ok = False
    try:
        config_of(state)
        acc = StatsAccumulator.from_state_dict(state["accumulator"])
        ok = (len(acc.exact_sums) == len(acc.exact_counts) == int(np.prod(acc.shape))
              and set(acc.counters) == set(COUNTERS) and all(map(_count, acc.counters.values())))
    except _ConfigBroken:
        need(False, "config")
    except (KeyError, TypeError, ValueError, AttributeError):
        pass
    need(ok, "accumulator")


class _ConfigBroken(Exception):
    pass


def config_of(state: dict) -> AnalysisConfig:
    """The :class:`AnalysisConfig` a shard ran with (its ``config`` field)."""
    try:
        d = dict(state["config"])
        return AnalysisConfig(**{**d, "thresholds": Thresholds(**d["thresholds"])})
    except (KeyError, TypeError, ValueError) as e:
        raise _ConfigBroken from e


def to_jsonable(x: Any) -> Any:
    """Arrays as ``{"__array__": list, "dtype": …}`` (float64 → JSON → float64 is exact)."""
    if isinstance(x, np.ndarray):
        return {"__array__": x.tolist(), "dtype": str(x.dtype)}
    if isinstance(x, dict):
        return {k: to_jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_jsonable(v) for v in x]
    return x.item() if isinstance(x, np.generic) else x


def from_jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        if "__array__" in x:
            return np.array(x["__array__"], dtype=x["dtype"])
        return {k: from_jsonable(v) for k, v in x.items()}
    if isinstance(x, list):
        return [from_jsonable(v) for v in x]
    return x


# -- merging -----------------------------------------------------------------------------------------

def merge_shards(folders: Sequence[Union[str, Path]]) -> AnalysisResult:
    """The :class:`AnalysisResult` of shards 0 … N−1 (one folder each, any order), as a single run
    of the same settings gives it; InputError naming the folder when one is unfinished, of another
    run, missing or given twice."""
    states = [(str(f), read_state(f)) for f in folders]
    if not states:
        raise error(InputError, "errors.shard_none")
    first, s0 = states[0]
    n = s0["shard"][1]
    seen: dict[int, str] = {}
    for where, s in states:
        if s["shard"][1] != n:
            raise error(InputError, "errors.shard_count", a=repr(where), i=s["shard"][0], n=s["shard"][1],
                        b=repr(first), m=n)
        if s["fingerprint"] != s0["fingerprint"]:
            raise error(InputError, "errors.shard_fingerprint", a=repr(where), b=repr(first),
                        what=differs(s["parts"], s0["parts"]))
        if s["shard"][0] in seen:
            raise error(InputError, "errors.shard_twice", i=s["shard"][0], n=n, a=repr(seen[s["shard"][0]]), b=repr(where))
        if not s["progress"]["finished"]:
            raise error(InputError, "errors.shard_unfinished", path=repr(where), i=s["shard"][0], n=n)
        seen[s["shard"][0]] = where
    missing = [k for k in range(n) if k not in seen]
    if missing:
        raise error(InputError, "errors.shard_missing", missing=", ".join(map(str, missing)), n=n, last=n - 1)
    states.sort(key=lambda ws: ws[1]["shard"][0])
    s0 = states[0][1]
    acc = StatsAccumulator.from_state_dict(s0["accumulator"])
    for _, s in states[1:]:
        acc.merge(StatsAccumulator.from_state_dict(s["accumulator"]))
    # a single run keeps the first examples in reading order: sort by text number (stable within one)
    examples = [x for _, x in sorted((e for _, s in states for e in s["log"]["examples"]), key=lambda e: e[0])]
    cfg = config_of(s0)
    timings: dict = {}
    for _, s in states:
        for k, v in s["timings"].items():
            timings[k] = timings.get(k, 0.0) + v
    return build_result(acc, cfg, s0["facts"], corpus=s0["corpus"], max_length=s0["max_length"], world=n,
                        seconds=sum(s["seconds"] for _, s in states), timings=timings,
                        examples=examples[:MAX_EXAMPLES], repeat=s0["repeat"], shares=from_jsonable(s0["shares"]),
                        copying=lambda means: pick_copying(s0["copying"], means, cfg.thresholds))
