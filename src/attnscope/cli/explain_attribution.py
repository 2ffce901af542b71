"""``attnscope explain --attribution rollout|norm|alti``: one token's attribution row worked out
(:mod:`attnscope.explain.attribution_doc`); the options it cannot take with it, one sentence each."""

from __future__ import annotations

from ..errors import InputError
from ..i18n import Msg, error

#: ``explain``'s options that belong to one lesson, by argparse destination: the flag as written.
FLAGS = {"path": "--path", "scores": "--scores", "source": "an input file", "example": "--example", "X": "-X",
         "wq": "--wq", "wk": "--wk", "wv": "--wv", "wo": "--wo", "values": "--values", "labels": "--labels",
         "scoring": "--scoring", "causal": "--causal", "query": "--query", "dk": "--dk", "entry": "--entry",
         "scheme": "--scheme", "dim": "--dim", "offset": "--offset", "d_model": "--d-model", "base": "--base",
         "pairing": "--pairing", "vector": "--vector", "buckets": "--buckets", "max_distance": "--max-distance",
         "seed": "--seed", "samples": "--samples"}
#: A model's row's options (the attribution lesson reads them too), and the destinations each other lesson
#: reads: any other of FLAGS or ROW_FLAGS given to it would change nothing, so it is refused (lesson_flags).
ROW_FLAGS = {"text": "--text", "model": "--model", "layer": "--layer", "head": "--head", "token": "--token",
             "position": "--position", "dims": "--dims", "target": "--target", "attention": "--attention",
             "expand": "--expand"}
READS = {"toy": ("source", "example", "X", "wq", "wk", "wv", "wo", "labels", "scoring", "causal", "expand"),
         "scores": ("scores", "values", "labels", "query", "dk", "dims", "expand"),
         "scaling": ("source", "dk", "seed", "samples", "scores"),
         "positions": ("source", "scheme", "dim", "offset", "d_model", "base", "pairing", "vector", "buckets",
                       "max_distance", "position", "model", "layer", "dk", "causal")}
#: The positions lesson's, and the toy's, the --scores row's and --circuit qk's --entry (which a model's row has no use for).
POSITION_OPTIONS = ("scheme", "dim", "offset", "d_model", "base", "pairing", "vector", "buckets", "max_distance")
TOY_OPTIONS = ("source", "example", "X", "wq", "wk", "wv", "wo", "labels", "scoring", "causal", "scores", "values",
               "query", "dk", "seed", "samples", "entry")


def given_flags(args, dests) -> list[str]:
    """The flags of ``dests`` that ``args`` holds a value for (``--query 0``, ``--offset 0`` too)."""
    values = ((d, getattr(args, d, None)) for d in dests)
    flags = {**FLAGS, **ROW_FLAGS}
    return [flags[d] for d, v in values if v is not None and v is not False and v != []]  # 0 == False: not `in`


def refuse_others(args, lesson: str) -> None:
    """InputError naming the first option given that ``lesson`` ("toy", "scores", "scaling",
    "positions") does not read: it would be dropped, and the same calculation come back."""
    given = given_flags(args, [d for d in (*FLAGS, *ROW_FLAGS) if d not in READS[lesson]])
    if given:
        raise error(InputError, "errors.cli_explain_lesson_option", flag=given[0],
                    lesson=Msg(f"errors.cli_explain_lesson_{lesson}"))


def build_attribution(args):
    """The Worked of ``--attribution`` (InputError for a bad method, a decoder side or another lesson's option)."""
    from ..explain.attribution_doc import explain_attribution
    from ..explain.attribution_values import check_method

    check_method(args.attribution)
    if args.target is not None or args.attention is not None:
        raise error(InputError, "errors.attribution_lesson_decoder")
    if args.head is not None:  # --head 0 too: the lessons take every head
        raise error(InputError, "errors.attribution_lesson_head")
    # the lesson works the model's own attention: every other lesson's option would change nothing
    given = given_flags(args, FLAGS)  # --seed and --samples too
    if given:
        raise error(InputError, "errors.attribution_lesson_other", option=given[0])
    if args.text is None:
        raise error(InputError, "errors.attribution_lesson_text")
    return explain_attribution(args.text, args.attribution, model=args.model, token=args.token,
                               position=args.position, layer=args.layer,
                               dims=3 if args.dims is None else args.dims,
                               expand=args.expand or "auto")
