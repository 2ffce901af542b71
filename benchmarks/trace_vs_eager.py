"""A full trace against transformers eager in one process, paired rounds: SmolLM2-135M.

    python benchmarks/trace_vs_eager.py [--length 512] [--rounds 7]

Sides, called in turn within each round (the first one rotating; one warm-up call each before):
``model.trace(ids)`` (every name, layers kept as replays: attnscope.trace.replay), transformers
eager with ``output_attentions=True`` and ``output_hidden_states=True`` on the same GGUF weights,
and ``model.trace(ids, replay=False)`` (every tensor kept). The ratio is the median over rounds of
attnscope's time over eager's in the same round (issue 26's target: ≤ 1.1). benchmarks/scaling.py
measures the same sides one fresh process per point, with their peak memory; this script is the
steadier time ratio on a shared machine. The header gives the thread wait policy and the load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import bench_env  # first: sets the thread wait policy before torch starts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--length", type=int, default=512, help="tokens of the one text (default: %(default)s)")
    ap.add_argument("--rounds", type=int, default=7, help="timed rounds (default: %(default)s)")
    args = ap.parse_args(argv)
    print(bench_env.describe())
    import torch
    import transformers

    import attnscope
    from attnscope.models.packages import package_model_path
    from attnscope.tokenizer import Batch
    transformers.logging.set_verbosity_error()
    model = attnscope.load("smollm2-135m")
    path = package_model_path("smollm2-135m")
    hf = transformers.AutoModel.from_pretrained(str(path.parent), gguf_file=path.name,
                                                attn_implementation="eager").eval()
    torch.manual_seed(0)
    L = args.length
    ids = torch.randint(1000, 20000, (1, L))  # (1, L) ordinary tokens
    mask = torch.ones_like(ids)
    batch = Batch(ids, mask, torch.zeros_like(ids), [[str(i) for i in ids[0].tolist()]], ["(random ids)"])

    def eager():
        with torch.no_grad():
            return hf(input_ids=ids, attention_mask=mask, output_attentions=True, output_hidden_states=True)

    sides = {"attnscope trace": lambda: model.trace(batch), "eager + attn + hidden": eager,
             "trace, replay=False": lambda: model.trace(batch, replay=False)}
    for call in sides.values():
        call()
    times: dict[str, list[float]] = {k: [] for k in sides}
    names = list(sides)
    for r in range(args.rounds):
        for k in names[r % len(names):] + names[:r % len(names)]:
            t0 = time.perf_counter()
            out = sides[k]()
            times[k].append(time.perf_counter() - t0)
            del out
    for k, v in times.items():
        print(f"  {k:24s} median {statistics.median(v):8.3f} s   rounds {' '.join(f'{x:.2f}' for x in v)}")
    ratio = statistics.median(a / b for a, b in zip(times["attnscope trace"], times["eager + attn + hidden"]))
    print(f"L={L}: attnscope trace / eager, median of the paired ratios {ratio:.3f} (target ≤ 1.1; "
          f"load after {os.getloadavg()[0]:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
