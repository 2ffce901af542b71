"""The training experiment's figures (curves, summary) and its Markdown report."""

from __future__ import annotations

import math

from ..base import ExperimentResult, fmt_num, md_table
from .settings import VARIANTS, Settings
from .verdicts import STALL_FRACTION, counted, mean_finite

COLORS = {"scaled": "tab:blue", "unscaled": "tab:red", "inv_d": "tab:purple", "cosine": "tab:green",
          "qknorm": "tab:orange", "t5": "tab:brown"}


def mean_curve(rs: list[dict], key: str) -> tuple[list, list]:
    steps = rs[0]["curve"]["step"]
    ys = []
    for i in range(len(steps)):
        vals = [r["curve"][key][i] for r in rs if i < len(r["curve"][key])]
        ys.append(mean_finite(vals))
    return steps, ys


def curves_figure(runs: list[dict], settings: Settings, task: str, task_desc: dict):
    """Rows: held-out loss, normalised attention entropy, gradient norm at the scores; columns: d_k."""
    from matplotlib.figure import Figure

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
        axes[0][j].axhline(task_desc["threshold"], color="k", ls=":", lw=1, label="threshold")
        axes[0][j].axhline(task_desc["baseline"], color="gray", ls="--", lw=1, label="baseline (stall level)")
        n_heads = settings.d_model // d_k
        axes[0][j].set_title(f"d_k = {d_k} ({n_heads} head{'s' if n_heads > 1 else ''})")
        axes[1][j].set_ylim(-0.02, 1.02)
        axes[2][j].set_yscale("log")
        axes[2][j].set_xlabel("step")
    axes[0][0].set_ylabel("held-out loss (nats)")
    axes[1][0].set_ylabel("attention entropy / ln(#keys)")
    axes[2][0].set_ylabel("‖∂loss/∂scores‖")
    axes[0][-1].legend(fontsize=7)
    fig.suptitle(f"task {task}: mean over {counted(settings.seeds[task], 'seed')}", fontsize=10)
    return fig


def summary_figure(summary: list[dict], settings: Settings):
    """Per task: final loss and steps to threshold against d_k, one line per variant."""
    from matplotlib.figure import Figure

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
        axes[i][0].axhline(thr, color="k", ls=":", lw=1, label="threshold")
        axes[i][0].set(xscale="log", xlabel="d_k", ylabel="final held-out loss", title=f"{t}: final loss")
        axes[i][1].axhline(settings.steps[t] * 1.1, color="gray", ls="--", lw=1)
        axes[i][1].text(min(settings.d_ks), settings.steps[t] * 1.12, "never reached", fontsize=7, color="gray")
        axes[i][1].set(xscale="log", xlabel="d_k", ylabel="steps (median over seeds)",
                       title=f"{t}: steps to loss {thr:.3g}", ylim=(0, settings.steps[t] * 1.25))
        for ax in axes[i]:
            ax.set_xscale("log", base=2)
            ax.set_xticks(list(settings.d_ks), [str(d) for d in settings.d_ks])
            ax.minorticks_off()
        axes[i][0].legend(fontsize=7)
    return fig


def report(result: ExperimentResult, settings: Settings) -> str:
    d = result.data
    s = settings
    c = d["claims"]
    lines = [
        "# Experiment: training with and without 1/√d_k",
        "",
        "## The article's claims",
        "",
        f"1. {c['speed_sentence'] or 'not measured (scaled or unscaled missing from the variants)'}",
        f"2. {c['stall_sentence'] or 'not measured (unscaled missing from the variants)'}",
        "",
        "## Set-up",
        "",
        f"- Model: attnscope TransformerEncoder, {counted(s.n_layers, 'pre-LN layer')}, d_model = {s.d_model}, "
        f"d_ff = {s.d_ff}, n_heads = d_model / d_k, no dropout, linear read-out; init {s.init} "
        "(LeCun: q and k entries start with unit variance).",
        f"- Optimiser: AdamW (lr {s.lr:g}, no weight decay, clip 1.0), {int(100 * s.warmup_frac)} % linear warm-up, "
        f"cosine decay to {int(100 * s.final_lr_frac)} %; identical for every variant, and identical batches "
        "and initial weights for a given seed.",
        f"- Evaluation every {s.eval_every} steps on a fixed held-out set.",
    ]
    for t in s.tasks:
        td = d["tasks"][t]
        if t == "recall":
            lines.append(f"- recall: {td['n_pairs']} key-value pairs + {td['n_queries']} queries, {td['n_keys']} keys × "
                         f"{td['n_values']} values; baseline ln {td['n_values']} = {td['baseline']:.3f}; threshold "
                         f"{td['threshold']:.3g}; {counted(s.steps[t], 'step')} × batch {s.batch[t]}; "
                         f"{counted(s.seeds[t], 'seed')}.")
        else:
            lines.append(f"- lm: {td['corpus']} ({td['corpus_chars']} chars, sha256 {td['corpus_sha256']}…), "
                         f"{td['vocab_size']} symbols, windows of {td['seq_len']}; count-model losses on the "
                         f"held-out text: unigram {td['unigram_loss']:.3f} (baseline), bigram {td['bigram_loss']:.3f} "
                         f"(threshold), trigram {td['trigram_loss']:.3f}; {s.steps[t]} steps × batch {s.batch[t]}; "
                         f"{counted(s.seeds[t], 'seed')}.")
    lines += [
        f"- stalled: final loss above baseline − {STALL_FRACTION}·(baseline − threshold); diverged: NaN/inf "
        "or final > initial loss. Steps to threshold: median over seeds (a run that never got there counts "
        "as infinitely slow; — = median not reached).",
        "",
    ]
    for t in s.tasks:
        rows = [r for r in d["summary"] if r["task"] == t]
        lines += [f"## Task {t}", "",
                  md_table(["variant", "d_k", "steps to thr.", "reached", "final loss", "final acc",
                            "entropy/ln n: init → final", "max w init", "‖∂L/∂scores‖ init, mean",
                            "stalled", "diverged"],
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
              f"Time: {result.timing.get('total_s', 0.0):.0f} s wall ({counted(int(result.timing.get('jobs', 1)), 'job')}); "
              f"sum of run times {result.timing.get('run_seconds_sum', 0.0):.0f} s."]
    return "\n".join(lines)
