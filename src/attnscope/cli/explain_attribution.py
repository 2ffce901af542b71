"""``attnscope explain --attribution rollout|norm|alti``: one token's attribution row worked out
(:mod:`attnscope.explain.attribution_doc`); the options it cannot take with it, one sentence each."""

from __future__ import annotations

from ..errors import InputError
from ..i18n import error

#: Options of ``explain`` that ask for another lesson, by argparse destination.
OTHER = (("path", "--path"), ("scores", "--scores"), ("source", "an input file"), ("example", "--example"),
         ("X", "-X"), ("wq", "--wq"), ("wk", "--wk"), ("wv", "--wv"), ("wo", "--wo"), ("values", "--values"))
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
        if getattr(args, dest, None):
            raise error(InputError, "errors.attribution_lesson_other", option=flag)
    if args.text is None:
        raise error(InputError, "errors.attribution_lesson_text")
    return explain_attribution(args.text, args.attribution, model=args.model, token=args.token,
                               position=args.position, layer=args.layer, dims=args.dims, expand=args.expand)
