"""Decoders against transformers, in one run: SmolLM2-135M (the installed GGUF package).

    python benchmarks/decoders.py [--model smollm2-135m] [--tokens 256] [--new 64] [--repeat 5]

Rows (ratio = attnscope time / transformers time, or tokens/s ratio for generation):

* forward: last hidden states of one text, attnscope (fused kernel) vs transformers SDPA;
* weights trace: every layer's attention weights, ``model.trace(names="layers.*.attn.weights")``
  vs transformers eager with ``output_attentions=True``;
* generate: greedy, ``--new`` tokens with the key/value cache, tokens per second
  (attnscope ``generate`` vs transformers ``generate(do_sample=False)``, SDPA);
* GGUF load: time and peak resident memory of ``attnscope.load`` vs transformers'
  ``from_pretrained(gguf_file=…)``, each in a fresh process (memory above the process's
  baseline after imports).

Both sides run the same weights (transformers' reading of the same file) on the same threads;
times are medians of ``--repeat`` paired rounds after a warm-up, and each ratio is the median
of the per-round ratios.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Optional

import bench_env  # first: sets the thread wait policy before torch starts

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402

TEXT = ("Attention lets every token look back at the tokens before it. A query is compared with every key, "
        "the scores are scaled and turned into weights by a softmax, and the weights mix the values. ")


def minor_faults() -> int:
    """Minor page faults of this process so far (0 where the OS does not say)."""
    try:
        import resource
    except ImportError:  # not on Windows
        return 0
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def compare(fa, fb, repeat: int, faults: Optional[list] = None) -> tuple[float, float, float, float]:
    """``(median wall a, median wall b, wall ratio a/b, CPU ratio a/b)`` over ``repeat`` rounds, each
    round running both back to back (who goes first alternates) and giving one ratio; the ratios
    are the medians of those per-round ratios (benchmarks/timing.py says why). CPU time (this
    process, all threads) is steadier than the wall clock on a loaded machine. With ``faults`` (a
    list), the median minor page faults per call of a and of b are appended to it: each fresh 4 KiB
    page costs one (~2 µs on the 2-core test machine), and how many a call takes depends on what
    the heap kept from the call before, so they explain much of the spread between rounds."""
    fa(), fb()  # warm-up
    wall: dict[int, list[float]] = {0: [], 1: []}
    cpu: dict[int, list[float]] = {0: [], 1: []}
    flt: dict[int, list[int]] = {0: [], 1: []}
    for r in range(repeat):
        for i in ((0, 1) if r % 2 == 0 else (1, 0)):
            t, c, f = time.perf_counter(), time.process_time(), minor_faults()
            (fa, fb)[i]()
            wall[i].append(time.perf_counter() - t)
            cpu[i].append(time.process_time() - c)
            flt[i].append(minor_faults() - f)
    ratio = statistics.median(a / b for a, b in zip(wall[0], wall[1]))
    cpu_ratio = statistics.median(a / b for a, b in zip(cpu[0], cpu[1]))
    if faults is not None:
        faults += [statistics.median(flt[0]), statistics.median(flt[1])]
    return statistics.median(wall[0]), statistics.median(wall[1]), ratio, cpu_ratio


_LOAD = r"""
import os, resource, sys, time, json
os.environ["HF_HUB_OFFLINE"] = os.environ["TRANSFORMERS_OFFLINE"] = "1"
import torch
which, name, path = sys.argv[1], sys.argv[2], sys.argv[3]
if which == "attnscope":
    import attnscope
else:
    import transformers
    transformers.logging.set_verbosity_error()
def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
base = rss()
t = time.perf_counter()
if which == "attnscope":
    m = attnscope.load(name)
else:
    m = transformers.AutoModelForCausalLM.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path))
    tok = transformers.AutoTokenizer.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path))
dt = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"seconds": dt, "peak": peak - base}))
"""


def load_stats(which: str, name: str, path: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _LOAD, which, name, path], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    print(bench_env.describe())
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--tokens", type=int, default=256, help="length of the forward/trace text")
    ap.add_argument("--new", type=int, default=64, help="new tokens to generate")
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--no-load", action="store_true", help="skip the load-time row (it takes a minute)")
    args = ap.parse_args()

    import transformers

    import attnscope
    from attnscope.models.packages import package_model_path

    transformers.logging.set_verbosity_error()
    path = package_model_path(args.model)
    ours = attnscope.load(args.model)
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                           attn_implementation="sdpa").eval()
    ids = ours.encode(TEXT * 40, truncate=True, max_length=args.tokens).input_ids
    print(f"{args.model}: {ours.config.n_layers} layers, {ours.config.n_heads} heads "
          f"({ours.config.kv_heads} k/v), text of {ids.shape[1]} tokens, torch threads {torch.get_num_threads()}")
    rows = []
    with torch.no_grad():
        a, b, r, rc = compare(lambda: ours(ids), lambda: hf.model(input_ids=ids), args.repeat)
        rows.append(("forward (hidden states), s", a, b, r, rc, "≤ 1.05"))

        batch = ours.encode(TEXT * 40, truncate=True, max_length=args.tokens)
        hf_eager = transformers.AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                                     attn_implementation="eager").eval()
        trace_faults: list = []
        a, b, r, rc = compare(lambda: ours.trace(batch, names="layers.*.attn.weights"),
                              functools.partial(hf_eager.model, input_ids=ids, output_attentions=True), args.repeat,
                              faults=trace_faults)
        del hf_eager
        rows.append(("weights trace (all layers), s", a, b, r, rc, "≤ 1.0"))

        prompt = "The capital of France is"
        p_ids = torch.tensor([ours.encode(prompt).ids[0]])

        def gen_ours():
            g = ours.generate(prompt, max_new_tokens=args.new, eos_token_ids=[])
            assert len(g.new_ids) == args.new

        def gen_hf():
            out = hf.generate(p_ids, attention_mask=torch.ones_like(p_ids), max_new_tokens=args.new,
                              min_new_tokens=args.new, do_sample=False, pad_token_id=0)
            assert out.shape[1] == p_ids.shape[1] + args.new

        a, b, r, rc = compare(gen_ours, gen_hf, max(1, args.repeat // 2))
        rows.append((f"generate {args.new} tokens, tokens/s", args.new / a, args.new / b, 1 / r, 1 / rc, "≥ 0.95"))

    if not args.no_load:
        mine = min((load_stats("attnscope", args.model, str(path)) for _ in range(2)), key=lambda r: r["seconds"])
        theirs = min((load_stats("transformers", args.model, str(path)) for _ in range(2)), key=lambda r: r["seconds"])
        rows.append(("GGUF load (model + tokenizer), s", mine["seconds"], theirs["seconds"],
                     mine["seconds"] / theirs["seconds"], None, "< 1"))
        rows.append(("GGUF load peak memory, MB", mine["peak"] / 2**20, theirs["peak"] / 2**20,
                     mine["peak"] / theirs["peak"], None, "< 1"))

    print(f"\n{'':34s} {'attnscope':>10s} {'transformers':>13s} {'ratio':>7s} {'CPU ratio':>10s}  target")
    for label, a, b, r, rc, target in rows:
        cpu = f"{rc:10.3f}" if rc is not None else f"{'':10s}"
        print(f"{label:34s} {a:10.4g} {b:13.4g} {r:7.3f} {cpu}  {target}")
    print(f"\nweights trace, minor page faults per call (median): attnscope {trace_faults[0]:.0f}, "
          f"transformers {trace_faults[1]:.0f} (both keep every layer's weights, "
          f"{ours.config.n_layers * ours.config.n_heads * ids.shape[1] ** 2 * 4 / 4096:.0f} pages)")
    print("\nratio: attnscope / transformers (time, memory); for tokens/s, attnscope's rate / transformers' "
          "(> 1 is faster). CPU ratio: the same with this process's CPU time, steadier on a loaded machine.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
