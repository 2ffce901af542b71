"""A faithfulness run: choose the texts, evaluate every method on each, sum up with intervals.

Texts (:func:`choose_texts`): the paragraphs of ``builtin:python-docs`` in a seeded random order,
each cut to its longest whole-word prefix of at most ``max_tokens`` tokens (special tokens
included), skipping those with fewer than 4 tokens of their own; the first ``n_texts`` are used.
A method given a ``limit`` runs on the first ``limit`` of them only (the costly ones: value zeroing
reruns a layer once per token and layer, integrated gradients takes a gradient per step). A run may
take over an earlier run's per-text numbers of the same texts (``reuse``, :mod:`.reuse`) and compute
only the rest: more texts for the costly methods, or a method added.

:func:`summarise` turns the per-text numbers into each method's means with bootstrap 95 %
intervals (:mod:`.stats`: the texts resampled with one seed, so methods run on the same texts are
resampled alike and their differences are paired), and :func:`.verdict.verdict` reads them.
"""

from __future__ import annotations

import platform
import sys
import time
from typing import Iterator, Optional, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from .. import __version__
from ..analysis.corpus import python_docs_paragraphs
from ..attribution import METHODS
from ..attribution.target import model_kind
from ..errors import InputError
from ..i18n import error
from . import stats
from .evaluate import RANDOM, REFERENCE, TextResult, evaluate_text, row_choice
from .reuse import Earlier
from .verdict import verdict

CORPUS = "builtin:python-docs"
#: methods a run takes when none are named: every registered one but attention flow (one maximum-flow
#: problem per pair of tokens: about 3-4 s of one CPU thread a text of 48 tokens on MiniLM, some 30 min
#: more for a run of 500 texts), and the random control
DEFAULT_METHODS = tuple(m for m in METHODS if m != "flow") + (RANDOM,)


def check_methods(methods: Sequence[str]) -> list[str]:
    """The methods as a list, each known (an attribution method or ``random``), none twice."""
    out: list[str] = []
    for m in methods:
        if m not in METHODS and m != RANDOM:
            raise error(InputError, "errors.faithfulness_unknown_method", name=repr(m),
                        methods=", ".join(list(METHODS) + [RANDOM]))
        if m in out:
            raise error(InputError, "errors.faithfulness_twice", name=repr(m))
        out.append(m)
    if not out:
        raise error(InputError, "errors.faithfulness_no_methods")
    return out


def cut(model, text: str, max_tokens: int) -> str:
    """The longest whole-word prefix of ``text`` with at most ``max_tokens`` tokens ("" if none)."""
    def n(s: str) -> int:
        return len(model.encode(s, truncate=True).tokens[0])

    if n(text) <= max_tokens:
        return text
    words = text.split()
    lo, hi = 0, len(words)  # words[:lo] fits, words[:hi + 1] does not
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if n(" ".join(words[:mid])) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(words[:lo])


def choose_texts(seed: int) -> Iterator[tuple[int, str, str]]:
    """(index in the corpus, where, paragraph) of the built-in corpus in a seeded random order."""
    paragraphs = python_docs_paragraphs()
    for i in np.random.default_rng(seed).permutation(len(paragraphs)):
        where, text = paragraphs[int(i)]
        yield int(i), where, text


def evaluate(model, *, n_texts: int, methods: Sequence[str], max_tokens: int, seed: int = 0,
             limits: Optional[dict] = None, options: Optional[dict] = None,
             bins: Sequence[float] = stats.ERASER_BINS, progress: bool = True, reuse: Optional[dict] = None) -> dict:
    """Run the evaluation (module docstring) and return everything as one JSON-ready dict.
    ``reuse``: an earlier run's results (:func:`.reuse.read_results`) whose per-text numbers are taken
    over where it ran a method on the same text with the same options (:class:`.reuse.Earlier`)."""
    methods = check_methods(methods)
    if model_kind(model) == "seq2seq":  # its output reads every source row through cross-attention: no row to read
        raise error(InputError, "errors.faithfulness_seq2seq", model=model.name)
    limits = dict(limits or {})
    options = dict(options or {})
    earlier = None if reuse is None else Earlier(
        reuse, {"model": model.name, "corpus": CORPUS, "seed": seed, "max_tokens": max_tokens, "bins": list(bins)},
        methods, options)
    started = time.perf_counter()
    results: list[TextResult] = []
    skipped = 0
    failed: list[str] = []
    bar = tqdm(total=n_texts, desc=f"evaluate-attribution {model.name}", unit="text", disable=not progress,
               mininterval=1 if sys.stderr.isatty() else 60)
    for index, where, paragraph in choose_texts(seed):
        if len(results) >= n_texts:
            break
        text = cut(model, paragraph, max_tokens)
        now = [m for m in methods if len(results) < limits.get(m, n_texts)]
        held = earlier.held(index) if earlier is not None and text else []
        fresh = [m for m in now if m not in held]
        try:
            truth = earlier.reference(index) if earlier is not None and REFERENCE in held else None
            r = evaluate_text(model, index, where, text, fresh, options, bins, seed, truth) if text and fresh else None
            if earlier is not None and held:
                r = earlier.fill(index, where, r, [m for m in now if m in held])
        except InputError as e:  # a method that cannot explain this text: the text is left out for every method
            failed.append(f"{where}: {e}")
            continue
        if r is None:
            skipped += 1
            continue
        results.append(r)
        bar.update(1)
    bar.close()
    if len(results) < n_texts and failed:  # the texts were there: say why they were left out
        raise error(InputError, "errors.faithfulness_failed", n=len(results), failed=len(failed), first=failed[0])
    if len(results) < n_texts:
        raise error(InputError, "errors.faithfulness_too_few", n=len(results), max_tokens=max_tokens)
    out = {
        "model": model.name, "kind": "decoder" if model.has_lm_head else "encoder",
        "row": row_choice(model),
        "corpus": CORPUS, "texts": len(results), "skipped_short": skipped, "failed": failed, "max_tokens": max_tokens,
        "seed": seed, "bins": list(bins), "resamples": stats.RESAMPLES, "level": stats.LEVEL,
        "methods": methods, "limits": limits, "options": options,
        "seconds": time.perf_counter() - started,
        "versions": {"attnscope": __version__, "torch": torch.__version__, "python": platform.python_version()},
        "threads": torch.get_num_threads(),
    }
    out["summary"] = summarise(results, methods, seed)
    if earlier is not None:
        out["reused"] = earlier.summary()
        for m, x in out["summary"].items():  # a method no text ran now: the earlier run's time and gap
            if x["seconds_per_text"] != x["seconds_per_text"]:
                then = earlier.res["summary"].get(m, {})
                x["seconds_per_text"] = then.get("seconds_per_text")
                if "completeness_gap" in then and "completeness_gap" not in x:
                    x["completeness_gap"] = then["completeness_gap"]
    out["verdict"] = verdict(results, out["summary"], seed)
    out["per_text"] = per_text(results, methods)
    return out


def summarise(results: Sequence[TextResult], methods: Sequence[str], seed: int) -> dict:
    """Per method: ρ, AOPC comprehensiveness and sufficiency, and each bin's two measures, as
    :func:`.stats.bootstrap` dicts; the texts it ran on; seconds per text; integrated gradients'
    completeness gap (median and 90th percentile of |Σ IG − Δf| / |Δf| over the texts)."""
    out = {}
    for m in methods:
        e = [stats.eraser(r.full, r.deleted[m], r.kept[m]) for r in results if m in r.rho]
        n_bins = len(e[0]["comprehensiveness"]) if e else 0
        s = {
            "texts": len(e),
            "rho": stats.bootstrap([r.rho[m] for r in results if m in r.rho], seed),
            "aopc_comprehensiveness": stats.bootstrap([x["aopc_comprehensiveness"] for x in e], seed),
            "aopc_sufficiency": stats.bootstrap([x["aopc_sufficiency"] for x in e], seed),
            "comprehensiveness": [stats.bootstrap([x["comprehensiveness"][b] for x in e], seed) for b in range(n_bins)],
            "sufficiency": [stats.bootstrap([x["sufficiency"][b] for x in e], seed) for b in range(n_bins)],
            "seconds_per_text": mean_or_nan([r.seconds[m] for r in results if m in r.seconds]),
        }
        gaps = [r.details[m]["relative_gap"] for r in results if m in r.details and "relative_gap" in r.details[m]]
        if gaps:
            s["completeness_gap"] = {"median": float(np.median(gaps)), "p90": float(np.percentile(gaps, 90))}
        out[m] = s
    if REFERENCE in out:  # leave-one-out runs on every text (ρ's reference), a row only when asked for
        out[REFERENCE]["seconds_per_text"] = mean_or_nan([r.seconds[REFERENCE] for r in results
                                                          if REFERENCE in r.seconds])
    return out


def mean_or_nan(xs: Sequence[float]) -> float:
    """The mean, or NaN for no values (a method whose every text was taken over from an earlier run)."""
    return float(np.mean(xs)) if xs else float("nan")


def per_text(results: Sequence[TextResult], methods: Sequence[str]) -> dict:
    """The per-text numbers behind the summary (what a reader needs to recompute it)."""
    return {
        "index": [r.index for r in results], "where": [r.where for r in results],
        "tokens": [r.n_tokens for r in results], "content_tokens": [r.n_content for r in results],
        "full": [r.full for r in results], "counts": [r.details["counts"] for r in results],
        "reference_scores": [r.truth or None for r in results],
        "methods": {m: {"rho": [r.rho.get(m) for r in results],
                        "deleted": [r.deleted.get(m) for r in results],
                        "kept": [r.kept.get(m) for r in results]} for m in methods},
    }
