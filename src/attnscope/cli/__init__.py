"""The ``attnscope`` command line.

Each subcommand lives in its own module of this package with a ``register(subparsers)`` function
that adds its parser and sets ``func``. Errors that attnscope raises on purpose become one line on
stderr and exit code 2; nothing else is caught.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Optional, Sequence

from ..errors import AttnscopeError

#: Subcommand modules, in the order ``attnscope --help`` lists them.
COMMANDS = ["example", "explain", "check", "exercise", "plot", "view", "serve", "experiment", "analyze"]


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="attnscope",
        description="Transformer self-attention, every number visible.",
    )
    parser.add_argument("--version", action="version", version=f"attnscope {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f".{name.replace('-', '_')}", __name__).register(sub)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except AttnscopeError as e:
        print(f"attnscope {args.command}: error: {e}", file=sys.stderr)
        return 2
    except FileNotFoundError as e:
        print(f"attnscope {args.command}: error: file not found: {e.filename}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
