"""``attnscope explain``: a step-by-step worked calculation of attention.

  attnscope explain --example three-tokens                  the article's three tokens, by hand
  attnscope explain input.yaml --lang zh --format markdown  your own X, W_Q, W_K, W_V (YAML/JSON/TOML)
  attnscope explain -X "1,0;0,1;1,1" --wq "1,0;1,1" --wk "1,2;0,1" --wv "2,0;0,1"
  attnscope explain --text "我喜欢人工智能" --layer 0 --head 3 --token 我 --dims 3
  attnscope explain --text "The cat sat on the mat." --token cat --path   the token's whole path through layer 0
  attnscope explain --model ./t5-small --text "translate English to German: Hi." --target "Hallo." --path --token Hall
                     a target token through decoder layer 0 (self- and cross-attention; without --target: a source
                     token through an encoder layer)
  attnscope explain --model ./t5-small --text "translate English to German: Hi." --target "Hallo." --attention cross \
--token Hall
                     a T5 cross-attention row (one command line; T5 rows show their bias buckets too)
  attnscope explain --text "The cat sat." --token cat --attribution rollout   its rollout row, layer by layer
  attnscope explain --model ./gpt2 --circuit qk --layer 1 --head 0 --entry 3,5   one entry of W_QK = W_Q W_Kᵀ
  attnscope explain --model ./gpt2 --composition k --from 0.3 --to 1.0          a K-composition score by hand
  attnscope explain --scores 15.3,22.7,18.2,2.1,1.8 --dk 64 --labels 我,喜,歡,人,工
  attnscope explain scaling --dk 64                          why divide by √d_k
  attnscope explain positions --position 5 --dim 2 --offset 3 sinusoidal PE(5), and PE(8) as its rotation
  attnscope explain positions --scheme rotary --model ./SmolLM2-135M --position 5   the model's RoPE pairs
  attnscope explain positions --scheme t5 --position 20 --offset -13               δ = −13 → T5's bucket

Formats: rich (terminal, default), markdown, latex, json. Toy problems are exact (the given numbers'
sums and products exact; √d_k, exp and softmax to 100 digits); given --scores and a real model's row in
float64; numbers are rounded only for display (--decimals, half-up). Positions, rows, columns, dimensions, heads and
layers count from 0 in every output, as --position, --head and --layer do.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..i18n import error
from ..i18n import text as i18n_text
from ..scorings import SCORINGS
from . import MAX_INDEX, MAX_SEED, IntRange, add_command, add_lang_option, check_new_file, full_width_comma, write_text
from .explain_attribution import POSITION_OPTIONS, TOY_OPTIONS, build_attribution, given_flags, refuse_others
from .explain_circuit import add_circuit_options, build_circuit, refuse_circuit_options

FORMATS = ("rich", "markdown", "latex", "json")


def add_output_options(p, default_decimals: int = 4) -> None:
    g = p.add_argument_group("output")
    g.add_argument("--format", "-f", choices=FORMATS, default="rich", help="output format (default: rich)")
    add_lang_option(g, "language of every label (default: en)")
    g.add_argument("--decimals", type=IntRange(0, 12), default=default_decimals,
                   help=f"decimals shown (default {default_decimals}); the arithmetic is never rounded")
    g.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of the terminal")
    g.add_argument("--latex-mode", choices=("document", "fragment", "beamer"),
                   help="with --format latex: a whole document (default), a fragment to paste into your own, or "
                        "beamer frames (one per step); pdflatex when the text has no CJK, else xelatex")
    g.add_argument("--overwrite", action="store_true", help="replace FILE if it exists (else the command stops)")
    p.set_defaults(overwrite_outputs={"output": "-o"})  # cli.refuse_overwrite_alone: nothing to replace without -o


def register(sub) -> None:
    p = add_command(sub, "explain", "print a worked calculation step by step", __doc__)
    p.add_argument("source", nargs="?", metavar="INPUT|scaling|positions",
                   help="a YAML/JSON/TOML file with X, W_Q, W_K, W_V (optional W_O, mask, causal, scoring, "
                        "tokens), or 'scaling' for the √d_k lesson")
    p.add_argument("--example", metavar="NAME", help="a built-in toy input: three-tokens, multi-head (every head, "
                                                     "fused W_QKV and W_O), grouped-query (4 query heads on 2 k/v heads)")
    toy = p.add_argument_group("toy input on the command line (rows separated by ';')")
    toy.add_argument("-X", dest="X", metavar="M", help='token vectors, e.g. "1,0; 0,1; 1,1"')
    toy.add_argument("--wq", metavar="M", help="W_Q (d_model × d_k)")
    toy.add_argument("--wk", metavar="M", help="W_K (d_model × d_k)")
    toy.add_argument("--wv", metavar="M", help="W_V (d_model × d_v)")
    toy.add_argument("--wo", metavar="M", help="W_O (d_v × d_out), optional")
    toy.add_argument("--labels", metavar="A,B,C", help="token labels, comma separated")
    toy.add_argument("--scoring", choices=tuple(SCORINGS),
                     help="how scores are formed (default: scaled)")
    toy.add_argument("--causal", action="store_true", help="each token sees only itself and earlier tokens")
    toy.add_argument("--expand", choices=("auto", "always", "never"),
                     help="write out row·column products and weighted sums (default: while small)")
    real = p.add_argument_group("one row of a real model")
    real.add_argument("--text", help="the text to run through the model")
    real.add_argument("--model", metavar="FOLDER", help="a local Hugging Face folder (default: all-MiniLM-L6-v2)")
    real.add_argument("--layer", type=IntRange(0, MAX_INDEX), help="layer, from 0 (default 0; with --attribution: the last)")
    real.add_argument("--head", type=IntRange(0, MAX_INDEX), help="head, from 0 (default 0)")
    real.add_argument("--token", help="the query token, e.g. 喜 (the first one if it occurs twice)")
    real.add_argument("--position", type=IntRange(0, MAX_INDEX), help="the query's position, from 0 ([CLS] is 0)")
    real.add_argument("--dims", type=IntRange(1, MAX_INDEX), help="dimensions of V written out (default 3)")
    real.add_argument("--path", "--whole-path", dest="path", action="store_true",
                      help="the token's whole path through the layer: tokens and ids, embedding rows, norms, "
                           "q = x W_Q + b, the row, heads and W_O, residuals, feed-forward, the layer's output")
    real.add_argument("--attribution", metavar="METHOD",
                      help="one token's attribution row worked out: rollout (every layer's ½·A + ½·I and the products), "
                           "norm (‖α·f(x)‖ per head beside α, in --layer) or alti (the top layer's contributions and "
                           "the products); --layer is the top layer (default the last)")
    real.add_argument("--target", help="encoder–decoder models (T5, BART): the decoder's text (--text is the source)")
    real.add_argument("--attention", choices=("encoder", "self", "cross"),
                      help="encoder–decoder models: which attention the row is of: the encoder's (default), the "
                           "decoder's causal self-attention, or cross-attention (a target token over the source)")
    row = p.add_argument_group("one row from given raw scores, and the scaling lesson")
    row.add_argument("--scores", action="append", metavar="S1,S2,…",
                     help="raw scores of one query (the scaling lesson takes several)")
    row.add_argument("--values", metavar="M", help="the V rows for --scores, one per score")
    row.add_argument("--query", type=IntRange(0, MAX_INDEX), help="position of the query among the --scores keys (for labels)")
    row.add_argument("--dk", type=IntRange(1, 65536), help="d_k: scores are divided by √d_k (scaling: default 64)")
    row.add_argument("--seed", type=IntRange(0, MAX_SEED), help="scaling: seed of the sampled variance (default 0)")
    row.add_argument("--samples", type=IntRange(2, 10**7), help="scaling: sampled pairs per d_k (default 10000)")
    pos = p.add_argument_group("explain positions (also: --position, --model, --layer, --dk, --causal)")
    pos.add_argument("--scheme", choices=POSITION_SCHEMES,
                     help="positions: sinusoidal (default; PE added to the embeddings), rotary (q and k turned), "
                          "t5 (relative buckets)")
    pos.add_argument("--dim", type=IntRange(0, MAX_INDEX),
                     help="positions: the dimension worked out, from 0 (sinusoidal: of PE; rotary: "
                                             "a feature of q/k, its pair is worked out)")
    pos.add_argument("--offset", "-k", type=IntRange(-MAX_INDEX, MAX_INDEX),
                     help="positions: k, the shift from p to p + k (t5: δ = key − query, default −13 or back to key 0)")
    pos.add_argument("--d-model", dest="d_model", type=IntRange(2, 65536), help="sinusoidal: the width of PE (default 8)")
    pos.add_argument("--base", type=float, help="sinusoidal, rotary: the base of the frequencies (default 10000)")
    pos.add_argument("--pairing", choices=("half", "adjacent"),
                     help="rotary: feature i with i + d/2 (half, default; Hugging Face) or 2i with 2i + 1 (adjacent)")
    pos.add_argument("--vector", metavar="V", help="rotary: the q (or k) to turn, d_k numbers (default (1, 0) per pair)")
    pos.add_argument("--buckets", type=IntRange(1, MAX_INDEX), help="t5: the number of buckets (default 32)")
    pos.add_argument("--max-distance", dest="max_distance", type=IntRange(1, MAX_INDEX),
                     help="t5: the last log bucket's distance "
                                                                            "(default 128)")
    add_circuit_options(p)
    add_output_options(p)


POSITION_SCHEMES = ("sinusoidal", "rotary", "t5")


def build(args):
    """The Worked object the arguments ask for (raises AttnscopeError subclasses on bad input)."""
    from ..explain import explain
    from ..explain.inputs import parse_matrix_arg, parse_vector_arg

    src = args.source
    if src not in (None, "positions", "scaling") and not Path(src).exists() and not Path(src).suffix:
        raise error(InputError, "errors.cli_explain_not_a_file", source=repr(src))  # a text typed as INPUT
    if args.circuit is not None or args.composition is not None:
        return build_circuit(args)
    refuse_circuit_options(args)
    if args.attribution is not None:
        return build_attribution(args)
    lesson = args.source if args.source in ("positions", "scaling") else None
    if lesson is None and args.text is None:  # a model's row refuses the others' options itself (below)
        toy = args.source is not None or args.example is not None or given_flags(args, ("X", "wq", "wk", "wv", "wo"))
        lesson = "scores" if args.scores else "toy" if toy else None
    if lesson is not None and (lesson == "positions" or not given_flags(args, POSITION_OPTIONS)):
        refuse_others(args, lesson)  # an option the lesson does not read is refused, not dropped
    args.layer = 0 if args.layer is None else args.layer
    args.head = 0 if args.head is None else args.head
    args.dims = 3 if args.dims is None else args.dims
    args.expand = args.expand or "auto"
    if args.source == "positions":  # the positions lesson the options ask for
        vector = parse_vector_arg(args.vector, "--vector") if args.vector is not None else None
        return explain(lesson="positions", scheme=args.scheme or "sinusoidal", position=args.position, dim=args.dim,
                       offset=args.offset, d_model=args.d_model, base=args.base, model=args.model, layer=args.layer,
                       d_k=args.dk, pairing=args.pairing, vector=vector, buckets=args.buckets,
                       max_distance=args.max_distance, causal=args.causal)
    given = given_flags(args, POSITION_OPTIONS)
    if given:
        raise error(InputError, "errors.cli_explain_positions_option", flag=given[0])
    if args.source == "scaling":
        vectors = [parse_vector_arg(s, f"--scores {s!r}") for s in args.scores] if args.scores else None
        return explain(lesson="scaling", d_k=args.dk if args.dk is not None else 64, seed=args.seed,
                       samples=args.samples, scores=vectors)  # None: the lesson's own sample
    labels = labels_arg(args.labels) if args.labels else None
    if args.text is None and (args.target is not None or args.attention is not None):
        raise error(InputError, "errors.cli_explain_target_text")
    if args.path and args.text is None:
        raise error(InputError, "errors.cli_explain_path_text")
    if args.text is not None:  # one row of a real model, or with --path the token's whole path
        given = given_flags(args, TOY_OPTIONS)
        if given:  # the model's own scoring, mask, d_k and tokens decide: refused rather than dropped
            raise error(InputError, "errors.cli_explain_text_option", flag=given[0])
        return explain(text=args.text, model=args.model, layer=args.layer, head=args.head, token=args.token,
                       position=args.position, dims=args.dims, expand=args.expand, path=args.path, target=args.target,
                       attention=args.attention)
    if args.scores:
        if len(args.scores) > 1:
            raise error(InputError, "errors.cli_explain_scores_one")
        values = parse_matrix_arg(args.values, "--values") if args.values else None
        return explain(scores=parse_vector_arg(args.scores[0], "--scores"), tokens=labels, d_k=args.dk,
                       values=values, query=args.query, dims=args.dims, expand=args.expand)
    matrices: dict[str, Any] = {}
    for key, flag in (("X", "-X"), ("W_Q", "--wq"), ("W_K", "--wk"), ("W_V", "--wv"), ("W_O", "--wo")):
        value = getattr(args, flag.lstrip("-"))
        if value is not None:
            matrices[key] = parse_matrix_arg(value, flag)
    extra = {}
    if args.scoring:
        extra["scoring"] = args.scoring
    if args.causal:
        extra["causal"] = True
    if matrices:
        if args.source or args.example:
            raise error(InputError, "errors.cli_explain_toy_once")
        return explain(tokens=labels, expand=args.expand, **matrices, **extra)
    if args.source is None and args.example is None:
        raise error(InputError, "errors.cli_explain_nothing")
    if extra or labels:
        from ..explain import toy_problem
        from ..explain.toy import explain_toy
        p = toy_problem(args.source, example=args.example)
        if hasattr(p, "with_options"):  # a multi-head problem: the options reach every head
            from ..explain import explain_problem
            return explain_problem(p.with_options(scoring=extra.get("scoring"), causal=extra.get("causal"),
                                                  tokens=labels), expand=args.expand)
        if "scoring" in extra:
            p.scoring = extra["scoring"]
        if extra.get("causal"):
            p.causal = True
        if labels:
            from ..explain.inputs import labels as check_labels
            p.tokens = check_labels(labels, "--labels", p.L)
        return explain_toy(p, expand=args.expand)
    return explain(args.source, example=args.example, expand=args.expand)


def labels_arg(text: str) -> list[str]:
    """Token labels of --labels (explain, exercise): comma separated (``我,爱,你``). A Chinese input
    method's '，' or '、' where no ',' is given is named, not read as one label ('我，爱，你')."""
    from ..tokenizer import check_unicode
    sep = full_width_comma(text) if "," not in text else None  # a '，' among ',' is a token's label
    if sep is not None:
        raise error(InputError, "errors.labels_full_width", value=repr(text), sep=sep)
    return [s.strip() for s in check_unicode(text, "--labels").split(",")]


#: -o suffixes that name a --format: another format written under one is refused (rich text in "row.json")
SUFFIX_FORMATS = {".json": "json", ".md": "markdown", ".tex": "latex"}


def check_output(args) -> None:
    """Refuse a folder, a name whose suffix is another format's, or an existing -o file without
    --overwrite, before any work."""
    if args.output is not None and Path(args.output).is_dir():  # "-o ." or "-o ''": a name is missing
        example = {"markdown": "explain.md", "latex": "explain.tex", "json": "explain.json"}.get(args.format, "explain.txt")
        raise error(InputError, "cli.o_folder", path=repr(args.output), example=repr(str(Path(args.output) / example)))
    named = SUFFIX_FORMATS.get(Path(args.output).suffix.lower()) if args.output else None
    if named is not None and named != args.format:
        raise error(InputError, "cli.o_format", path=repr(args.output), named=named, format=args.format)
    if args.output:
        check_new_file(Path(args.output), args.overwrite)


def emit(w, args) -> None:
    if args.output:
        text = w.render(args.format, lang=args.lang, decimals=args.decimals, latex_mode=args.latex_mode)
        write_text(args.output, text, "errors.cli_cannot_write", path=args.output)
        print(i18n_text("analysis.wrote", args.lang, path=args.output), file=sys.stderr)
    else:
        w.print(args.format, lang=args.lang, decimals=args.decimals, latex_mode=args.latex_mode)


def run(args) -> int:
    check_output(args)
    emit(build(args), args)
    return 0
