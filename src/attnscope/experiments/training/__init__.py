"""Experiment "training": train small Transformers with each way of scaling the scores, side by side.

The third article claims that with the 1/√d_k factor "training was over 3× faster", and that
without it, at d_k = 512, "the training loss got stuck". This experiment measures both.

Models are attnscope's own :class:`~attnscope.modules.TransformerEncoder` (pre-LN, a final
LayerNorm, GELU, no dropout) with a linear read-out. The width is fixed (``d_model`` = 512 by
default) and d_k changes through the number of heads (``n_heads = d_model / d_k``), so that every
variant has the same parameter count and cost per step and only d_k differs.

Variants (``config.scoring`` of the attention, plus one initialisation):

=========  =====================================================================================
scaled     q·k / √d_k (the Transformer's)
unscaled   q·k
inv_d      q·k / d_k
cosine     cos(q, k) / τ with a learnable τ per head, starting at 0.1 (Swin V2)
qknorm     LayerNorm(q)·LayerNorm(k) / √d_k with learnable affine (ViT-22B)
t5         q·k unscaled, with the 1/√d_k folded into the query weights at initialisation (T5):
           the rows of W_Q (and its bias) in the fused W_qkv start divided by √d_k, so the first
           forward pass equals "scaled" exactly; training then moves W_Q freely.
=========  =====================================================================================

Initialisation: every Linear weight ~ N(0, 1/fan_in) (LeCun), biases 0, embeddings ~ N(0, 1).
After the pre-attention LayerNorm the inputs have unit variance, so q and k start with
unit-variance entries — the premise of the article's variance argument. ``init="small"`` uses
std 0.02 everywhere instead (BERT/GPT-2), where scores start much smaller.

Every variant gets the same optimiser (AdamW, no weight decay, gradient clipping at norm 1) and the
same schedule (linear warm-up over the first 10 % of steps, cosine decay to 10 % of the peak),
the same batches and, for a given seed, the same initial weights. Each run is seeded
independently and runs on one thread, so results do not depend on ``jobs``.

Measured per run, every ``eval_every`` steps: the loss on a fixed held-out set, the attention
entropy (mean over the rows that carry a loss, in nats, and divided by ln(#keys)), the mean largest
attention weight, and, on that step's training batch, the norm of the gradient at the attention
scores (``‖∂loss/∂(scaled scores)‖_F`` over the batch, all heads and layers, read with a tensor hook
on the hook point ``layers.{i}.attn.scaled``) and at the query/key weights.

Flags:

* ``reached``: the held-out loss got to the task's threshold; ``steps_to_threshold`` is the
  first evaluation step where it did (a multiple of ``eval_every``).
* ``stalled``: the final loss is not below ``baseline − 0.1·(baseline − threshold)``, i.e. the run
  got less than 10 % of the way from what needs no attention (ln V for recall, the unigram loss
  for lm) towards the threshold: the loss "did not move" in the article's words.
* ``diverged``: a loss became NaN/inf, or the final loss is above the initial one.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict
from typing import Any

from ... import i18n
from ...errors import ConfigError
from ...i18n import error
from ..base import ExperimentResult, check_options, check_seed
from ..tasks import make_task
from .grid import execute, run_label, run_specs
from .loop import loss_fn, lr_factor, train_one
from .model import Probe, TaskModel, build_model, fold_scale, init_weights, model_config
from .report import COLORS, curves_figure, report, summary_figure
from .settings import DEFAULT_D_KS, INITS, VARIANTS, Settings, make_settings
from .verdicts import STALL_FRACTION, claim_sentences, claims, run_flags, speedups, summarise

__all__ = ["run", "load", "assemble", "settings_from_params", "Settings", "make_settings", "VARIANTS", "DEFAULT_D_KS",
           "INITS", "STALL_FRACTION", "TaskModel", "Probe", "build_model", "model_config", "init_weights",
           "fold_scale", "train_one", "lr_factor", "loss_fn", "run_specs", "execute", "run_label", "run_flags",
           "summarise", "speedups", "claims", "claim_sentences",
           "curves_figure", "summary_figure", "report", "COLORS", "make_task",
           "ConfigError"]


def run(*, quick: bool = False, seed: int = 0, progress: bool = True, jobs: int = 1, resume_dir=None,
        lang: str = "en", **options) -> ExperimentResult:
    """Train the grid of (task, variant, d_k, seed) and report.

    Args:
        quick: the CI version (:meth:`Settings.quick`): width 64, d_k ∈ {16, 64}, 1 seed, 60 steps.
        seed: base seed; run i of a cell uses seed ``1000·seed + i`` (the same for every variant).
        progress: show a progress bar over runs.
        jobs: worker processes (each run is single-threaded; results do not depend on jobs).
        resume_dir: a folder where each finished run is saved at once (one JSON file per run);
            a rerun with the same options reuses them and trains only the rest, so an interrupted
            grid (Ctrl-C, SIGTERM) resumes. The caller removes it when done (the CLI does).
        **options: any field of :func:`make_settings` (tasks, variants, d_ks, seeds, steps, batch,
            eval_size, d_model, n_layers, d_ff, lr, eval_every, init).
        lang: language of the report and the figures' titles and axes ("en" or "zh").
    Returns:
        ExperimentResult with tables ``summary``, ``runs``, ``curves``, ``speedups`` and figures
        ``summary`` and ``curves_<task>``.
    """
    t0 = time.perf_counter()
    seed = check_seed(seed)
    lang = i18n.check_lang(lang)
    import inspect

    known = set(inspect.signature(make_settings).parameters) - {"quick"}
    check_options("training", options, known, known | {"jobs"})
    settings = make_settings(quick=quick, **options)
    task_objs = {t: make_task(t) for t in settings.tasks}
    specs = run_specs(settings, seed, task_objs)
    from ..runstore import RunStore

    store = RunStore(resume_dir) if resume_dir is not None else None
    runs = execute(specs, jobs=jobs, progress=progress, store=store)
    t_train = time.perf_counter() - t0
    for r, sp in zip(runs, specs):
        r["seed_index"] = sp["seed_index"]
    seconds = {f"{r['task']}:{r['variant']}:{r['d_k']}:{r['seed_index']}": r.pop("seconds") for r in runs}
    params = {"quick": quick, "seed": seed, **{k: (list(v) if isinstance(v, tuple) else v)
                                                for k, v in asdict(settings).items()}}
    timing = {"train_s": t_train, "run_seconds_sum": sum(seconds.values()), "jobs": jobs,
              **{f"run:{k}": v for k, v in seconds.items()}}
    result = assemble(runs, params, {t: task_objs[t].describe() for t in settings.tasks}, timing, lang)
    result.timing["total_s"] = time.perf_counter() - t0
    result.report = report(result, settings, lang)
    return result


def settings_from_params(params: dict) -> Settings:
    """The :class:`Settings` that ``results.json``'s ``params`` were written from."""
    names = Settings.__dataclass_fields__
    kw: dict[str, Any] = {k: (tuple(v) if isinstance(v, list) else v) for k, v in params.items() if k in names}
    return Settings(**kw)


def assemble(runs: list[dict], params: dict, tasks_desc: dict, timing: dict, lang: str = "en") -> ExperimentResult:
    """Summary, claims, tables, figures and report from the runs (also used to re-render a folder)."""
    settings = settings_from_params(params)
    summary = summarise(runs)
    answer = claims(summary, settings, runs)
    data = {"tasks": tasks_desc, "runs": runs, "summary": summary, "claims": answer}
    tables = {"summary": summary, "speedups": answer["speedups"],
              "runs": [{k: v for k, v in r.items() if k != "curve"} for r in runs],
              "curves": [{"task": r["task"], "variant": r["variant"], "d_k": r["d_k"], "seed": r["seed"],
                          **{k: r["curve"][k][i] for k in r["curve"]}}
                         for r in runs for i in range(len(r["curve"]["step"]))]}
    figures = {"summary": summary_figure(summary, settings, lang)}
    for t in settings.tasks:
        figures[f"curves_{t}"] = curves_figure(runs, settings, t, tasks_desc[t], lang)
    result = ExperimentResult("training", params, data, tables=tables, figures=figures, timing=dict(timing))
    result.report = report(result, settings, lang)
    return result


#: What :func:`assemble` reads of every stored run, and of its curve.
RUN_FIELDS = ("task", "variant", "d_k", "n_heads", "seed", "seed_index", "steps", "threshold", "curve",
              "steps_to_threshold", "reached", "final_loss", "final_acc", "init_loss", "init_entropy_norm",
              "final_entropy_norm", "init_max_weight", "init_grad_scores", "mean_grad_scores", "init_grad_qk",
              "stalled", "diverged")
CURVE_FIELDS = ("step", "eval_loss", "entropy_norm", "grad_scores")


def load(folder, lang: str = "en") -> ExperimentResult:
    """Rebuild a training result from a folder it was written to (``results.json``, ``timing.json``).

    Nothing is retrained: the summary, claims, tables, figures and report are recomputed from the
    stored runs, so a change to the reporting does not need a new 20-minute run.
    """
    import json
    from pathlib import Path

    folder = Path(folder)
    path = folder / "results.json"
    if not path.is_file():
        raise error(ConfigError, "errors.experiment_no_results", folder=repr(str(folder)))
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise error(ConfigError, "errors.experiment_cannot_read", path=repr(str(path)), why=e) from None
    if not isinstance(saved, dict) or not isinstance(saved.get("data"), dict):
        raise error(ConfigError, "errors.experiment_not_results", path=repr(str(path)))
    if saved.get("experiment") != "training":
        raise error(ConfigError, "errors.experiment_not_training", path=repr(str(path)),
                    name=repr(saved.get("experiment")))
    timing_path = folder / "timing.json"
    try:
        timing = json.loads(timing_path.read_text(encoding="utf-8")) if timing_path.is_file() else {}
    except (OSError, UnicodeDecodeError, ValueError):
        timing = {}  # wall-clock times only: the report says "0 s" rather than refusing to re-render
    runs = saved["data"].get("runs")
    if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
        raise error(ConfigError, "errors.experiment_runs_list", path=repr(str(path)))
    if not isinstance(saved.get("params"), dict) or not isinstance(saved["data"].get("tasks"), dict):
        raise error(ConfigError, "errors.experiment_lacks_params", path=repr(str(path)))
    missing = sorted({k for r in runs for k in RUN_FIELDS if k not in r}
                     | {"curve." + k for r in runs if isinstance(r.get("curve"), dict) for k in CURVE_FIELDS
                        if k not in r["curve"]}
                     | {"curve" for r in runs if not isinstance(r.get("curve"), dict)}) if runs else ["runs"]
    tasks = saved["params"].get("tasks")  # the report and figures are made per task of params
    if not isinstance(tasks, list) or not tasks:
        missing.append("params.tasks")
    else:
        missing += [f"data.tasks.{t}" for t in tasks if t not in saved["data"]["tasks"]]
        missing += [f"runs of {t}" for t in tasks if not any(r.get("task") == t for r in runs)]
    if missing:
        raise error(ConfigError, "errors.experiment_lacks", path=repr(str(path)), missing=", ".join(missing))
    for r in runs:  # JSON null back to NaN where the code expects floats
        for k, v in list(r.items()):
            if v is None and k not in ("steps_to_threshold",):
                r[k] = math.nan
        r["curve"] = {k: [math.nan if x is None else x for x in xs] for k, xs in r["curve"].items()}
    return assemble(runs, saved["params"], saved["data"]["tasks"], timing, i18n.check_lang(lang))
