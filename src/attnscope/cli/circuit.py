"""``attnscope circuit run``: replay a circuit experiment file (path patching, IOI, circuit metrics).

    attnscope circuit run experiment.toml -o out/
    attnscope circuit run docs/results/ioi/experiment.toml -o out/ioi --lang zh

The file (TOML) names the model, the IOI prompt set (count and seed), the path-patching sweeps
(receivers: "logits", or the q/k/v of heads written out or taken from an earlier sweep's strongest
senders) and the circuit whose faithfulness, completeness and minimality are measured with
bootstrap intervals; see attnscope.patching.experiment_file for every key. The run writes
results.json (every number; a replay of the same file writes the same file), report.md (English)
and report.zh.md (Chinese) to the folder given by -o. --lang sets the language of the printed lines.

Path patching (Wang et al. 2022): a sender head's output from the corrupted (ABC) run reaches the
receivers only, every other head frozen at the clean run; MLPs are recomputed (mlp = "recompute",
the IOI paper's convention) or frozen (mlp = "freeze").
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..i18n import text
from . import add_command, add_lang_option, add_overwrite_option, check_device, check_new_results

RESULTS = ("results.json", "report.md", "report.zh.md")


def register(sub) -> None:
    p = add_command(sub, "circuit", "path patching, IOI prompts and circuit metrics, replayed from a file", __doc__)
    p.add_argument("action", choices=("run",), help="run: run the experiment file")
    p.add_argument("file", type=Path, help="the experiment file (.toml)")
    p.add_argument("-o", "--out", type=Path, required=True, metavar="FOLDER",
                   help="folder for results.json, report.md and report.zh.md")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1 … (default: cpu)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_lang_option(p, "language of the printed lines (default: en; report.md and report.zh.md are both written)")
    add_overwrite_option(p)


def run(args) -> int:
    check_device(args.device)
    from ..patching.experiment_file import read_experiment, run_experiment
    from ..patching.report import report

    exp = read_experiment(args.file)  # before the model loads: a bad file fails at once
    check_new_results(args.out, RESULTS, args.overwrite, flag="-o")

    from ..models import load
    model = load(exp["model"], device=args.device)
    results = run_experiment(model, exp, progress=not args.no_progress and sys.stderr.isatty())
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (args.out / "report.md").write_text(report(results, "en"), encoding="utf-8")
    (args.out / "report.zh.md").write_text(report(results, "zh"), encoding="utf-8")
    c = results.get("circuit")
    if c:
        f = c["faithfulness"]
        print(text("circuit.printed", args.lang, value=f["value"], low=f["low"], high=f["high"]))
    print(text("circuit.wrote", args.lang, path=args.out))
    return 0
