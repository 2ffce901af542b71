"""Corpus-analysis throughput against a plain ``transformers`` forward pass (SDPA), same batches,
for all-MiniLM-L6-v2 and SmolLM2-135M; head importance against the form before the ladder.

Batches: 32 texts × 128 tokens cut from the built-in English corpus (``builtin:python-docs``:
CPython's own Language Reference prose), so no padding. Runs, all in this process, interleaved
round by round so that machine noise hits them alike:

  reference      transformers' model (attn_implementation="sdpa"), forward only: BertModel for
                 MiniLM; for SmolLM2 the LlamaModel of ``from_pretrained(folder, gguf_file=…)``,
                 the same GGUF weights attnscope loads
  plain          attnscope's model forward (its fused SDPA kernel)
  analysis       what ``attnscope analyze`` runs on the corpus (:class:`BatchAnalyzer`): every
                 layer's weights through every statistic (and the attention sink for SmolLM2),
                 batches side by side on lanes (one thread and one model replica each)
  analysis, 1    the same on one lane: one batch at a time on torch's threads
  importance     head ablation of every head of every layer on ``--importance-texts`` texts:
                 today's ladder against ``plain=True`` (a full forward pass per layer, the form
                 before it); their numbers are compared too

Times are medians over the timed rounds (after one warm-up round) of seconds per batch; ratios
are texts/s against the reference, the median over rounds of the ratio within a round (≥ 0.95
is the target for MiniLM's and SmolLM2's analysis, issue 26 item 4; importance: ≥ 1.6× faster). The
load average is printed: on a shared machine wall clocks swing with it. Beside them, the process's
CPU seconds per batch and their ratio (the work done, which load does not inflate; the wall-clock
ratio is the target's). Usage:
``python benchmarks/analysis.py [--rounds 5] [--no-smollm] [--no-importance] [--no-one-lane]``;
MiniLM's analysis ratio alone, quickly:
``python benchmarks/analysis.py --no-smollm --no-importance --no-one-lane --rounds 8``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import bench_env  # first: sets the thread wait policy before torch starts

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402


def windows(model, n_batches: int, batch_size: int = 32, length: int = 128, *, first=(), last=()):
    """``n_batches`` (B, length) id tensors: consecutive windows of the corpus between the
    tokenizer's own leading and closing special tokens (MiniLM: [CLS] … [SEP]; SmolLM2: none)."""
    from attnscope.analysis import python_docs_paragraphs

    tok = model.tokenizer.backend
    text = " ".join(p for _, p in python_docs_paragraphs())
    body = tok.encode(text, add_special_tokens=False).ids
    n = length - len(first) - len(last)
    need = n_batches * batch_size
    if len(body) < need * n:
        raise SystemExit(f"corpus too small: {len(body)} tokens for {need} windows of {n}")
    rows = [list(first) + body[i * n:(i + 1) * n] + list(last) for i in range(need)]
    return list(torch.tensor(rows, dtype=torch.long).view(n_batches, batch_size, length))


def token_batches(model, batches, n_first: int, n_last: int):
    """TokenBatches with the kinds ``attnscope analyze`` gives these windows."""
    from attnscope.analysis.batching import TextEncoder, TokenBatch

    B, L = batches[0].shape
    punct_table = TextEncoder(model.tokenizer, L).punct_table
    out = []
    for ids in batches:
        cls = torch.zeros(B, L, dtype=torch.bool)
        sep = torch.zeros(B, L, dtype=torch.bool)
        special = torch.zeros(B, L, dtype=torch.bool)
        if n_first:
            cls[:, 0] = True
            special[:, :n_first] = True
        if n_last:
            sep[:, -1] = True
            special[:, L - n_last:] = True
        kinds = {"cls": cls, "sep": sep, "special": special, "punct": punct_table[ids] & ~special}
        out.append(TokenBatch(ids, torch.ones(B, L, dtype=torch.long), kinds, [[]] * B, list(range(B))))
    return out


#: {name: [CPU seconds per batch of each timed round]} of the last :func:`interleaved` call: the
#: process's CPU time (every thread: torch's, the lanes', the caller's) while the run ran. Unlike the
#: wall clock it does not grow while another process holds a core, so on a loaded machine the
#: ratio of CPU times still compares the work (waiting threads sleep: bench_env's wait policy).
CPU: dict = {}


def interleaved(runs: dict, n_batches: int, rounds: int) -> dict:
    """{name: [seconds per batch of each timed round]}, the runs taking turns within a round
    (their CPU seconds per batch go to :data:`CPU`)."""
    times: dict = {k: [] for k in runs}
    CPU.clear()
    CPU.update({k: [] for k in runs})
    for r in range(rounds + 1):
        for name, fn in runs.items():
            c0, t0 = time.process_time(), time.perf_counter()
            fn()
            if r > 0:  # round 0 warms up
                times[name].append((time.perf_counter() - t0) / n_batches)
                CPU[name].append((time.process_time() - c0) / n_batches)
    return times


def paired(times: dict, name: str) -> float:
    """Median over rounds of the reference's time / ``name``'s time in the same round (the runs
    take turns within a round, so that load lasting longer than a round cancels)."""
    return statistics.median(r / t for r, t in zip(times["reference"], times[name]))


def table(title: str, times: dict, B: int, L: int, target: float, key: str = "analysis") -> float:
    print(title)
    print(f"  {'run':<14}{'s/batch':>9}{'texts/s':>9}{'tokens/s':>10}{'vs reference':>14}{'CPU s/batch':>13}"
          f"{'CPU vs ref':>12}   rounds (s/batch)")
    cpu = {k: v for k, v in CPU.items() if k in times}
    for name, ts in times.items():
        t = statistics.median(ts)
        c = statistics.median(cpu[name]) if cpu.get(name) else float("nan")
        print(f"  {name:<14}{t:>9.3f}{B / t:>9.1f}{B * L / t:>10.0f}{paired(times, name):>13.2f}×"
              f"{c:>13.3f}{paired(cpu, name) if cpu.get(name) else float('nan'):>11.2f}×   "
              + " ".join(f"{x:.2f}" for x in ts))
    ratio = paired(times, key)
    print(f"  {key} / reference throughput = {ratio:.2f} (target ≥ {target}): {'OK' if ratio >= target else 'BELOW TARGET'}"
          + (f"; by CPU time {paired(cpu, key):.2f} (the work, whatever the load)" if cpu.get(key) else ""))
    return ratio


def analysis_runs(model, tbs, causal: bool, one_lane: bool = True):
    from attnscope.analysis.accumulate import StatsAccumulator
    from attnscope.analysis.analyzer import BatchAnalyzer
    from attnscope.analysis.decoder_heads import DECODER_STATS
    from attnscope.analysis.run import NAMES
    from attnscope.analysis.stats import StatOptions

    opt = StatOptions(causal=causal)
    names = NAMES + (DECODER_STATS if causal else ())
    c = model.config
    lanes = BatchAnalyzer(model, StatsAccumulator(c.n_layers, c.n_heads, names), opt)  # what `analyze` runs
    one = BatchAnalyzer(model, StatsAccumulator(c.n_layers, c.n_heads, names), opt, lanes=1)

    def run(an):
        def go():
            for tb in tbs:
                an.submit(tb)
            an.flush()
        return go
    runs = {"analysis": run(lanes), "analysis, 1": run(one)}
    if not one_lane:
        del runs["analysis, 1"]
    return runs, (lanes, one)


def minilm(args) -> tuple:
    from transformers import AutoModel

    import attnscope
    from attnscope.models.loader import default_model_path

    model = attnscope.load().eval()
    hf = AutoModel.from_pretrained(default_model_path(), attn_implementation="sdpa").eval()
    tok = model.tokenizer.backend
    batches = windows(model, args.batches, first=[tok.token_to_id("[CLS]")], last=[tok.token_to_id("[SEP]")])
    tbs = token_batches(model, batches, 1, 1)
    B, L = batches[0].shape
    am = torch.ones(B, L, dtype=torch.long)
    runs = {"reference": lambda: [hf(input_ids=ids, attention_mask=am) for ids in batches],
            "plain": lambda: [model(ids, am) for ids in batches]}
    more, analyzers = analysis_runs(model, tbs, causal=False, one_lane=not args.no_one_lane)
    runs.update(more)
    with torch.no_grad():
        times = interleaved(runs, len(batches), args.rounds)
    for an in analyzers:
        an.close()
    return model, batches, times, (B, L)


def smollm(args):
    import transformers

    import attnscope
    from attnscope.analysis.decoder_heads import leading_specials
    from attnscope.models.packages import package_model_path

    model = attnscope.load("smollm2-135m").eval()
    path = package_model_path("smollm2-135m")
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                           attn_implementation="sdpa").eval()
    prefix = leading_specials(model.tokenizer)
    batches = windows(model, args.smollm_batches, first=prefix)
    tbs = token_batches(model, batches, len(prefix), 0)
    B, L = batches[0].shape
    am = torch.ones(B, L, dtype=torch.long)
    runs = {"reference": lambda: [hf.model(input_ids=ids, attention_mask=am) for ids in batches],
            "plain": lambda: [model(ids, am) for ids in batches]}
    more, analyzers = analysis_runs(model, tbs, causal=True, one_lane=not args.no_one_lane)
    runs.update(more)
    with torch.no_grad():
        times = interleaved(runs, len(batches), args.smollm_rounds)
    for an in analyzers:
        an.close()
    return times, (B, L)


def importance(model, ids, rounds: int):
    from attnscope.analysis.batching import TokenBatch
    from attnscope.analysis.importance import Ladder, ablation_sums

    n = ids.shape[0]
    tb = TokenBatch(ids, torch.ones_like(ids), {}, [[]] * n, list(range(n)))
    ladder = Ladder.for_model(model)
    got = {}

    def run(name, **kw):
        def go():
            got[name] = ablation_sums(model, tb, **kw)
        return go
    times = interleaved({"before (plain)": run("plain", plain=True), "ladder": run("ladder", ladder=ladder)}, 1, rounds)
    assert ladder.ok, "the ladder did not run"
    diff = max(float((got["plain"][l][0] - got["ladder"][l][0]).abs().max()) for l in got["plain"])
    scale = max(float(got["plain"][l][0].abs().max()) for l in got["plain"])
    return times, diff, scale


def main() -> None:
    print(bench_env.describe())
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="timed rounds for MiniLM (after one warm-up)")
    ap.add_argument("--batches", type=int, default=4, help="MiniLM batches per round and run")
    ap.add_argument("--no-smollm", action="store_true", help="skip SmolLM2-135M")
    ap.add_argument("--smollm-rounds", type=int, default=3)
    ap.add_argument("--smollm-batches", type=int, default=2)
    ap.add_argument("--importance-texts", type=int, default=8)
    ap.add_argument("--importance-rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--no-importance", action="store_true", help="skip head importance")
    ap.add_argument("--no-one-lane", action="store_true", help="skip the one-lane analysis run")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    import transformers
    transformers.logging.set_verbosity_error()
    print(f"torch {torch.__version__} ({torch.get_num_threads()} threads), transformers {transformers.__version__}, "
          f"{os.cpu_count()} CPUs; load average before: {os.getloadavg()[0]:.1f}")

    model, batches, times, (B, L) = minilm(args)
    r1 = table(f"all-MiniLM-L6-v2, batches of {B} × {L} tokens, {args.batches} batches × {args.rounds} rounds "
               f"(load {os.getloadavg()[0]:.1f})", times, B, L, 0.95)
    r2 = None
    if not args.no_smollm:
        from attnscope.models.packages import find_package
        try:
            times2, (B2, L2) = smollm(args)
            r2 = table(f"SmolLM2-135M (GGUF), batches of {B2} × {L2} tokens, {args.smollm_batches} batches × "
                       f"{args.smollm_rounds} rounds (load {os.getloadavg()[0]:.1f})", times2, B2, L2, 0.95)
        except Exception as e:  # not installed: say so, do not hide it
            if find_package("smollm2-135m") is None:
                raise
            print(f"SmolLM2-135M: skipped ({type(e).__name__}: {e})")
    if args.no_importance:
        print(f"summary: MiniLM analysis {r1:.2f}×" + ("" if r2 is None else f", SmolLM2 analysis {r2:.2f}×")
              + f" the reference's texts/s; load average after: {os.getloadavg()[0]:.1f}")
        return
    ids = batches[0][:args.importance_texts]
    t_imp, diff, scale = importance(model, ids, args.importance_rounds)
    old, new = statistics.median(t_imp["before (plain)"]), statistics.median(t_imp["ladder"])
    print(f"head importance, all-MiniLM-L6-v2, {ids.shape[0]} texts × {ids.shape[1]} tokens, all 72 heads, "
          f"{args.importance_rounds} rounds (load {os.getloadavg()[0]:.1f})")
    for name, ts in t_imp.items():
        print(f"  {name:<16}{statistics.median(ts):>8.2f} s   rounds " + " ".join(f"{x:.2f}" for x in ts))
    print(f"  ladder speed-up {old / new:.2f}× (target ≥ 1.6): {'OK' if old / new >= 1.6 else 'BELOW TARGET'}; "
          f"largest difference of the sums {diff:.1e} (largest sum {scale:.2e})")
    print(f"summary: MiniLM analysis {r1:.2f}×" + ("" if r2 is None else f", SmolLM2 analysis {r2:.2f}×")
          + f" the reference's texts/s; importance {old / new:.2f}× faster; load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
