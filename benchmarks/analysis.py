"""Corpus-analysis throughput against a plain ``transformers`` forward pass (SDPA), same batches.

Model: the default all-MiniLM-L6-v2. Batches: 32 texts × 128 tokens cut from the built-in
English corpus (``builtin:python-docs``: CPython's own Language Reference prose), so no padding.
Runs, all in this process, interleaved round by round so that machine noise hits them alike:

  reference   transformers BertModel (attn_implementation="sdpa"), forward only
  plain       attnscope's model forward (its fused SDPA kernel)
  explicit    model.trace with a no-op hook on every layer's weights (the weights materialised)
  analysis    what ``attnscope analyze`` runs per batch (BatchAnalyzer): model.trace with a hook on
              every layer's weights, whose statistics a background thread (torch single-threaded)
              reduces while the model computes the next layers
  importance  head ablation (every head of every layer, H·B rows per layer) — reported per text,
              not part of the ratio: it does n_layers × n_heads forward passes by design

Prints one table: median seconds per batch, texts/s, tokens/s, and the ratio to the reference
(≥ 0.8 is the target for "analysis"). Usage: ``python benchmarks/analysis.py [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402


def corpus_batches(model, n_batches: int, batch_size: int = 32, length: int = 128):
    """``n_batches`` (B, length) id tensors: consecutive 126-token windows of the corpus + [CLS]/[SEP]."""
    from attnscope.analysis import python_docs_paragraphs

    tok = model.tokenizer.backend
    text = " ".join(p for _, p in python_docs_paragraphs())
    body = tok.encode(text, add_special_tokens=False).ids
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    n = length - 2
    need = n_batches * batch_size
    if len(body) < need * n:
        raise SystemExit(f"corpus too small: {len(body)} tokens for {need} windows of {n}")
    rows = [[cls_id] + body[i * n:(i + 1) * n] + [sep_id] for i in range(need)]
    ids = torch.tensor(rows, dtype=torch.long).view(n_batches, batch_size, length)
    return list(ids)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="timed rounds (after one warm-up)")
    ap.add_argument("--batches", type=int, default=2, help="batches per round and run")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--importance-texts", type=int, default=8)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    import transformers
    from transformers import AutoModel

    import attnscope
    from attnscope.analysis.batching import TokenBatch
    from attnscope.analysis.importance import ablation_sums, as_model_batch
    from attnscope.analysis.stats import StatOptions
    from attnscope.models.loader import default_model_path

    transformers.logging.set_verbosity_error()
    model = attnscope.load().eval()
    hf = AutoModel.from_pretrained(default_model_path(), attn_implementation="sdpa").eval()
    batches = corpus_batches(model, args.batches)
    B, L = batches[0].shape
    am = torch.ones(B, L, dtype=torch.long)
    kinds = {"cls": torch.zeros(B, L, dtype=torch.bool), "sep": torch.zeros(B, L, dtype=torch.bool)}
    kinds["cls"][:, 0] = True
    kinds["sep"][:, -1] = True
    punct_table = None
    opt = StatOptions()

    def tb_of(ids):
        from attnscope.analysis.batching import TextEncoder
        nonlocal punct_table
        if punct_table is None:
            punct_table = TextEncoder(model.tokenizer, L).punct_table
        k = dict(kinds, punct=punct_table[ids], special=kinds["cls"] | kinds["sep"])
        return TokenBatch(ids, am, k, [[]] * B, list(range(B)))

    tbs = [tb_of(ids) for ids in batches]

    def reference(i):
        hf(input_ids=batches[i], attention_mask=am)

    def plain(i):
        model(batches[i], am)

    def explicit(i):
        model.trace(as_model_batch(tbs[i], "cpu"), names=[], hooks={"layers.*.attn.weights": lambda w, n: None})

    from attnscope.analysis.accumulate import StatsAccumulator
    from attnscope.analysis.run import NAMES, BatchAnalyzer
    acc = StatsAccumulator(model.config.n_layers, model.config.n_heads, NAMES)
    analyzer = BatchAnalyzer(model, acc, opt)  # exactly what `attnscope analyze` runs per batch

    def analysis(i):
        analyzer(tbs[i])

    runs = {"reference": reference, "plain": plain, "explicit": explicit, "analysis": analysis}
    times = {k: [] for k in runs}
    with torch.no_grad():
        for r in range(args.rounds + 1):
            for name, fn in runs.items():
                t0 = time.perf_counter()
                for i in range(len(batches)):
                    fn(i)
                dt = (time.perf_counter() - t0) / len(batches)
                if r > 0:  # round 0 warms up
                    times[name].append(dt)
        imp_tb = TokenBatch(batches[0][:args.importance_texts], am[:args.importance_texts],
                            {}, [[]] * args.importance_texts, list(range(args.importance_texts)))
        t0 = time.perf_counter()
        ablation_sums(model, imp_tb)
        imp_s_per_text = (time.perf_counter() - t0) / args.importance_texts

    ref = statistics.median(times["reference"])
    print(f"all-MiniLM-L6-v2, batches of {B} texts × {L} tokens, {args.batches} batches × {args.rounds} rounds, "
          f"torch {torch.__version__} ({torch.get_num_threads()} threads), transformers {transformers.__version__}")
    print(f"{'run':<12}{'s/batch':>10}{'texts/s':>10}{'tokens/s':>11}{'vs reference':>14}")
    for name in runs:
        t = statistics.median(times[name])
        print(f"{name:<12}{t:>10.3f}{B / t:>10.1f}{B * L / t:>11.0f}{ref / t:>13.2f}×")
    print(f"{'importance':<12}{imp_s_per_text * B:>10.3f}{1 / imp_s_per_text:>10.1f}{L / imp_s_per_text:>11.0f}"
          f"{ref / (imp_s_per_text * B):>13.3f}×   (ablates all {model.config.n_layers * model.config.n_heads} heads)")
    ratio = ref / statistics.median(times["analysis"])
    print(f"analysis / reference throughput = {ratio:.2f} (target ≥ 0.8): {'OK' if ratio >= 0.8 else 'BELOW TARGET'}")


if __name__ == "__main__":
    main()
