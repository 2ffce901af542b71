"""Time and peak memory of a full trace against transformers, per sequence length, each point in a fresh process.

    python benchmarks/scaling.py [--model smollm2-135m minilm] [--lengths 512 2048 4096] [--repeat 9 3 1] [--rounds 7 3 3]

With no ``--model`` it runs SmolLM2-135M at 512, 2,048 and 4,096 tokens and MiniLM at 128 and 512 —
every point of issue 26's time and memory targets — in one run, and prints whether each model met them.

For every length L, ``--rounds`` rounds; in each round every side runs in a new Python process
(the sides' order rotates from round to round) that loads the model, builds one text of exactly
L tokens, runs the call once (its peak resident memory above the memory after loading and encoding
is that round's *peak*: the high-water mark of that first call), then ``--repeat`` more times (their
median is that round's time). A point's time and peak are the medians over its rounds; its *time
ratio* is the median over rounds of attnscope's time over eager's in the same round, so a drift of
the machine's speed within minutes lands on both sides of a ratio rather than on one. Sides:

* ``attnscope trace``: ``model.trace(ids)`` — every named intermediate of the pass;
* ``eager + attn + hidden``: transformers eager attention with ``output_attentions=True`` and
  ``output_hidden_states=True`` (what a transformers user keeps to see the same pass);
* ``sdpa``: transformers with SDPA, the plain forward (a floor: it keeps nothing).

A fresh process per point keeps one point's heap from shaping the next one's faults and peak.
The ratios are attnscope / eager (memory: of the median peaks); the fitted exponent is the slope of log(time) and log(peak) over
log(L) by least squares (2 would be the L×L tensors dominating). The printed header gives the
thread wait policy (both sides: the same environment, inherited), the CPUs and the load.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics

import bench_env  # first: sets the thread wait policy before torch starts

_POINT = r"""
import json, os, statistics, sys, time
import torch
side, model_name, L, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
torch.manual_seed(0)

def rss(key="VmRSS:"):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) * 1024

import attnscope
from attnscope.models.loader import default_model_path
from attnscope.models.packages import package_model_path
if side == "attnscope":
    model = attnscope.load(None if model_name == "minilm" else model_name)
    vocab = model.config.vocab_size
else:
    import transformers
    transformers.logging.set_verbosity_error()
    impl = "eager" if side == "eager" else "sdpa"
    if model_name == "minilm":
        model = transformers.AutoModel.from_pretrained(str(default_model_path()), attn_implementation=impl).eval()
    else:
        path = package_model_path(model_name)
        model = transformers.AutoModel.from_pretrained(str(path.parent), gguf_file=path.name,
                                                       attn_implementation=impl).eval()
    vocab = model.config.vocab_size
ids = torch.randint(1000, min(vocab, 20000), (1, L))          # (1, L) ordinary tokens, no specials
mask = torch.ones_like(ids)
if side == "attnscope":
    from attnscope.tokenizer import Batch
    batch = Batch(ids, mask, torch.zeros_like(ids), [[str(i) for i in ids[0].tolist()]], ["(random ids)"])

def call():
    if side == "attnscope":
        return model.trace(batch)  # every named intermediate
    with torch.no_grad():
        if side == "eager":
            return model(input_ids=ids, attention_mask=mask, output_attentions=True, output_hidden_states=True)
        return model(input_ids=ids, attention_mask=mask)

# The call's own high-water mark: VmHWM reset here (loading peaks above what it leaves resident,
# and ru_maxrss would report that peak, not the call's).
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
base = rss()
t0 = time.perf_counter()
out = call()
first = time.perf_counter() - t0
peak = rss("VmHWM:") - base
del out
times = []
for _ in range(repeat):
    t0 = time.perf_counter()
    out = call()
    times.append(time.perf_counter() - t0)
    del out
print(json.dumps({"seconds": statistics.median(times), "first": first, "peak": peak}))
"""

SIDES = ("attnscope", "eager", "sdpa")
LABELS = {"attnscope": "attnscope trace", "eager": "eager + attn + hidden", "sdpa": "sdpa forward"}


def point(side: str, model: str, L: int, repeat: int) -> dict:
    """One fresh process: {"seconds", "first", "peak"} (s, s, bytes above the loaded model)."""
    return bench_env.fresh_process(_POINT, side, model, str(L), str(repeat))


def rounds_of(model: str, L: int, repeat: int, rounds: int) -> dict[str, dict]:
    """Every side at one length, ``rounds`` times, the sides' order rotated each round; per side the
    medians over the rounds ({"seconds", "first", "peak", "rounds": [...]}), and under ``"ratio"``
    the median over rounds of attnscope's time / eager's in the same round (None when one failed)."""
    per: dict[str, list[dict]] = {s: [] for s in SIDES}
    paired: list[float] = []
    for r in range(rounds):
        order = SIDES[r % len(SIDES):] + SIDES[:r % len(SIDES)]
        got = {s: point(s, model, L, repeat) for s in order}
        for s in SIDES:
            per[s].append(got[s])
            shown = got[s].get("error") or f"{got[s]['seconds']:.3f} s, peak {got[s]['peak'] / 2**20:.0f} MiB"
            print(f"  L={L:5d} round {r + 1} {LABELS[s]:24s} {shown}  (load {os.getloadavg()[0]:.2f})", flush=True)
        if "error" not in got["attnscope"] and "error" not in got["eager"]:
            paired.append(got["attnscope"]["seconds"] / got["eager"]["seconds"])
    out: dict[str, dict] = {}
    for s in SIDES:
        ok = [x for x in per[s] if "error" not in x]
        out[s] = ({k: statistics.median(x[k] for x in ok) for k in ("seconds", "first", "peak")} if ok
                  else {"error": per[s][-1]["error"]})
        out[s]["rounds"] = per[s]
    out["ratio"] = {"time": statistics.median(paired) if paired else None, "paired": paired}
    return out


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log y over log x (the exponent of y ∝ x^k)."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    den = sum((a - mx) ** 2 for a in lx)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / den if den else float("nan")


def draw(model: str, lengths: list[int], results: dict, path: str) -> None:
    """Time (s) and peak memory (MiB) per L for each side, log-log, two panels, into ``path``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    for s, style in zip(SIDES, ("o-", "s--", "^:")):
        good = [L for L in lengths if "error" not in results[s][L]]
        if good:
            ax_t.plot(good, [results[s][L]["seconds"] for L in good], style, label=LABELS[s])
            ax_m.plot(good, [results[s][L]["peak"] / 2**20 for L in good], style, label=LABELS[s])
    for ax, what in ((ax_t, "time of one call (s)"), (ax_m, "peak memory above the loaded model (MiB)")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("tokens L")
        ax.set_ylabel(what)
        ax.set_xticks(lengths, [str(L) for L in lengths])
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.suptitle(f"{model}: a full trace against transformers, one fresh process per point")
    fig.savefig(path, dpi=110)
    plt.close(fig)


# Per model with its default lengths: (lengths, calls per process, rounds). MiniLM's calls are short, so
# more of them keep one process's median steady; a decoder's 512-token point is the cheapest and the
# noisiest (one side's median moved 1.0-2.7 s between fresh processes while in one process trace and
# eager stayed within 1.0-1.2 s), so it gets more rounds.
DEFAULTS = {"minilm": ([128, 512], [30, 20], [5, 5])}
DECODER_DEFAULTS = ([512, 2048, 4096], [9, 3, 1], [7, 3, 3])
TIME_TARGET, MEMORY_TARGET = 1.1, 1.2  # issue 26


def report(model: str, lengths: list[int], rounds: dict[int, int], results: dict, time_ratio: dict) -> bool:
    """Print one model's table and exponents; True when every point meets both targets."""
    print(f"\n{model}: time (s) and peak memory above the loaded model (MiB), medians over "
          f"{'/'.join(str(rounds[L]) for L in lengths)} rounds (per L) of one fresh process per side; "
          "time ratio = median of the rounds' ratios")
    print(f"{'L':>6s} " + " ".join(f"{LABELS[s] + ' s':>26s} {'MiB':>7s}" for s in SIDES)
          + f" {'time ratio':>11s} {'memory ratio':>13s}")
    met = True
    for L in lengths:
        cells = []
        ok = all("error" not in results[s][L] for s in SIDES) and time_ratio[L]["time"] is not None
        for s in SIDES:
            r = results[s][L]
            cells.append(f"{'error':>26s} {'':>7s}" if "error" in r else f"{r['seconds']:26.3f} {r['peak'] / 2**20:7.0f}")
        ratios = ""
        if ok:
            memory = results["attnscope"][L]["peak"] / max(results["eager"][L]["peak"], 1)
            ratios = f" {time_ratio[L]['time']:11.3f} {memory:13.3f}"
            met = met and time_ratio[L]["time"] <= TIME_TARGET and memory <= MEMORY_TARGET
        met = met and ok
        print(f"{L:6d} " + " ".join(cells) + ratios)
    if len(lengths) > 1:
        print("\nfitted exponent (time ∝ L^k, peak ∝ L^k):")
        for s in SIDES:
            good = [L for L in lengths if "error" not in results[s][L]]
            if len(good) > 1:
                print(f"  {LABELS[s]:24s} time k = {slope(good, [results[s][L]['seconds'] for L in good]):.2f}, "
                      f"peak k = {slope(good, [max(results[s][L]['peak'], 1) for L in good]):.2f}")
    return met


def per_model_path(path: str, model: str, several: bool) -> str:
    """``path`` itself for one model; for several, the model's name before the suffix."""
    if not several:
        return path
    stem, dot, suffix = path.rpartition(".")
    return f"{stem}-{model}.{suffix}" if dot else f"{path}-{model}"


def main(argv=None) -> int:
    print(bench_env.describe())
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", nargs="+", default=["smollm2-135m", "minilm"],
                    help="one or more of smollm2-135m, gemma-3-270m, minilm (default: smollm2-135m minilm, "
                         "issue 26's points in one run)")
    ap.add_argument("--lengths", type=int, nargs="+", default=None,
                    help="token counts, one model only (default: 512 2048 4096 for decoders, 128 512 for MiniLM)")
    ap.add_argument("--repeat", type=int, nargs="+", default=None,
                    help="timed calls per process after the first: one number for every length, or one per "
                         "length (default: 9 3 1 for decoders' default lengths, 30 20 for MiniLM's, else 3)")
    ap.add_argument("--rounds", type=int, nargs="+", default=None,
                    help="rounds per length, one number or one per length; each runs every side in a fresh "
                         "process, the order rotated (default: 7 3 3 for decoders' default lengths, 5 5 for "
                         "MiniLM's, else 3)")
    ap.add_argument("--json", help="also write the points to this JSON file")
    ap.add_argument("--plot", help="also draw time and peak memory per L (log-log) into this PNG/SVG "
                                   "(with several models, one file each: the model's name before the suffix)")
    args = ap.parse_args(argv)
    if args.lengths and len(args.model) > 1:
        ap.error("--lengths applies to one model; give one --model")
    several = len(args.model) > 1
    everything: dict[str, dict] = {}
    verdicts: dict[str, bool] = {}
    for model in args.model:
        default_lengths, default_repeat, default_rounds = DEFAULTS.get(model, DECODER_DEFAULTS)
        lengths = args.lengths or default_lengths
        per_length: dict[str, dict[int, int]] = {}
        for name, given, default in (("--repeat", args.repeat, default_repeat), ("--rounds", args.rounds, default_rounds)):
            values = given or (default if not args.lengths else [3])
            if len(values) not in (1, len(lengths)):
                ap.error(f"{name} takes one number or one per length ({len(lengths)}), not {len(values)}")
            per_length[name] = dict(zip(lengths, values * len(lengths) if len(values) == 1 else values))
        repeats, rounds_at = per_length["--repeat"], per_length["--rounds"]
        results: dict[str, dict[int, dict]] = {s: {} for s in SIDES}
        time_ratio: dict[int, dict] = {}
        for L in lengths:
            point_rounds = rounds_of(model, L, repeats[L], rounds_at[L])
            time_ratio[L] = point_rounds.pop("ratio")
            for s in SIDES:
                results[s][L] = point_rounds[s]
        verdicts[model] = report(model, lengths, rounds_at, results, time_ratio)
        if args.plot:
            draw(model, lengths, results, per_model_path(args.plot, model, several))
        everything[model] = {"rounds": rounds_at, "repeat": repeats,
                             "time_ratio": {str(L): v for L, v in time_ratio.items()},
                             "points": {s: {str(L): r for L, r in v.items()} for s, v in results.items()}}
    print(f"\nratios: attnscope full trace / transformers eager with attentions and hidden states "
          f"(issue 26's targets: time ≤ {TIME_TARGET}, memory ≤ {MEMORY_TARGET})")
    print("targets met at every point of this run: "
          + ", ".join(f"{m} {'yes' if ok else 'NO'}" for m, ok in verdicts.items())
          + f"; load average at the end {os.getloadavg()[0]:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"env": bench_env.describe(), "models": everything}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
