"""``attnscope analyze CORPUS``: what every head attends to, over a whole corpus.

Streams the corpus through the model in length-bucketed batches and reports, per layer and head:
entropy, mean attention distance, attention on [CLS], [SEP], punctuation, the token itself, the
previous and the next token, and how often the previous/next token is the most attended; a label
per head (previous, next, self, cls, sep, punct, local, broad, other); a per-layer summary that
tests "local in low layers, global in high layers"; and each head's importance by ablation.
For causal language models also the attention sink (weight on the first token) and, on repeated
random token sequences, previous-token, duplicate-token and induction scores, with the heads that
pass their thresholds (--threshold induction=0.4 …).

Encoder–decoder models (T5, BART) read a parallel corpus, one "source<TAB>target" pair per line,
and report per layer and head the encoder's self-attention, the decoder's causal self-attention and
the cross-attention: its entropy and how it aligns target tokens with the source token at the same
relative position (weight there, a ±--window band, argmax, distance from the diagonal, monotony).

Writes heads.csv, layers.csv, analysis.json, heatmaps/*.png and report.md into --out. --lang zh
writes report.md, the heatmaps' titles and what the command prints in Chinese (the numbers, the
CSV files and the JSON are the same in every language).

CORPUS is a text file (one text per line; .gz ok), a folder of .txt files, or
builtin:python-docs (English prose of the Python Language Reference, shipped with CPython).

Scale out: ``torchrun --nproc-per-node N $(which attnscope) analyze CORPUS ...`` shards the
corpus over N processes (gloo on CPU, nccl on CUDA) and gives the single-process result. Or run
the parts apart, on any machines, whenever: ``analyze CORPUS --shard I/N --out DIR_I`` for I = 0 …
N-1 (each checkpoints after every window and, run again, goes on where it stopped), then
``analyze --merge DIR_0 … DIR_N-1 --out OUT``: the single run's report, bit for bit (see
docs/guide/scaling-out.md).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..errors import InputError
from ..i18n import error
from . import MAX_INDEX, MAX_SEED, IntRange, add_command, add_lang_option, add_overwrite_option

#: What `analyze` writes into --out; one of them there means an earlier run is replaced.
RESULT_FILES = ("analysis.json", "report.md", "heads.csv", "layers.csv")
#: The options --merge reads (every other one was read when the shards were analysed).
MERGE_READS = ("--merge", "--out", "--lang", "--overwrite", "--no-progress")
#: The options of what --stream does not compute.
STREAM_SKIPS = ("--importance-texts", "--importance-batch", "--norm-texts")
MAX_COUNT = 10**9
MAX_BATCH = 65536
MAX_THREADS = 4096


def register(sub) -> None:
    from ..analysis.classify import Thresholds

    p = add_command(sub, "analyze", "per-head attention statistics, head types and importance over a corpus", __doc__)
    p.add_argument("corpus", metavar="CORPUS", nargs="?", default=None,
                   help="text file, folder of .txt files, or builtin:python-docs (none with --merge)")
    p.add_argument("--model", default=None, metavar="PATH",
                   help="a checkpoint folder, a .gguf file or an installed model (smollm2-135m, gemma-3-270m); "
                   "default: the packaged all-MiniLM-L6-v2")
    p.add_argument("-o", "--out", default="analysis", metavar="DIR",
                   help="output folder; with --shard the shard's folder (default: %(default)s)")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1 … (default: cpu; under torchrun on "
                   "CUDA each process takes cuda:LOCAL_RANK)")
    g = p.add_argument_group("reading")
    g.add_argument("--unit", choices=("line", "paragraph", "file"), default="line",
                   help="what one text is (default: %(default)s)")
    g.add_argument("--on-decode-error", choices=("stop", "skip"), default="stop",
                   help="a line that is not UTF-8: stop with its location, or skip and count it (default: %(default)s)")
    g.add_argument("--max-texts", type=IntRange(1, MAX_COUNT), default=None, metavar="N", help="only the first N texts")
    g.add_argument("--max-length", type=IntRange(2, MAX_INDEX), default=None, metavar="T",
                   help="truncate texts to T tokens, counted in the report (default: the model's limit)")
    g.add_argument("--batch-size", type=IntRange(1, MAX_BATCH), default=32, metavar="B",
                   help="texts per batch (default: %(default)s)")
    g.add_argument("--chunk-size", type=IntRange(1, MAX_COUNT), default=1024, metavar="C",
                   help="texts sorted by length together before batching (default: %(default)s)")
    g = p.add_argument_group("statistics")
    g.add_argument("--no-special-queries", action="store_true",
                   help="leave the rows of [CLS]/[SEP] out of the query averages (default: they count)")
    g.add_argument("--window", type=IntRange(0, MAX_INDEX), default=3, metavar="W",
                   help="to_local window ±W tokens (default: %(default)s)")
    g.add_argument("--threshold", action="append", default=[], metavar="NAME=VALUE",
                   help="classification threshold, repeatable; names: " +
                   ", ".join(f"{k} ({v:g})" for k, v in Thresholds().to_dict().items()))
    g.add_argument("--importance-texts", type=IntRange(0, MAX_COUNT), default=128, metavar="N",
                   help="ablate every head on the first N texts (0 = no importance; default: %(default)s)")
    g.add_argument("--importance-batch", type=IntRange(1, MAX_BATCH), default=8, metavar="B",
                   help="texts per ablation batch, each run n_heads times (default: %(default)s)")
    g.add_argument("--norm-texts", type=IntRange(0, MAX_COUNT), default=64, metavar="N",
                   help="each head's share of attention to [CLS]/[SEP] (a decoder: the first token) with raw "
                   "weights and with norms ‖α·f(x)‖, on the first N texts (0 = skip it; default: %(default)s)")
    g = p.add_argument_group("decoder heads (causal models)")
    g.add_argument("--induction-seqs", type=IntRange(0, MAX_COUNT), default=64, metavar="N",
                   help="repeated random token sequences for the previous-token, duplicate and induction "
                   "scores (0 = skip them; default: %(default)s)")
    g.add_argument("--induction-length", type=IntRange(2, MAX_INDEX), default=None, metavar="T",
                   help="distinct random tokens in one copy, each sequence being T tokens twice "
                   "(default: 50, or what the positions allow)")
    g.add_argument("--seed", type=IntRange(0, MAX_SEED), default=0, help="seed of the random sequences (default: %(default)s)")
    g = p.add_argument_group("shards (docs/guide/scaling-out.md)")
    g.add_argument("--shard", default=None, metavar="I/N",
                   help="analyse only shard I of N (windows of --chunk-size texts k with k %% N == I) and write "
                   "its exact sums to --out/shard.json, checkpointed after every window; run again, it goes on "
                   "from its last checkpoint (--overwrite: afresh)")
    g.add_argument("--merge", nargs="+", default=None, metavar="DIR",
                   help="merge the folders of shards 0 … N-1 into the report one run gives (no CORPUS, no model)")
    p.add_argument("--stream", action="store_true",
                   help="a model larger than memory: read one layer at a time from its safetensors or GGUF file, "
                   "one forward pass per window of --chunk-size texts (head importance and the norm shares, "
                   "which read layers outside a pass, are not computed)")
    p.add_argument("--threads", type=IntRange(1, MAX_THREADS), default=None, metavar="N",
                   help="torch CPU threads (default: torch's choice)")
    p.add_argument("--lanes", type=IntRange(1, MAX_THREADS), default=None, metavar="N",
                   help="CPU: batches analysed at once, each on one thread (default: the number of threads)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_lang_option(p, "language of report.md, the heatmaps' titles and the printed summary (default: en)")
    add_overwrite_option(p)


def _init_distributed(device_arg):
    """Join the torchrun job named by the environment; returns (device, we_started_it)."""
    import torch
    import torch.distributed as dist

    if int(os.environ.get("WORLD_SIZE", "1")) <= 1 or dist.is_initialized():
        return device_arg, False
    local = int(os.environ.get("LOCAL_RANK", "0"))
    use_cuda = (device_arg or "cpu").startswith("cuda") and torch.cuda.is_available()
    if use_cuda:
        torch.cuda.set_device(local)
        device_arg = f"cuda:{local}"
    dist.init_process_group(backend="nccl" if use_cuda else "gloo")
    return device_arg, True


def run(args) -> int:
    import torch

    from ..analysis import AnalysisConfig, Thresholds, analyze
    from ..analysis.run import distributed
    from ..analysis.shards import merge_shards
    from . import check_device, check_new_results, check_out_dir
    check_device(args.device)
    check_out_dir(Path(args.out))  # fail before the work, not after it, when the results cannot be written
    if args.merge:
        if args.corpus is not None:
            raise error(InputError, "errors.shard_merge_corpus")
        from . import given_options
        given = [f for f in given_options(args, "analyze") if f not in MERGE_READS]
        if given:  # the shards' own settings decide the merged report: the option would be dropped
            raise error(InputError, "errors.shard_merge_option", flag=given[0])
        check_new_results(Path(args.out), RESULT_FILES, args.overwrite)
        merged = merge_shards(args.merge)
        print_summary(merged, args.out, len(merged.write(args.out, args.lang)), args.lang)
        return 0
    if args.corpus is None:
        raise error(InputError, "errors.shard_no_corpus")
    if args.stream:  # a streamed model computes neither head importance nor the norm shares (they read layers outside a pass)
        from . import given_options
        given = [f for f in given_options(args, "analyze") if f in STREAM_SKIPS  # 0 (skip it) is what --stream does
                 and getattr(args, f[2:].replace("-", "_")) != 0]
        if given:
            raise error(InputError, "errors.analyze_stream_option", flag=given[0])
    if args.shard is None:
        check_new_results(Path(args.out), RESULT_FILES, args.overwrite)
    if args.threads:
        torch.set_num_threads(args.threads)
    from . import given_options
    # the default window grows with a larger --batch-size; a --chunk-size given below it is refused by validate()
    chunk = args.chunk_size if "--chunk-size" in given_options(args, "analyze") else max(args.chunk_size, args.batch_size)
    cfg = AnalysisConfig(batch_size=args.batch_size, chunk_size=chunk,
                         max_length=args.max_length, max_texts=args.max_texts, unit=args.unit,
                         on_decode_error=args.on_decode_error, special_queries=not args.no_special_queries,
                         window=args.window, importance_texts=0 if args.stream else args.importance_texts,
                         importance_batch=args.importance_batch, norm_texts=0 if args.stream else args.norm_texts,
                         induction_seqs=args.induction_seqs,
                         induction_length=args.induction_length, seed=args.seed, lanes=args.lanes,
                         thresholds=Thresholds.parse(args.threshold),
                         progress=not args.no_progress and sys.stderr.isatty())
    model = args.model
    if args.stream:  # loaded here, streamed (models/streaming.py): analyze then runs a window per pass
        from ..models import load
        model, args.device = load(args.model, device=args.device, stream_layers=True), None
    if args.shard is not None:
        return run_shard(args, cfg, model)
    device, started = _init_distributed(args.device)
    try:
        result = analyze(args.corpus, model, cfg, device=device)
        if result is not None and distributed()[0] == 0:
            paths = result.write(args.out, args.lang)
            if hasattr(result, "print_summary"):  # an encoder–decoder analysis (analysis/seq2seq.py) prints its own
                result.print_summary(args.out, len(paths), args.lang)
            else:
                print_summary(result, args.out, len(paths), args.lang)
    finally:
        if started:
            import torch.distributed as dist
            dist.destroy_process_group()
    return 0


def run_shard(args, cfg, model) -> int:
    """``analyze CORPUS --shard I/N --out DIR``: one shard, one line printed."""
    from ..analysis.shards import STATE, analyze_shard, parse_shard
    from ..analysis.summary import counted_in, say
    i, n = parse_shard(args.shard)
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:  # every process would run the same shard into one folder
        raise error(InputError, "errors.shard_torchrun")
    state = analyze_shard(args.corpus, (i, n), args.out, model, cfg, device=args.device, restart=args.overwrite)
    c = state["accumulator"]["counters"]
    print(say("out_shard", args.lang, i=i, n=n, texts=counted_in(c["texts"], "text", args.lang),
              tokens=counted_in(c["tokens"], "token", args.lang), seconds=state["seconds"],
              path=Path(args.out) / STATE, merge="attnscope analyze --merge DIR… --out OUT"))
    return 0


def print_summary(result, out, n_files, lang: str = "en") -> None:
    """What ``analyze`` prints of an encoder's or a decoder's analysis, in ``lang``."""
    from ..analysis.decoder_report import summary_lines
    from ..analysis.report import pass_sentence
    from ..analysis.summary import claim_with_layers, counted_in, left_out_line, pad_left, say
    c = result.counters
    n = lambda count, unit: counted_in(count, unit, lang)  # noqa: E731
    t = max(result.timings.get("statistics", result.seconds), 1e-9)
    print(say("out_head", lang, model=result.model_name, texts=n(c["texts"], "text"), tokens=n(c["tokens"], "token"),
              corpus=result.corpus, seconds=result.seconds,
              processes=say("out_processes", lang, n=result.world_size) if result.world_size > 1 else "",
              texts_per_s=c["texts"] / t, tokens_per_s=c["tokens"] / t))
    print(pass_sentence(result, lang))
    left = left_out_line(c, lang)
    if left:
        print(left)
    col = lambda key, width: pad_left(say("out_col_" + key, lang), width)  # noqa: E731
    print(f"{col('layer', 5)} {col('distance', 9)} {col('content', 8)} {col('entropy', 8)} {col('entropy_norm', 8)} "
          f"{col('local', 6)} {'[CLS]':>6} {'[SEP]':>6}  {say('out_col_labels', lang)}")
    for r in result.summary["layers"]:
        labels = say("list_sep", lang).join(f"{k} {v}" for k, v in r["labels"].items())
        print(f"{r['layer']:>5} {r['distance']:>9.2f} {r['distance_content']:>8.2f} {r['entropy']:>8.3f} "
              f"{r['entropy_norm']:>8.3f} {r['to_local']:>6.3f} {r['to_cls']:>6.3f} {r['to_sep']:>6.3f}  {labels}")
    print(say("out_even", lang, distance=result.baseline_distance))
    s = result.summary
    trend = s["trends"]["distance"]
    claim = s["claim"] if lang == "en" else claim_with_layers(s["trends"], s["layers"], lang)
    if trend["rho_heads"] != trend["rho_heads"]:  # NaN (one layer): no ρ = +nan to print
        print(say("out_claim_untested", lang, claim=claim))
    else:
        print(say("out_claim", lang, claim=claim, rho=trend["rho_heads"], p=trend["p_heads"]))
    for line in summary_lines(result, lang):  # nothing for an encoder
        print(line)
    print(say("out_wrote", lang, n=n_files, out=out))
