"""How far ``analyze``'s statistics move when the model runs in bfloat16 / float16 (issue 29 item 3).

    nice -n 19 python benchmarks/half_precision_stats.py [--texts 16] [--models minilm smollm2-135m]

For each model: ``analyze`` of the first ``--texts`` paragraphs of ``builtin:python-docs`` (one text
per batch, no importance, no repeated sequences) with the model loaded in float64 (the reference),
float32, bfloat16 and float16, and bfloat16 once more with the statistics computed in the weights'
own dtype (what ``attention_sums`` did before it computed half-precision weights in float32:
``--no-before`` skips it). Beside them, transformers' eager model in bfloat16 (MiniLM from its
folder, SmolLM2 from its GGUF file) gives its attention weights for the same tokens, and those go
through the same statistics in float64: what "transformers' own bfloat16 error" is for a statistic.

Prints, per statistic, the largest |mean − float64 mean| over every head of every layer, for each
run. Exit status 0 always (a measurement, not a check: tests/analysis/test_half_precision_stats.py
checks the bound).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.models.decoders.reference

import attnscope  # noqa: E402
from attnscope.analysis import analyze, attention_sums  # noqa: E402
from attnscope.analysis import analyzer as analyzer_mod  # noqa: E402
from attnscope.analysis import stats as stats_mod  # noqa: E402
from attnscope.analysis.accumulate import StatsAccumulator  # noqa: E402
from attnscope.analysis.batching import TextEncoder, bucket  # noqa: E402
from attnscope.analysis.corpus import CorpusReader  # noqa: E402
from attnscope.analysis.decoder_heads import sink_sums  # noqa: E402
from attnscope.analysis.stats import STAT_NAMES, StatOptions, batch_context  # noqa: E402

CORPUS = "builtin:python-docs"
SETTINGS = dict(batch_size=1, importance_texts=0, induction_seqs=0, norm_texts=0, progress=False, lanes=1)


def ours(name: str, dtype: torch.dtype, n: int, *, before: bool = False) -> dict:
    model = attnscope.load(name, dtype=dtype)
    if before:  # the statistics in the weights' own dtype, as before stats_dtype existed
        saved = stats_mod.HALF, analyzer_mod.stats_dtype
        stats_mod.HALF, analyzer_mod.stats_dtype = (), (lambda dt: dt)
    try:
        return dict(analyze(CORPUS, model, max_texts=n, **SETTINGS).means)
    finally:
        if before:
            stats_mod.HALF, analyzer_mod.stats_dtype = saved


def hf_model(name: str, dtype: torch.dtype):
    import transformers
    transformers.logging.set_verbosity_error()
    if name == "minilm":
        from attnscope.models.loader import default_model_path
        return transformers.BertModel.from_pretrained(str(default_model_path()), attn_implementation="eager",
                                                      dtype=dtype).eval()
    from attnscope.models.packages import package_model_path
    from tests.models.decoders.reference import hf_gguf_model
    return hf_gguf_model(package_model_path(name)).to(dtype)


def theirs(name: str, dtype: torch.dtype, n: int) -> dict:
    """transformers' weights for the texts ``analyze`` reads, through the statistics in float64."""
    model = attnscope.load(name, tokenizer=True)
    c = model.config
    enc = TextEncoder(model.tokenizer, model.tokenizer.max_length)
    hf = hf_model(name, dtype)
    opt = StatOptions(causal=c.causal)
    acc = StatsAccumulator(c.n_layers, c.n_heads, STAT_NAMES + (("sink",) if c.causal else ()))
    texts = list(CorpusReader(CORPUS, max_texts=n))
    for items in bucket(enc.encode(texts), 1):
        tb = enc.pad(items)
        with torch.no_grad():
            out = hf(input_ids=tb.input_ids, attention_mask=tb.attention_mask, output_attentions=True)
        ctx = batch_context(tb.attention_mask, tb.kinds, opt, dtype=torch.float64)
        for layer, w in enumerate(out.attentions):
            acc.add(layer, attention_sums(w.double(), context=ctx))
            if c.causal:
                acc.add(layer, sink_sums(w.double(), ctx))
    return acc.means()


def worst(a: np.ndarray, b: np.ndarray) -> float:
    d = np.abs(np.asarray(a, float) - np.asarray(b, float))
    return float(np.nanmax(d)) if np.isfinite(d).any() else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--texts", type=int, default=16)
    ap.add_argument("--models", nargs="+", default=["minilm", "smollm2-135m"])
    ap.add_argument("--no-before", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    for name in args.models:
        t0 = time.perf_counter()
        ref = ours(name, torch.float64, args.texts)
        runs = {"float32": ours(name, torch.float32, args.texts), "bfloat16": ours(name, torch.bfloat16, args.texts),
                "float16": ours(name, torch.float16, args.texts)}
        if not args.no_before:
            runs["bf16 (stats in bf16)"] = ours(name, torch.bfloat16, args.texts, before=True)
        runs["transformers bf16"] = theirs(name, torch.bfloat16, args.texts)
        runs["transformers fp16"] = theirs(name, torch.float16, args.texts)
        stats = [s for s in STAT_NAMES + ("sink",) if s in ref and s in runs["transformers bf16"]]
        print(f"\n{name}: {args.texts} texts of {CORPUS}, max |mean - float64 mean| over layers x heads "
              f"({time.perf_counter() - t0:.0f} s)")
        cols = list(runs)
        print("| statistic | " + " | ".join(cols) + " |")
        print("|---|" + "---|" * len(cols))
        for s in stats:
            print(f"| {s} | " + " | ".join(f"{worst(runs[c][s], ref[s]):.2e}" for c in cols) + " |")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
