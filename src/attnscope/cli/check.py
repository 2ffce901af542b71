"""``attnscope check``: judge a hand calculation against the exact values.

  attnscope check answers.yaml                   your numbers (see `attnscope exercise` for the format)
  attnscope check --example three-tokens-article the three-token article's own numbers (it has slips)
  attnscope check --example xi-row-article       the first article's row of 喜
  attnscope check class/ --summary class.csv     a class: every answers file of the folder, one
                                                 student per file (the name is the file's stem)

Each number is judged at the decimals you wrote it with. Wrong entries are listed with the
correct value; later entries that follow from an earlier mistake are marked "carried". An entry
left empty counts as missing, never as right.
Exit status: 0 all correct, 1 something wrong or missing, 2 the file itself is malformed (a class:
2 when a file could not be checked; the others are still judged).
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import InputError
from ..i18n import error
from ..i18n import text as i18n_text
from . import add_command, add_lang_option, add_overwrite_option, check_new_file, write_text


def register(sub) -> None:
    from ..check import EXAMPLES
    p = add_command(sub, "check", "check a hand calculation (exit 0 correct, 1 wrong)", __doc__)
    p.add_argument("answers", nargs="*", metavar="ANSWERS",
                   help="a YAML/JSON/TOML file with problem and answers; several files or a folder check a class")
    p.add_argument("--summary", metavar="CSV", help="a class: write the summary (student × step: entries, correct, "
                   "new mistakes, carried, missing, first mistake) to this CSV file")
    p.add_argument("--example", choices=sorted(EXAMPLES), help="a built-in answers file")
    p.add_argument("--format", "-f", choices=("rich", "markdown", "json", "csv"), default="rich",
                   help="rich: coloured terminal tables; markdown; json: every entry with its verdict; "
                        "csv: a class's summary on stdout (default: rich)")
    add_lang_option(p, "language of the report (default: en)")
    add_overwrite_option(p, {"summary": "--summary"})  # the one file check writes


def run(args) -> int:
    from ..check import check
    from ..check.report import print_rich
    files = list(args.answers)
    if not files and args.example is None:
        raise error(InputError, "errors.check_nothing")
    if files and args.example is not None:
        raise error(InputError, "errors.check_both")
    if len(files) > 1 or (files and Path(files[0]).is_dir()):
        return run_class(args, files)
    if args.summary is not None or args.format == "csv":
        raise error(InputError, "errors.summary_one_file")
    report = check(files[0] if files else None, example=args.example)
    if args.format == "rich":
        print_rich(report, args.lang)
    else:
        sys.stdout.write(report.render(args.format, lang=args.lang))
    return 0 if report.ok else 1


def run_class(args, files: list) -> int:
    """Several files or a folder: the class table on stdout, the CSV with --summary."""
    from ..check.classroom import answer_files, check_class
    if args.format == "json":
        raise error(InputError, "errors.json_class")
    if args.summary is not None:
        out = Path(args.summary)
        if out.resolve() in {f.resolve() for f in answer_files(files)}:
            raise error(InputError, "errors.summary_is_answers", path=repr(args.summary))
        if out.is_dir():  # before the class is checked, not at the write after it
            raise error(InputError, "errors.summary_folder", path=repr(args.summary),
                        example=repr(str(out / "summary.csv")))
        if not out.parent.is_dir():
            raise error(InputError, "errors.summary_no_folder", path=repr(args.summary), folder=repr(str(out.parent)))
        check_new_file(out, args.overwrite, "--summary")
    result = check_class(files)
    sys.stdout.write(result.render(args.format if args.format in ("markdown", "csv") else "text", lang=args.lang))
    if args.summary is not None:
        write_text(args.summary, result.to_csv(args.lang), "errors.summary_unwritable", path=repr(args.summary))
        print(i18n_text("analysis.wrote", args.lang, path=args.summary), file=sys.stderr)
    if any(s.report is None for s in result.students):
        return 2
    return 0 if result.ok else 1
