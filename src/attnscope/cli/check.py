"""``attnscope check``: judge a hand calculation against the exact values.

  attnscope check answers.yaml                   your numbers (see `attnscope exercise` for the format)
  attnscope check --example three-tokens-article the three-token article's own numbers (it has slips)
  attnscope check --example xi-row-article       the first article's row of 喜

Each number is judged at the decimals you wrote it with. Wrong entries are listed with the
correct value; later entries that follow from an earlier mistake are marked "carried".
Exit status: 0 all correct, 1 something wrong, 2 the file itself is malformed.
"""

from __future__ import annotations

import argparse
import sys

from ..errors import InputError


def register(sub) -> None:
    from ..check import EXAMPLES
    p = sub.add_parser("check", help="check a hand calculation (exit 0 correct, 1 wrong)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("answers", nargs="?", metavar="ANSWERS", help="a YAML/JSON/TOML file with problem and answers")
    p.add_argument("--example", choices=sorted(EXAMPLES), help="a built-in answers file")
    p.add_argument("--format", "-f", choices=("rich", "markdown", "json"), default="rich",
                   help="rich: coloured terminal tables; markdown; json: every entry with its verdict "
                        "(default: rich)")
    p.add_argument("--lang", choices=("en", "zh"), default="en", help="language of the report (default: en)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..check import check
    from ..check.report import print_rich
    if args.answers is None and args.example is None:
        raise InputError("give an answers file or --example (e.g. three-tokens-article)")
    if args.answers is not None and args.example is not None:
        raise InputError("give an answers file or --example, not both")
    report = check(args.answers, example=args.example)
    if args.format == "rich":
        print_rich(report, args.lang)
    else:
        sys.stdout.write(report.render(args.format, lang=args.lang))
    return 0 if report.ok else 1
