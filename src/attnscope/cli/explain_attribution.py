"""``attnscope explain --attribution rollout|norm|alti``: one token's attribution row worked out
(:mod:`attnscope.explain.attribution_doc`); the options it cannot take with it, one sentence each."""

from __future__ import annotations

from ..errors import InputError
from ..i18n import error

#: Options of ``explain`` that ask for another lesson, by argparse destination.
#: The toy's, the row's and the positions lesson's options too: the lesson works the model's own
#: attention, so a mask, scoring, labels, d_k or position scheme given with it would change nothing.
OTHER = (("path", "--path"), ("scores", "--scores"), ("source", "an input file"), ("example", "--example"),
         ("X", "-X"), ("wq", "--wq"), ("wk", "--wk"), ("wv", "--wv"), ("wo", "--wo"), ("values", "--values"),
         ("labels", "--labels"), ("scoring", "--scoring"), ("causal", "--causal"), ("query", "--query"),
         ("dk", "--dk"), ("scheme", "--scheme"), ("dim", "--dim"), ("offset", "--offset"), ("d_model", "--d-model"),
         ("base", "--base"), ("pairing", "--pairing"), ("vector", "--vector"), ("buckets", "--buckets"),
         ("max_distance", "--max-distance"), ("entry", "--entry"))


def build_attribution(args):
    """The Worked of ``--attribution`` (InputError for a bad method, a decoder side or another lesson's option)."""
    from ..explain.attribution_doc import explain_attribution
    from ..explain.attribution_values import check_method

    check_method(args.attribution)
    if args.target is not None or args.attention is not None:
        raise error(InputError, "errors.attribution_lesson_decoder")
    if args.head is not None:  # --head 0 too: the lessons take every head
        raise error(InputError, "errors.attribution_lesson_head")
    for dest, flag in OTHER:
        value = getattr(args, dest, None)
        if value is not None and value is not False and value != []:  # --query 0, --offset 0 are given too
            raise error(InputError, "errors.attribution_lesson_other", option=flag)
    if args.text is None:
        raise error(InputError, "errors.attribution_lesson_text")
    return explain_attribution(args.text, args.attribution, model=args.model, token=args.token,
                               position=args.position, layer=args.layer, dims=args.dims, expand=args.expand)
