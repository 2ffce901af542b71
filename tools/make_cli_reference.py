"""Write docs/reference/cli.md: the ``--help`` of ``attnscope`` and of every subcommand, as argparse
prints it at 100 columns (so the page does not depend on the terminal that wrote it).

    .venv/bin/python tools/make_cli_reference.py          # rewrite the page
    tests/docs/test_cli_reference.py                      # fails when the page differs from --help
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "reference" / "cli.md"
COLUMNS = "100"


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def page() -> str:
    """The page's text, from the parsers `attnscope` builds now."""
    from attnscope.cli import COMMANDS, build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = COLUMNS  # argparse's HelpFormatter reads the width from it
    try:
        parser = build_parser()
        subs = _subparsers(parser)
        out = ["# Command-line reference", "",
               "Every command's `--help`, as `attnscope COMMAND --help` prints it. This page is written by "
               "`tools/make_cli_reference.py` from the parsers themselves, and `tests/docs/test_cli_reference.py` "
               "fails when it differs from them: change a command's options or help, then re-run the tool.", "",
               "| command | what it does |", "|---|---|"]
        helps = {c.dest: c.help or "" for a in parser._actions if isinstance(a, argparse._SubParsersAction)
                 for c in a._choices_actions}
        for name in COMMANDS:
            out.append(f"| [`attnscope {name}`](#attnscope-{name}) | {helps[name].replace('|', chr(92) + '|')} |")
        out += ["", "## attnscope", "", "```text", parser.format_help().rstrip(), "```", ""]
        for name in COMMANDS:
            out += [f"## attnscope {name}", "", "```text", subs[name].format_help().rstrip(), "```", ""]
        return "\n".join(out).rstrip() + "\n"
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


def main() -> int:
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    PAGE.write_text(page(), encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
