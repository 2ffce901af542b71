"""``attnscope explain --attribution rollout|norm|alti``: one token's attribution row worked out
(:mod:`attnscope.explain.attribution_doc`); the options it cannot take with it, one sentence each."""

from __future__ import annotations

from ..errors import InputError
from ..i18n import error

#: ``explain``'s options that belong to one lesson, by argparse destination: the flag as written.
FLAGS = {"path": "--path", "scores": "--scores", "source": "an input file", "example": "--example", "X": "-X",
         "wq": "--wq", "wk": "--wk", "wv": "--wv", "wo": "--wo", "values": "--values", "labels": "--labels",
         "scoring": "--scoring", "causal": "--causal", "query": "--query", "dk": "--dk", "entry": "--entry",
         "scheme": "--scheme", "dim": "--dim", "offset": "--offset", "d_model": "--d-model", "base": "--base",
         "pairing": "--pairing", "vector": "--vector", "buckets": "--buckets", "max_distance": "--max-distance"}
#: The positions lesson's, and the toy's and the --scores row's (which a model's row has no use for).
POSITION_OPTIONS = ("scheme", "dim", "offset", "d_model", "base", "pairing", "vector", "buckets", "max_distance")
TOY_OPTIONS = ("source", "example", "X", "wq", "wk", "wv", "wo", "labels", "scoring", "causal", "scores", "values",
               "query", "dk")


def given_flags(args, dests) -> list[str]:
    """The flags of ``dests`` that ``args`` holds a value for (``--query 0``, ``--offset 0`` too)."""
    values = ((d, getattr(args, d, None)) for d in dests)
    return [FLAGS[d] for d, v in values if v is not None and v is not False and v != []]  # 0 == False: not `in`


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
    given = given_flags(args, FLAGS)
    if given:
        raise error(InputError, "errors.attribution_lesson_other", option=given[0])
    if args.text is None:
        raise error(InputError, "errors.attribution_lesson_text")
    return explain_attribution(args.text, args.attribution, model=args.model, token=args.token,
                               position=args.position, layer=args.layer, dims=args.dims, expand=args.expand)
