"""The training experiment's figures (curves, summary) and its Markdown report."""

from __future__ import annotations

import math

from ... import i18n
from ..base import ExperimentResult, fmt_num, in_figure_rc, md_table
from .settings import VARIANTS, Settings
from .verdicts import STALL_FRACTION, claim_sentences, counted_in, mean_finite

COLORS = {"scaled": "tab:blue", "unscaled": "tab:red", "inv_d": "tab:purple", "cosine": "tab:green",
          "qknorm": "tab:orange", "t5": "tab:brown"}


def mean_curve(rs: list[dict], key: str) -> tuple[list, list]:
    steps = rs[0]["curve"]["step"]
    ys = []
    for i in range(len(steps)):
        vals = [r["curve"][key][i] for r in rs if i < len(r["curve"][key])]
        ys.append(mean_finite(vals))
    return steps, ys


def _T(lang: str):
    return lambda key, **kw: i18n.text("experiments.train." + key, lang, **kw)


@in_figure_rc
def curves_figure(runs: list[dict], settings: Settings, task: str, task_desc: dict, lang: str = "en"):
    """Rows: held-out loss, normalised attention entropy, gradient norm at the scores; columns: d_k."""
    from matplotlib.figure import Figure

    T = _T(lang)

    ds = settings.d_ks
    fig = Figure(figsize=(3.2 * len(ds) + 1, 8), layout="constrained")
    axes = fig.subplots(3, len(ds), squeeze=False, sharex=True)
    for j, d_k in enumerate(ds):
        for v in settings.variants:
            rs = [r for r in runs if r["task"] == task and r["variant"] == v and r["d_k"] == d_k]
            if not rs:
                continue
            for i, key in enumerate(("eval_loss", "entropy_norm", "grad_scores")):
                st, ys = mean_curve(rs, key)
                axes[i][j].plot(st, ys, color=COLORS[v], label=v, lw=1.5)
        axes[0][j].axhline(task_desc["threshold"], color="k", ls=":", lw=1, label=T("fig_threshold"))
        axes[0][j].axhline(task_desc["baseline"], color="gray", ls="--", lw=1, label=T("fig_baseline"))
        n_heads = settings.d_model // d_k
        axes[0][j].set_title(T("fig_dk", d_k=d_k, heads=counted_in(n_heads, "head", lang)))
        axes[1][j].set_ylim(-0.02, 1.02)
        axes[2][j].set_yscale("log")
        axes[2][j].set_xlabel(T("fig_step"))
    axes[0][0].set_ylabel(T("fig_loss"))
    axes[1][0].set_ylabel(T("fig_entropy"))
    axes[2][0].set_ylabel(T("fig_grad"))
    axes[0][-1].legend(fontsize=7)
    fig.suptitle(T("fig_task", task=task, seeds=counted_in(settings.seeds[task], "seed", lang)), fontsize=10)
    return fig


@in_figure_rc
def summary_figure(summary: list[dict], settings: Settings, lang: str = "en"):
    """Per task: final loss and steps to threshold against d_k, one line per variant."""
    from matplotlib.figure import Figure

    T = _T(lang)

    tasks = settings.tasks
    fig = Figure(figsize=(10, 3.4 * len(tasks)), layout="constrained")
    axes = fig.subplots(len(tasks), 2, squeeze=False)
    nv = len(settings.variants)
    for i, t in enumerate(tasks):
        for j, v in enumerate(settings.variants):
            rs = sorted((r for r in summary if r["task"] == t and r["variant"] == v), key=lambda r: r["d_k"])
            if not rs:
                continue
            # a small sideways offset per variant, so that equal values do not hide each other
            ds = [r["d_k"] * 2 ** (0.07 * (j - (nv - 1) / 2)) for r in rs]
            axes[i][0].errorbar(ds, [r["final_loss_mean"] for r in rs],
                                yerr=[0 if math.isnan(r["final_loss_sd"]) else r["final_loss_sd"] for r in rs],
                                fmt="o-", color=COLORS[v], label=v, ms=4, capsize=2)
            steps = [r["median_steps_to_threshold"] if r["median_steps_to_threshold"] is not None
                     else r["steps"] * 1.1 for r in rs]
            axes[i][1].plot(ds, steps, "o-", color=COLORS[v], label=v, ms=4)
        thr = next(r["threshold"] for r in summary if r["task"] == t)
        axes[i][0].axhline(thr, color="k", ls=":", lw=1, label=T("fig_threshold"))
        axes[i][0].set(xscale="log", xlabel="d_k", ylabel=T("fig_final_y"), title=T("fig_final", task=t))
        axes[i][1].axhline(settings.steps[t] * 1.1, color="gray", ls="--", lw=1)
        axes[i][1].text(min(settings.d_ks), settings.steps[t] * 1.12, T("fig_never"), fontsize=7, color="gray")
        axes[i][1].set(xscale="log", xlabel="d_k", ylabel=T("fig_steps_y"),
                       title=T("fig_steps", task=t, threshold=thr), ylim=(0, settings.steps[t] * 1.25))
        for ax in axes[i]:
            ax.set_xscale("log", base=2)
            ax.set_xticks(list(settings.d_ks), [str(d) for d in settings.d_ks])
            ax.minorticks_off()
        axes[i][0].legend(fontsize=7)
    return fig


def report(result: ExperimentResult, settings: Settings, lang: str = "en") -> str:
    """The Markdown report in ``lang``; the numbers are the same in every language (the claims'
    sentences are made again in ``lang`` from the same speed-ups and summary)."""
    T = _T(lang)
    d = result.data
    s = settings
    c = d["claims"]
    speed, stall = (c["speed_sentence"], c["stall_sentence"]) if lang == "en" else \
        claim_sentences(c["speedups"], d["summary"], s, lang)
    lines = [
        T("title"),
        "",
        T("claims"),
        "",
        f"1. {speed or T('no_speed')}",
        f"2. {stall or T('no_stall')}",
        "",
        T("setup"),
        "",
        T("model", layers=counted_in(s.n_layers, "layer", lang), d_model=s.d_model, d_ff=s.d_ff, init=s.init),
        T("optim", lr=s.lr, warmup=int(100 * s.warmup_frac), final=int(100 * s.final_lr_frac)),
        T("eval", every=s.eval_every),
    ]
    for t in s.tasks:
        td = d["tasks"][t]
        seeds = counted_in(s.seeds[t], "seed", lang)
        if t == "recall":
            lines.append(T("recall", n_pairs=td["n_pairs"], n_queries=td["n_queries"], n_keys=td["n_keys"],
                           n_values=td["n_values"], baseline=td["baseline"], threshold=td["threshold"],
                           steps=counted_in(s.steps[t], "step", lang), batch=s.batch[t], seeds=seeds))
        else:
            lines.append(T("lm", corpus=td["corpus"], chars=td["corpus_chars"], sha=td["corpus_sha256"],
                           vocab=td["vocab_size"], seq_len=td["seq_len"], unigram=td["unigram_loss"],
                           bigram=td["bigram_loss"], trigram=td["trigram_loss"], steps=s.steps[t], batch=s.batch[t],
                           seeds=seeds))
    lines += [T("flags", fraction=STALL_FRACTION), ""]
    for t in s.tasks:
        rows = [r for r in d["summary"] if r["task"] == t]
        lines += [T("task", task=t), "",
                  md_table([T("col_variant"), "d_k"] + [T("col_" + k) for k in ("steps", "reached", "loss", "acc",
                                                                               "entropy", "maxw", "grad", "stalled",
                                                                               "diverged")],
                           [[r["variant"], r["d_k"], fmt_num(r["median_steps_to_threshold"]),
                             f"{r['reached']}/{r['seeds']}",
                             fmt_num(r["final_loss_mean"])
                             + ("" if math.isnan(r["final_loss_sd"]) else f" ± {r['final_loss_sd']:.2g}"),
                             fmt_num(r["final_acc_mean"]),
                             f"{fmt_num(r['init_entropy_norm'], 2)} → {fmt_num(r['final_entropy_norm'], 2)}",
                             fmt_num(r["init_max_weight"], 2),
                             f"{fmt_num(r['init_grad_scores'], 2)}, {fmt_num(r['mean_grad_scores'], 2)}",
                             r["stalled"], r["diverged"]]
                            for r in sorted(rows, key=lambda r: (r["d_k"], VARIANTS.index(r["variant"])))]),
                  "", f"![curves {t}](curves_{t}.png)", ""]
    lines += ["![summary](summary.png)", "",
              T("time", total=result.timing.get("total_s", 0.0), jobs=counted_in(int(result.timing.get("jobs", 1)), "job", lang),
                runs=result.timing.get("run_seconds_sum", 0.0))]
    return "\n".join(lines)
