"""``attnscope explain --circuit qk`` and ``--composition q|k|v``: one entry of a head's W_QK and one
composition score, worked out (:mod:`attnscope.explain.circuit_doc`); the options of other lessons
are refused, one sentence each.

  attnscope explain --model ./gpt2 --circuit qk --layer 1 --head 0 --entry 3,5
  attnscope explain --model ./SmolLM2 --circuit qk --layer 4 --head 2 --entry 0,7 --offset 1
  attnscope explain --model ./gpt2 --composition k --from 0.3 --to 1.0
"""

from __future__ import annotations

from ..errors import InputError
from ..i18n import Msg, error
from .explain_attribution import FLAGS, ROW_FLAGS, given_flags

#: Options of ``explain`` that belong to another lesson, by argparse destination.
OTHER = (("text", "--text"), ("token", "--token"), ("position", "--position"), ("path", "--path"),
         ("attribution", "--attribution"), ("scores", "--scores"), ("source", "an input file"),
         ("example", "--example"), ("X", "-X"), ("wq", "--wq"), ("wk", "--wk"), ("wv", "--wv"), ("wo", "--wo"),
         ("values", "--values"), ("target", "--target"), ("attention", "--attention"))
#: What each lesson reads of explain_attribution's FLAGS and ROW_FLAGS; any other given is refused (not dropped).
READS = {"qk": ("model", "layer", "head", "entry", "offset"), "composition": ("model", "offset")}

CIRCUITS = ("qk",)
COMPOSITIONS = ("q", "k", "v")


def add_circuit_options(p) -> None:
    """The ``circuits`` group of ``explain``'s options."""
    g = p.add_argument_group("QK/OV circuits of a real model (--model; --offset: a rotary model's relative offset)")
    g.add_argument("--circuit", metavar="qk",
                   help="one entry of a head's QK circuit W_QK = W_Q W_Kᵀ worked out (with --layer, --head, --entry)")
    g.add_argument("--entry", metavar="I,J", help="--circuit qk: the row (query feature) and column (key feature)")
    g.add_argument("--composition", metavar="q|k|v",
                   help="one Q-, K- or V-composition score worked out, from the head --from to the later head --to")
    g.add_argument("--from", dest="from_head", metavar="L.H", help="--composition: the earlier head, e.g. 0.3")
    g.add_argument("--to", dest="to_head", metavar="L.H", help="--composition: the later head, e.g. 1.0")
    g.add_argument("--no-fold", dest="no_fold", action="store_true",
                   help="the checkpoint's own W_Q, W_K, W_V (default: the norms' scales γ folded in)")


def _entry(value) -> tuple[int, int]:
    parts = str(value).split(",")
    if len(parts) != 2 or not all(x.strip().isdecimal() for x in parts):  # isdigit() passes '²', int() refuses it
        raise error(InputError, "errors.qkov_cli_entry_form", value=repr(value))
    return int(parts[0]), int(parts[1])


def build_circuit(args):
    """The Worked of ``--circuit`` or ``--composition`` (InputError for anything they cannot take)."""
    from ..explain.circuit_doc import explain_composition, explain_qk_entry

    if args.circuit is not None and args.composition is not None:
        raise error(InputError, "errors.qkov_cli_both")
    for dest, flag in OTHER:
        if getattr(args, dest, None):
            raise error(InputError, "errors.qkov_cli_other", option=flag)
    lesson = "qk" if args.circuit is not None else "composition"
    given = given_flags(args, [d for d in (*FLAGS, *ROW_FLAGS) if d not in READS[lesson]])
    if lesson == "qk" and (args.from_head is not None or args.to_head is not None):
        given.insert(0, "--from" if args.from_head is not None else "--to")
    if given:  # it would change nothing: --dk, --causal, --dims …, --entry of a composition, --from of W_QK
        raise error(InputError, "errors.cli_explain_lesson_option", flag=given[0],
                    lesson=Msg(f"errors.cli_explain_lesson_{lesson}"))
    fold = not args.no_fold
    if args.circuit is not None:
        if args.circuit not in CIRCUITS:
            raise error(InputError, "errors.qkov_cli_kind", kind=repr(args.circuit))
        if args.layer is None or args.head is None:
            raise error(InputError, "errors.qkov_cli_layer_head")
        if args.entry is None:
            raise error(InputError, "errors.qkov_cli_entry")
        return explain_qk_entry(args.model, args.layer, args.head, _entry(args.entry), offset=args.offset,
                                fold_norm=fold)
    if args.from_head is None or args.to_head is None:
        raise error(InputError, "errors.qkov_cli_heads")
    from ..circuits.scores import check_kind
    check_kind(args.composition)
    return explain_composition(args.model, args.composition, args.from_head, args.to_head, offset=args.offset,
                               fold_norm=fold)


def refuse_circuit_options(args) -> None:
    """InputError for --from, --to or --no-fold without --circuit or --composition (they would be dropped)."""
    for flag, given in (("--from", args.from_head is not None), ("--to", args.to_head is not None),
                        ("--no-fold", args.no_fold)):
        if given:
            raise error(InputError, "errors.qkov_cli_alone", flag=flag)
