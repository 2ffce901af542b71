"""What the runs say: flags per run, the summary per cell, the speed-ups and the article's claims."""

from __future__ import annotations

import math
import statistics
from typing import Optional, Sequence

from ... import i18n
from ..base import fmt_num
from .settings import Settings

#: A run "stalled" when its final loss is not below baseline − STALL_FRACTION·(baseline − threshold).
STALL_FRACTION = 0.1


def median_steps(xs: list[Optional[int]]) -> Optional[float]:
    """Median steps-to-threshold, counting a run that never got there as infinitely slow."""
    vals = sorted(math.inf if x is None else x for x in xs)
    m = statistics.median(vals)
    return None if math.isinf(m) else float(m)


def first_step_at_or_below(steps: Sequence[int], losses: Sequence[float], loss: float) -> Optional[int]:
    """The first of ``steps`` whose loss is a number at most ``loss`` (None: never)."""
    return next((st for st, l in zip(steps, losses) if l is not None and math.isfinite(l) and l <= loss), None)


def run_flags(steps: Sequence[int], losses: Sequence[float], threshold: float, baseline: float, *,
              crashed: bool = False) -> dict:
    """Steps to threshold and the reached/stalled/diverged flags of one run (see the module doc).

    ``crashed``: the training loss became NaN/inf (the run was stopped there).
    """
    finite = [l for l in losses if l is not None and math.isfinite(l)]
    reached_at = first_step_at_or_below(steps, losses, threshold)
    final = losses[-1] if losses and not crashed else math.nan
    init_loss = losses[0] if losses else math.nan
    diverged = crashed or not math.isfinite(final) or (math.isfinite(init_loss) and final > init_loss)
    stall_line = baseline - STALL_FRACTION * (baseline - threshold)
    return {"steps_to_threshold": reached_at, "reached": reached_at is not None, "final_loss": final,
            "init_loss": init_loss, "min_loss": min(finite, default=math.nan),
            "stalled": (not diverged) and not (final < stall_line), "diverged": diverged}


def counted_in(n: int, unit: str, lang: str = "en") -> str:
    """``n`` of ``unit`` (``seed``, ``step``, … of attnscope.i18n's ``experiments.train.unit_*``) in
    ``lang``: ``1 seed``, ``3 seeds`` (no thousands separator), ``3 个种子``."""
    noun = i18n.text("experiments.train.unit_" + unit, lang)
    return f"{n} {noun}{'s' if lang == 'en' and n != 1 else ''}"


def mean_finite(xs) -> float:
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    return sum(xs) / len(xs) if xs else math.nan


def sd_finite(xs) -> float:
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    return statistics.stdev(xs) if len(xs) > 1 else math.nan


def summarise(runs: list[dict]) -> list[dict]:
    """One row per (task, variant, d_k): seeds aggregated."""
    groups: dict = {}
    for r in runs:
        groups.setdefault((r["task"], r["variant"], r["d_k"]), []).append(r)
    rows = []
    for (task, variant, d_k), rs in groups.items():
        rows.append({
            "task": task, "variant": variant, "d_k": d_k, "n_heads": rs[0]["n_heads"], "seeds": len(rs),
            "steps": rs[0]["steps"], "threshold": rs[0]["threshold"],
            "median_steps_to_threshold": median_steps([r["steps_to_threshold"] for r in rs]),
            "reached": sum(r["reached"] for r in rs),
            "final_loss_mean": mean_finite([r["final_loss"] for r in rs]),
            "final_loss_sd": sd_finite([r["final_loss"] for r in rs]),
            **{k + "_mean": mean_finite([r[k] for r in rs]) for k in ("final_acc", "init_loss")},
            # the seeds' means of these under the runs' own names
            **{k: mean_finite([r[k] for r in rs]) for k in ("init_entropy_norm", "final_entropy_norm", "init_max_weight",
                                                           "init_grad_scores", "mean_grad_scores", "init_grad_qk")},
            "stalled": sum(r["stalled"] for r in rs), "diverged": sum(r["diverged"] for r in rs),
        })
    return rows


def speedups(summary: list[dict], runs: list[dict], fast: str = "scaled", slow: str = "unscaled") -> list[dict]:
    """How many times the steps ``slow`` needed compared with ``fast``, per task and d_k, two ways.

    * ``ratio``: median steps to the task's threshold, slow ÷ fast. When ``slow``'s median run never
      got there it is a lower bound (``bound`` = ">"): the median with each run that never got
      there counted at the total steps (it would have needed more), ÷ fast's steps. With an even
      number of seeds of which half got there, that median is (the slower one's steps + total) / 2.
    * ``ratio_matched``: for each seed, the loss ``slow`` ended with (its final held-out loss), and
      the first evaluation step at which each run was at or below it; slow ÷ fast, median over
      seeds. Defined whenever ``fast`` gets down to that loss, so it also measures cells where
      ``slow`` never reaches the threshold. A seed whose ``fast`` run never got there gives only an
      upper bound (slow's steps ÷ fast's total); ``bound_matched`` = "<" when such a bound could
      move the median (the median with those seeds at 0 differs), else "=".
    """
    out = []
    idx = {(r["task"], r["variant"], r["d_k"]): r for r in summary}
    by_run = {(r["task"], r["variant"], r["d_k"], r["seed_index"]): r for r in runs}
    for (task, variant, d_k), r in idx.items():
        if variant != fast or (task, slow, d_k) not in idx:
            continue
        u = idx[(task, slow, d_k)]
        sf, su = r["median_steps_to_threshold"], u["median_steps_to_threshold"]
        item = {"task": task, "d_k": d_k, "steps_" + fast: sf, "steps_" + slow: su, "ratio": None, "bound": None}
        if sf is not None and sf > 0 and su is not None:
            item["ratio"], item["bound"] = su / sf, "="
        elif sf is not None and sf > 0:  # slow's median run never got there within its steps: a lower bound
            slow_steps = [u["steps"] if x["steps_to_threshold"] is None else x["steps_to_threshold"]
                          for key, x in by_run.items() if key[:3] == (task, slow, d_k)]
            item["ratio"], item["bound"] = statistics.median(slow_steps) / sf, ">"
        matched, bounds, losses = [], [], []
        for key, rs in by_run.items():
            if key[:3] != (task, slow, d_k) or (task, fast, d_k, key[3]) not in by_run:
                continue
            rf = by_run[(task, fast, d_k, key[3])]
            target = rs["final_loss"]
            if target is None or not math.isfinite(target):
                continue
            s_slow = first_step_at_or_below(rs["curve"]["step"], rs["curve"]["eval_loss"], target)
            assert s_slow is not None  # slow's own curve reaches the final loss it ended with
            s_fast = first_step_at_or_below(rf["curve"]["step"], rf["curve"]["eval_loss"], target)
            losses.append(target)
            if s_fast is None:  # fast never got as low as slow's end: slow was faster
                matched.append(s_slow / rf["steps"])
                bounds.append("<")
            elif s_fast > 0:
                matched.append(s_slow / s_fast)
                bounds.append("=")
        if matched:
            m = statistics.median(matched)
            item["loss_matched"] = statistics.median(losses)
            item["ratio_matched"] = m
            lowest = statistics.median([0.0 if b == "<" else x for x, b in zip(matched, bounds)])
            item["bound_matched"] = "=" if lowest == m else "<"
        else:
            item["loss_matched"] = item["ratio_matched"] = item["bound_matched"] = None
        out.append(item)
    return out


def claims(summary: list[dict], settings: Settings, runs: list[dict]) -> dict:
    """The article's two claims, answered from the data in one sentence each.

    The speed verdict uses the matched-loss ratio (see :func:`speedups`), which is defined even
    where unscaled never reaches the threshold; the threshold ratios are quoted beside it.
    """
    sp = speedups(summary, runs)
    speed, stall = claim_sentences(sp, summary, settings)
    measured = [x for x in sp if x["task"] in settings.tasks and x["ratio_matched"] is not None]
    return {"speedups": sp, "speed_sentence": speed, "stall_sentence": stall, "speed_cells": len(measured)}


def claim_sentences(sp: list[dict], summary: list[dict], settings: Settings,
                    lang: str = "en") -> tuple[Optional[str], Optional[str]]:
    """The speed and stall sentences of :func:`claims` in ``lang`` (None where not measured);
    the numbers are the same in every language."""
    T = lambda key, **kw: i18n.text("experiments.train." + key, lang, **kw)  # noqa: E731
    idx = {(r["task"], r["variant"], r["d_k"]): r for r in summary}

    def fmt(ratio, bound):
        if ratio is None:
            return T("na")
        return f"{bound if bound in ('>', '<') else ''}{ratio:.1f}×"

    parts, thr_parts, big, measured, untold = [], [], [], [], []
    for t in settings.tasks:
        items = [x for x in sp if x["task"] == t]
        if not items:
            continue
        parts.append(f"{t} " + ", ".join(f"d_k={x['d_k']}: {fmt(x['ratio_matched'], x['bound_matched'])}"
                                         for x in items))
        thr_parts.append(f"{t} " + ", ".join(f"{x['d_k']}: {fmt(x['ratio'], x['bound'])}" for x in items))
        # A cell where no run of either variant reached the threshold learned too little to tell
        # (a --quick run): its matched ratio compares curves that barely moved.
        learned = [x for x in items if any(idx.get((t, v, x["d_k"]), {}).get("reached") for v in ("scaled", "unscaled"))]
        measured += [x for x in learned if x["ratio_matched"] is not None]
        big += [x for x in learned if x["ratio_matched"] is not None and x["ratio_matched"] >= 3
                and x["bound_matched"] != "<"]
        untold += [x for x in items if x not in learned]
    speed = None
    if sp:
        where = [f"{x['task']} d_k={x['d_k']}" for x in big]
        verdict = (T("speed_untold") if not measured and untold else
                   T("speed_unjudged") if not measured else
                   T("speed_all") if len(big) == len(measured) else
                   T("speed_none") if not big else
                   T("speed_some", where=", ".join(where)))
        speed = T("speed", verdict=verdict, parts=T("join").join(parts), thr_parts=T("join").join(thr_parts))
    d_top = max(settings.d_ks)
    stall_parts = []
    for t in settings.tasks:
        u, s = idx.get((t, "unscaled", d_top)), idx.get((t, "scaled", d_top))
        if u is None:
            continue
        txt = T("stall_part", task=t, stalled=u["stalled"], seeds=u["seeds"], init=fmt_num(u["init_loss_mean"]),
                final=fmt_num(u["final_loss_mean"]), threshold=u["threshold"], reached=u["reached"])
        if s is not None:
            txt += T("stall_vs", final=fmt_num(s["final_loss_mean"]), reached=s["reached"], seeds=s["seeds"])
        stall_parts.append(txt)
    stall = None
    if stall_parts:
        rows = [idx[(t, "unscaled", d_top)] for t in settings.tasks if (t, "unscaled", d_top) in idx]
        n_st = sum(r["stalled"] for r in rows)
        n_all = sum(r["seeds"] for r in rows)
        scaled_st = sum(idx[(t, "scaled", d_top)]["stalled"] for t in settings.tasks if (t, "scaled", d_top) in idx)
        verdict = T("confirmed") if n_st == n_all else T("not_confirmed") if n_st == 0 else T("partly")
        caveat = T("caveat", runs=counted_in(scaled_st, "run", lang)) if n_st and scaled_st >= n_st else ""
        stall = T("stall", d_k=d_top, verdict=verdict, stalled=n_st, total=n_all, caveat=caveat,
                  parts=T("join").join(stall_parts))
    return speed, stall
