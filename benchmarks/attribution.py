"""Attribution's cost targets (issue 27), ratios in one run: rollout against a weights trace, ALTI
and GlobEnc against a plain forward, value zeroing against a forward (for information).

    nice -n 19 .venv/bin/python benchmarks/attribution.py              # the full run (a few minutes)
    nice -n 19 .venv/bin/python benchmarks/attribution.py --models minilm --targets-only   # the two targets, MiniLM
    .venv/bin/python benchmarks/attribution.py --models minilm --lengths 16 --repeat 1 --no-hf   # a smoke run

Defaults: MiniLM (all-MiniLM-L6-v2, ``attnscope.load()``) at 128 and 512 tokens, SmolLM2-135M at
128 (``--models``, ``--lengths`` to change; ``--threads N`` sets torch's threads, default torch's).
The text of each point is prose from the built-in corpus (``builtin:python-docs``) cut to the
longest prefix of whole words with at most L tokens (the printed L is its token count).

Time: every side is called once to warm up, then ``--repeat`` rounds (≥ 5 for the targets); in a
round each side of a group runs once, back to back, the first one rotating (benchmarks/timing.py);
a ratio is the median over rounds of the two sides' times in the same round, printed for the wall
clock and for the process's CPU time (all threads; it moves less with a shared machine's load), the
wall clock's with a distribution-free 95 % interval of that median (``timing.median_interval``).
A target is *met* when the interval lies under it, *at the line* when only the median does. Groups:

* rollout vs ``weights trace``: ``model.trace(text, names=[every layer's attn.weights])`` — the
  pass that gives the weights rollout reads (rollout averages them over the heads in a hook as the
  pass runs, keeping nothing); target rollout / weights trace ≤ 1.1;
* ``forward`` (``model.run(text)``: tokenizer and attnscope's forward, hidden states) vs ALTI and
  GlobEnc (``model.attribute(text, "alti"|"globenc")``); target alti / forward ≤ 3.0; with
  transformers installed, its SDPA forward of the same ids is printed beside (``--no-hf``: not);
* value zeroing vs forward, ``--vz-repeat`` rounds, at most ``--vz-max-tokens`` tokens (it runs
  one pass per zeroed token and layer: minutes at 512).

Memory (``--no-memory``: skipped): each side in a fresh process (this file, ``--child``): the model
loaded, one warm-up call on an 8-word text (imports, lazy set-up), then the peak resident set of
one call at L above the resident set just before it (the kernel's high-water mark reset through
``/proc/self/clear_refs``; where that is refused, ``ru_maxrss``, which then may include the load).
The header gives the thread wait policy, the CPUs, torch's threads and the load average: on a
shared machine the wall clock moves with it, the ratios less.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Callable, Optional

import bench_env  # first: sets the thread wait policy before torch starts
import torch
from timing import median_interval, per_round, ratio  # benchmarks/timing.py (its rounds, with CPU time: cpu_rounds)

MODELS = {"minilm": None, "smollm2-135m": "smollm2-135m"}  # the name given to attnscope.load
DEFAULT_LENGTHS = {"minilm": [128, 512], "smollm2-135m": [128]}
SIDES = ("weights trace", "rollout", "forward", "alti", "globenc", "value_zeroing")
TARGETS = {("rollout", "weights trace"): 1.1, ("alti", "forward"): 3.0}


def load(name: str):
    import attnscope

    return attnscope.load(MODELS[name])


def text_of(model, n_tokens: int) -> str:
    """The longest prefix of whole words of the built-in corpus with at most ``n_tokens`` tokens
    (``n_tokens`` up to the model's positions: MiniLM's 512 too)."""
    from attnscope.analysis import python_docs_paragraphs
    from attnscope.errors import InputError

    words = " ".join(p for _, p in python_docs_paragraphs()).split()
    lo, hi = 1, min(len(words), 4 * n_tokens)  # a word is at least one token
    limit = min(n_tokens, model.tokenizer.max_length)

    def fits(k: int) -> bool:  # the first k words in at most n_tokens tokens (encode refuses a longer text)
        try:
            model.encode(" ".join(words[:k]), max_length=limit)
        except InputError:
            return False
        return True
    while lo < hi:  # the largest k that fits (a longer prefix never has fewer tokens)
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return " ".join(words[:lo])


def side_calls(model, text: str) -> dict[str, Callable[[], object]]:
    """Each side as a call of no arguments (``model.attribute`` and ``model.trace`` run without
    gradients themselves; the forward gets ``torch.no_grad`` as they do)."""
    names = [f"layers.{i}.attn.weights" for i in range(model.config.n_layers)]

    def forward():
        with torch.no_grad():
            return model.run(text)
    return {
        "weights trace": lambda: model.trace(text, names=names),
        "rollout": lambda: model.attribute(text, "rollout"),
        "forward": forward,
        "alti": lambda: model.attribute(text, "alti"),
        "globenc": lambda: model.attribute(text, "globenc"),
        "value_zeroing": lambda: model.attribute(text, "value_zeroing"),
    }


def hf_forward(name: str, model, text: str) -> Optional[Callable[[], object]]:
    """transformers' SDPA forward of the same ids (the same weights: the packaged folder or GGUF
    file), or None when transformers is not installed."""
    try:
        import transformers
    except ImportError:
        return None
    from attnscope.models.loader import default_model_path
    from attnscope.models.packages import package_model_path

    transformers.logging.set_verbosity_error()
    package = MODELS[name]
    if package is None:
        hf = transformers.AutoModel.from_pretrained(str(default_model_path()), attn_implementation="sdpa").eval()
    else:
        path = package_model_path(package)
        hf = transformers.AutoModel.from_pretrained(str(path.parent), gguf_file=path.name,
                                                    attn_implementation="sdpa").eval()
    batch = model.encode(text)

    def call():
        with torch.no_grad():
            return hf(input_ids=batch.input_ids, attention_mask=batch.attention_mask)
    return call


# ---- memory: one side in a fresh process ------------------------------------------------------

def status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def child(side: str, name: str, n_tokens: int) -> int:
    """Print one JSON line: the peak resident set of one call of ``side`` above the resident set
    before it, bytes, and how it was measured."""
    import resource

    model = load(name)
    text = text_of(model, n_tokens)
    side_calls(model, " ".join(text.split()[:8]))[side]()  # warm-up: imports and lazy set-up
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current resident set
        how = "VmHWM"
    except OSError:
        how = "ru_maxrss"
    base = status_kib("VmRSS")
    side_calls(model, text)[side]()
    peak = status_kib("VmHWM") if how == "VmHWM" else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"peak": (peak - base) * 1024, "how": how}))
    return 0


def peak_of(side: str, name: str, n_tokens: int, threads: Optional[int]) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", side, name, str(n_tokens)]
    if threads:
        cmd += ["--threads", str(threads)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ))
    if out.returncode != 0:
        return {"error": " | ".join((out.stderr or out.stdout).strip().splitlines()[-3:])}
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---- one point ----------------------------------------------------------------------------------

def cpu_rounds(calls: dict[str, Callable[[], object]], n: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """``timing.rounds`` (each call warmed up once, then ``n`` rounds, the first call rotating) with
    the process's CPU seconds of each call beside its wall seconds: on a shared machine the CPU time
    moves less with the other processes (it still counts cache misses they cause, and all threads)."""
    names = list(calls)
    for fn in calls.values():
        fn()
    wall: dict[str, list[float]] = {k: [] for k in names}
    cpu: dict[str, list[float]] = {k: [] for k in names}
    for r in range(n):
        for k in names[r % len(names):] + names[:r % len(names)]:
            c0, t0 = time.process_time(), time.perf_counter()
            calls[k]()
            wall[k].append(time.perf_counter() - t0)
            cpu[k].append(time.process_time() - c0)
    return wall, cpu


def point(name: str, model, n_tokens: int, args) -> dict:
    text = text_of(model, n_tokens)
    L = int(model.encode(text).input_ids.shape[1])
    calls = side_calls(model, text)
    res: dict = {"model": name, "tokens": L, "times": {}, "ratios": {}, "cpu": {}, "cpu_ratios": {},
                 "intervals": {}, "cpu_intervals": {}, "load": os.getloadavg()[0]}

    def group(sides: dict[str, Callable[[], object]], n: int, against: str) -> None:
        wall, cpu = cpu_rounds(sides, n)
        for s in sides:
            res["times"][s] = statistics.median(wall[s])
            res["cpu"][s] = statistics.median(cpu[s])
            if s != against:
                res["ratios"][f"{s} / {against}"] = ratio(wall, s, against)
                res["cpu_ratios"][f"{s} / {against}"] = ratio(cpu, s, against)
                res["intervals"][f"{s} / {against}"] = median_interval(per_round(wall, s, against))
                res["cpu_intervals"][f"{s} / {against}"] = median_interval(per_round(cpu, s, against))

    group({"weights trace": calls["weights trace"], "rollout": calls["rollout"]}, args.repeat, "weights trace")
    block = {"forward": calls["forward"], "alti": calls["alti"], "globenc": calls["globenc"]}
    hf = None if args.no_hf else hf_forward(name, model, text)
    if hf is not None:
        block["transformers sdpa"] = hf
    group(block, args.repeat, "forward")
    if L <= args.vz_max_tokens:
        group({"forward": calls["forward"], "value_zeroing": calls["value_zeroing"]}, args.vz_repeat, "forward")
    if not args.no_memory:
        res["peak"] = {s: peak_of(s, name, n_tokens, args.threads) for s in SIDES
                       if s != "value_zeroing" or L <= args.vz_max_tokens}
    return res


def judged(median: float, high: float, target: float) -> str:
    """'met' when the median's interval is under the target, 'at the line' when only the median is."""
    return "met" if high <= target else ("at the line (median met, interval not)" if median <= target else "NOT met")


def show(res: dict) -> None:
    print(f"\n{res['model']}, {res['tokens']} tokens (load average at the start {res['load']:.2f})")
    print(f"  {'side':20s} {'median s':>10s} {'CPU s':>8s} {'peak MiB':>9s}")
    for s, t in res["times"].items():
        p = res.get("peak", {}).get(s)
        mem = "" if p is None else ("error" if "error" in p else f"{p['peak'] / 2**20:9.1f}")
        print(f"  {s:20s} {t:10.4f} {res['cpu'][s]:8.4f} {mem:>9s}")
    for key, r in res["ratios"].items():
        a, b = key.split(" / ")
        target = TARGETS.get((a, b))
        rc = res["cpu_ratios"][key]
        lo, hi, _ = res["intervals"][key]
        verdict = "" if target is None else (f"   target ≤ {target}: wall {judged(r, hi, target)}, "
                                             f"CPU {judged(rc, res['cpu_intervals'][key][1], target)}")
        print(f"  {key:36s} time ratio {r:7.3f} [{lo:.3f}, {hi:.3f}]  CPU-time ratio {rc:7.3f}{verdict}")
    peaks = res.get("peak", {})
    for a, b in TARGETS:
        if all(s in peaks and "error" not in peaks[s] for s in (a, b)):
            pa, pb = peaks[a]["peak"], peaks[b]["peak"]
            shown = f"{pa / pb:7.3f}" if pb >= 2**20 else f"n/a ({b} grew by {pb / 2**20:.2f} MiB: below what pages measure)"
            print(f"  {a + ' / ' + b:36s} peak-memory ratio {shown}")
    for s, p in peaks.items():
        if "error" in p:
            print(f"  memory of {s}: {p['error']}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    ap.add_argument("--lengths", type=int, nargs="+", help="token counts for every model "
                    "(default: 128 and 512 for MiniLM, 128 for SmolLM2)")
    ap.add_argument("--repeat", type=int, default=7, help="timed rounds per group (≥ 5 for the targets; ≥ 9 "
                    "for an interval narrower than the lowest-to-highest round)")
    ap.add_argument("--vz-repeat", type=int, default=3, help="timed rounds of value zeroing")
    ap.add_argument("--vz-max-tokens", type=int, default=128, help="value zeroing only up to this length")
    ap.add_argument("--threads", type=int, help="torch.set_num_threads (default: torch's own)")
    ap.add_argument("--no-memory", action="store_true", help="skip the peak-memory processes")
    ap.add_argument("--no-hf", action="store_true", help="skip transformers' SDPA forward")
    ap.add_argument("--targets-only", action="store_true", help="only the two timed groups the targets "
                    "need (rollout vs weights trace, forward vs ALTI and GlobEnc): no memory, no transformers, "
                    "no value zeroing — MiniLM at 128 and 512 in ~35 s here")
    ap.add_argument("--json", help="also write the results to this JSON file")
    ap.add_argument("--child", nargs=3, metavar=("SIDE", "MODEL", "TOKENS"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.targets_only:
        args.no_memory, args.no_hf, args.vz_max_tokens = True, True, 0
    if args.child:
        return child(args.child[0], args.child[1], int(args.child[2]))
    print(bench_env.describe())
    results = []
    for name in args.models:
        t0 = time.perf_counter()
        model = load(name)
        print(f"{name}: loaded in {time.perf_counter() - t0:.1f} s; {model.config.n_layers} layers, "
              f"{model.config.n_heads} heads", flush=True)
        for n in args.lengths or DEFAULT_LENGTHS[name]:
            res = point(name, model, n, args)
            show(res)
            results.append(res)
        del model
    print(f"\nratios: median over rounds of the two sides' times in one round, in brackets a 95 % interval of "
          f"that median (order statistics: with 7 rounds or fewer, the lowest and highest round); a target "
          f"is met when the interval is under it; targets (issue 27): "
          f"rollout / weights trace ≤ {TARGETS[('rollout', 'weights trace')]}, alti / forward ≤ "
          f"{TARGETS[('alti', 'forward')]}. {bench_env.describe()} at the end.")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"env": bench_env.describe(), "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
