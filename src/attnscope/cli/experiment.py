"""``attnscope experiment NAME``: run one of the √d_k experiments and write its results.

    attnscope experiment list                       # what there is
    attnscope experiment variance --quick           # seconds
    attnscope experiment saturation --out out/sat
    attnscope experiment training --jobs 2          # the full grid (~15 min on 2 cores)
    attnscope experiment training --tasks recall --variants scaled,unscaled --d-k 64,512 --steps 300
    attnscope experiment training --from out/experiments/training   # re-render, no training

Each writes results.json (every number; the same seed gives the same file), CSV tables, PNG
figures and report.md into --out (default out/experiments/NAME).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..errors import ConfigError
from ..i18n import error, text
from . import MAX_SEED, IntList, IntRange, add_command, add_lang_option, add_overwrite_option, check_new_results, check_out_dir


def _names(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def register(sub) -> None:
    p = add_command(sub, "experiment", "run an experiment on the 1/√d_k factor (variance, saturation, training)", __doc__)
    p.add_argument("name", help="variance | saturation | training | all | list")
    p.add_argument("--quick", action="store_true", help="the small CI version (seconds to a minute)")
    p.add_argument("--seed", type=IntRange(0, MAX_SEED), default=0, help="base seed (default 0)")
    p.add_argument("--out", type=Path, default=None, help="output folder (default out/experiments/NAME)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_lang_option(p, "language of report.md and the figures' titles and axes (default: en)")
    add_overwrite_option(p)
    p.add_argument("--d-k", type=IntList(1, 65536), default=None,
                   help="comma-separated d_k values (variance/saturation default 2,4,…,1024; training 16,64,256,512)")
    g = p.add_argument_group("variance and saturation")
    g.add_argument("--samples", type=IntRange(2, 10**7), default=None, help="variance: dot products per (distribution, d_k)")
    g.add_argument("--distributions", type=_names, default=None, help="variance: normal,uniform,rademacher")
    g.add_argument("--rows", type=IntRange(1, 10**6), default=None, help="saturation: query rows per d_k")
    g.add_argument("--length", type=IntRange(1, 4096), default=None, help="saturation: keys per row (default 16)")
    t = p.add_argument_group("training")
    t.add_argument("--tasks", type=_names, default=None, help="recall,lm")
    t.add_argument("--variants", type=_names, default=None, help="scaled,unscaled,inv_d,cosine,qknorm,t5")
    t.add_argument("--seeds", type=IntRange(1, 100), default=None, help="seeds per cell (default: recall 3, lm 2)")
    t.add_argument("--steps", type=IntRange(1, 10**6), default=None, help="training steps per run")
    t.add_argument("--batch", type=IntRange(1, 4096), default=None, help="batch size")
    t.add_argument("--d-model", type=IntRange(1, 4096), default=None, help="model width (default 512; quick 64)")
    t.add_argument("--layers", type=IntRange(1, 48), default=None, help="encoder layers (default 1)")
    t.add_argument("--lr", type=float, default=None, help="peak learning rate (default 1e-3)")
    t.add_argument("--eval-every", type=IntRange(1, 10**6), default=None, help="steps between evaluations (default 10)")
    t.add_argument("--init", default=None, help="lecun (default) | small (std 0.02)")
    t.add_argument("--from", dest="from_dir", type=Path, default=None, metavar="DIR",
                   help="re-make tables, figures and report from DIR/results.json without training "
                        "(written to --out, default DIR itself)")
    t.add_argument("--jobs", type=IntRange(1, 1024), default=None,
                   help="worker processes (default: 1 with --quick, else min(2, CPUs))")


# CLI option -> (library keyword, experiments that take it); training's options keep their names but --layers
_OPTIONS = {
    "d_k": ("d_ks", ("variance", "saturation", "training")),
    "samples": ("samples", ("variance",)),
    "distributions": ("distributions", ("variance",)),
    "rows": ("rows", ("saturation",)),
    "length": ("length", ("saturation",)),
    **{cli: ("n_layers" if cli == "layers" else cli, ("training",))
       for cli in ("tasks", "variants", "seeds", "steps", "batch", "d_model", "layers", "lr", "eval_every", "init", "jobs")},
}


#: The options ``training --from DIR`` reads (the others were read when DIR's runs were trained).
FROM_READS = ("--from", "--out", "--lang", "--overwrite", "--no-progress")

#: The experiments whose report and figures come in every language of attnscope.i18n.
LANG_EXPERIMENTS = ("variance", "saturation", "training")


def options_for(name: str, args) -> dict:
    """The library keywords of experiment ``name`` from the parsed CLI options; refuse foreign ones."""
    opts = {}
    for cli, (kw, owners) in _OPTIONS.items():
        value = getattr(args, cli)
        if value is None:
            continue
        if name not in owners:
            if args.name == "all":
                continue
            flag = "--" + cli.replace("_", "-")
            raise error(ConfigError, "errors.cli_experiment_option", flag=flag, name=repr(name), owners=", ".join(owners))
        opts[kw] = value
    if args.lang != "en":
        if name not in LANG_EXPERIMENTS:
            raise error(ConfigError, "errors.cli_experiment_lang", language=args.lang, name=repr(name),
                        names=", ".join(LANG_EXPERIMENTS))
        opts["lang"] = args.lang
    if name == "training" and "jobs" not in opts:
        opts["jobs"] = 1 if args.quick else max(1, min(2, os.cpu_count() or 1))
    return opts


def run(args) -> int:
    from ..experiments.runstore import sigterm_as_interrupt

    with sigterm_as_interrupt():  # a kill stops the command like Ctrl-C: finished runs are kept
        return _run(args)


def _run(args) -> int:
    from .. import experiments

    if args.name == "list":
        from . import given_options
        given = [f for f in given_options(args, "experiment") if f not in ("--overwrite", "--no-progress")]
        if given:  # 'list' runs nothing: the option would be dropped (the two switches of writing ones say nothing)
            raise error(ConfigError, "errors.cli_experiment_list_option", flag=given[0])
        for name, (_, desc) in experiments.EXPERIMENTS.items():
            print(f"{name:11s} {desc}")
        return 0
    names = list(experiments.EXPERIMENTS) if args.name == "all" else [args.name]
    for name in names:
        experiments.get(name)  # unknown name -> ConfigError before any work
    if args.from_dir is not None and names != ["training"]:
        raise error(ConfigError, "errors.cli_experiment_from")
    if args.from_dir is not None:  # re-rendering trains nothing: a training option would be dropped
        from . import given_options
        given = [f for f in given_options(args, "experiment") if f not in FROM_READS]
        if given:
            raise error(ConfigError, "errors.cli_experiment_from_option", flag=given[0])

    def out_of(name: str) -> Path:
        if args.out is None:
            return Path("out") / "experiments" / name
        return args.out / name if args.name == "all" else args.out

    if args.from_dir is None:  # every folder checked before the first experiment runs
        for name in names:
            check_new_results(out_of(name), ("results.json", "report.md"), args.overwrite)
    for name in names:
        opts = options_for(name, args)
        out = out_of(name)
        if args.from_dir is not None:
            from ..experiments import training

            out = args.out if args.out is not None else args.from_dir
            check_out_dir(out)
            if Path(out).resolve() != Path(args.from_dir).resolve():  # re-rendering in place is what --from asks
                check_new_results(out, ("results.json", "report.md"), args.overwrite)
            result = training.load(args.from_dir, lang=args.lang)
            files = result.write(out)
        else:
            store = None
            if name == "training":  # each finished run is kept here until the whole grid is written
                from ..experiments.runstore import RunStore

                store = RunStore(out / PARTIAL)
                opts["resume_dir"] = store.folder
            try:
                result = experiments.run(name, quick=args.quick, seed=args.seed, progress=not args.no_progress,
                                         **opts)
            except KeyboardInterrupt as e:
                return _interrupted(e, store)
            files = result.write(out)
            if store is not None:
                store.clear()
        result.close_figures()
        what = (text("experiments.cli_rerendered", args.lang, path=args.from_dir) if args.from_dir is not None
                else text("experiments.cli_seconds", args.lang, seconds=result.timing.get("total_s", 0.0)))
        print(text("experiments.cli_wrote", args.lang, name=name, what=what, n=len(files), out=out,
                   report=files["report"]))
        summary = _one_line(result, args.lang)
        if summary:
            print(summary)
    sys.stdout.flush()
    return 0


#: Sub-folder of --out where `experiment training` keeps finished runs until the grid is done.
PARTIAL = "partial-runs"


def _interrupted(e: KeyboardInterrupt, store) -> int:
    """One line saying what was kept; exit status 128 + the signal (130 Ctrl-C, 143 SIGTERM)."""
    import signal

    signum = getattr(e, "signum", signal.SIGINT)
    what = "interrupted" if signum == signal.SIGINT else f"stopped by {signal.Signals(signum).name}"
    if store is not None and store.count():
        n = store.count()
        print(f"attnscope experiment: {what}; {n} finished run{'' if n == 1 else 's'} kept in {store.folder}/: "
              "run the same command again to resume", file=sys.stderr)
    else:
        print(f"attnscope experiment: {what}", file=sys.stderr)
    return 128 + int(signum)


def _one_line(result, lang: str = "en") -> str:
    from .. import i18n

    d = result.data
    if result.name == "variance":
        return i18n.text("experiments.line_variance", lang, z=d["max_abs_z"], rel=d["max_rel_error_scaled"])
    if result.name == "saturation":
        s = d["summary"]
        return i18n.text("experiments.line_saturation", lang, d_k=s["d_k"], h_s=s["entropy_scaled"],
                         h_u=s["entropy_unscaled"], ratio=s["jacobian_ratio"])
    if result.name == "training":
        c = d["claims"]
        sentences = (c["speed_sentence"], c["stall_sentence"])
        if lang != "en":
            from ..experiments.training import claim_sentences, settings_from_params
            sentences = claim_sentences(c["speedups"], d["summary"], settings_from_params(result.params), lang)
        return "\n".join("  " + x for x in sentences if x)
    return ""
