"""The ``attnscope`` command line.

Each subcommand lives in its own module of this package with a ``register(subparsers)`` function
that adds its parser and a ``run(args)`` function, the parser's ``func``. Errors that attnscope
raises on purpose become one line on stderr and exit code 2; nothing else is caught.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from pathlib import Path
from typing import Optional, Sequence

from ..errors import AttnscopeError, InputError
from ..i18n import LANGS, error, error_message, text, translate

#: The largest --seed every command takes (the experiments' generators take seeds below 2**31).
MAX_SEED = 2**31 - 1
#: The largest layer, head, position or dimension number an option takes: far past any model,
#: so the model's own limit is the one a user meets, while a number like 10**23 stops here.
MAX_INDEX = 1_000_000


class OptionError(AttnscopeError):
    """An option's value is outside its range. Not a ValueError on purpose: argparse turns those
    into "invalid int value" after a usage line; this one reaches :func:`main` as one sentence."""


class IntRange:
    """An argparse ``type`` for an integer option from ``low`` to ``high``: every integer option of
    every command takes one (tests/cli check that), so that a value out of range, such as
    ``--seed 99999999999999999999999``, is one sentence naming the option and its range before any
    work starts. :func:`build_parser` tells each instance the option it belongs to."""

    def __init__(self, low: int, high: int):
        self.low, self.high, self.flag = low, high, "the value"

    def __repr__(self) -> str:  # what argparse's own messages would call it
        return "integer"

    def parse(self, part: str, not_int: str, **values) -> int:
        """``part`` as an integer in range; OptionError ``not_int`` (a ``cli`` key, with ``values``)
        when it is not an integer."""
        try:
            value = int(part)
        except ValueError:
            raise error(OptionError, not_int, flag=self.flag, low=self.low, high=self.high, **values) from None
        if not self.low <= value <= self.high:
            raise error(OptionError, self.out_of_range, flag=self.flag, low=self.low, high=self.high, value=value)
        return value

    #: the ``cli`` key of a number outside the range
    out_of_range = "cli.range"

    def __call__(self, text: str) -> int:
        return self.parse(text, "cli.int_range", value=repr(text))


def full_width_comma(text: Optional[str]) -> Optional[str]:
    """The first '，' or '、' in an option's value (a Chinese input method's ',': the list would be read
    as one item), or None; the option names it in its own sentence."""
    return next((c for c in "，、" if c in (text or "")), None)


class IntList(IntRange):
    """An argparse ``type`` for comma-separated integers, each from ``low`` to ``high``."""

    def __init__(self, low: int, high: int, unique: bool = False):
        super().__init__(low, high)
        self.unique = unique

    out_of_range = "cli.int_list"

    def __call__(self, text: str) -> list[int]:  # type: ignore[override]
        sep = full_width_comma(text)  # '0，5' would be one 'integer'
        if sep is not None:
            raise error(OptionError, "cli.int_list_full_width", flag=self.flag, value=repr(text), sep=sep)
        parts = [x.strip() for x in text.split(",") if x.strip()]
        if not parts:
            raise error(OptionError, "cli.int_list_empty", flag=self.flag, low=self.low, high=self.high)
        out = []
        for x in parts:
            value = self.parse(x, "cli.int_list", value=repr(text))
            if self.unique and value in out:
                raise error(OptionError, "cli.int_twice", flag=self.flag, value=value)
            out.append(value)
        return out


def name_int_options(parser: argparse.ArgumentParser) -> None:
    """Tell every :class:`IntRange` of ``parser`` the option it reads (its longest spelling)."""
    for action in parser._actions:
        if isinstance(action.type, IntRange):
            action.type.flag = max(action.option_strings, key=len) if action.option_strings else action.dest


#: Subcommand modules, in the order ``attnscope --help`` lists them.
COMMANDS = ["example", "explain", "check", "exercise", "plot", "view", "serve", "experiment", "analyze", "evaluate-attribution",
            "lens", "patch", "circuit", "generate"]


def check_out_dir(out: Path) -> None:
    """Check (creating nothing) that --out can be made, so that it fails before the work, not after."""
    if out.exists() and not out.is_dir():
        raise error(InputError, "cli.out_not_folder", path=repr(str(out)))
    parent = out
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise error(InputError, "errors.out_dir_not_folder", path=repr(str(out)), parent=repr(str(parent)))
    if not os.access(parent, os.W_OK | os.X_OK):
        raise error(InputError, "errors.out_dir_not_writable", path=repr(str(out)), parent=repr(str(parent)))


def add_command(sub, name: str, help: str, description: str) -> argparse.ArgumentParser:
    """The subcommand ``name`` on ``sub``; its --help prints ``description`` (the command module's
    docstring) with the line breaks as written."""
    return sub.add_parser(name, help=help, description=description, formatter_class=argparse.RawDescriptionHelpFormatter)


def add_lang_option(p, help: str) -> None:
    """``--lang``, one of attnscope's languages (English by default); ``help`` says what it translates."""
    p.add_argument("--lang", choices=LANGS, default="en", help=help)


def add_overwrite_option(p, outputs: Optional[dict[str, str]] = None) -> None:
    """``--overwrite``, the switch every command that writes files takes to replace what is there
    (``overwrite=True`` of :meth:`attnscope.trace.Trace.save` is its Python spelling). ``outputs``
    ({dest: flag}) are the options without which the command writes no file (see :func:`main`)."""
    p.add_argument("--overwrite", action="store_true", help="replace output files that already exist "
                   "(without it an existing file is kept and the command stops before any work)")
    if outputs:
        p.set_defaults(overwrite_outputs=outputs)


def refuse_overwrite_alone(args, command: Optional[str]) -> None:
    """InputError when ``--overwrite`` is given but none of the command's optional outputs: it would
    replace nothing, and dropping it in silence would hide a forgotten ``-o``."""
    outputs = getattr(args, "overwrite_outputs", None)
    if outputs and args.overwrite and not any(getattr(args, dest) for dest in outputs):
        raise error(InputError, "cli.overwrite_alone", command=command, outputs="/".join(outputs.values()))


def check_new_file(path: Path, overwrite: bool, flag: str = "-o") -> None:
    """InputError, before any work, when ``path`` exists and ``overwrite`` was not asked for."""
    if not overwrite and path.is_file():
        raise error(InputError, "cli.exists", flag=flag, path=repr(str(path)))


#: The figure files a command writes (matplotlib picks the format by the suffix).
FIGURES = (".png", ".svg", ".pdf")


def check_output_file(out: Path, overwrite: bool, suffix_key: str, folder_key: str) -> Path:
    """``out``, an ``-o`` file for a figure (:data:`FIGURES`) or the numbers (``.json``), checked
    before any work: InputError by the command's own catalogue key ``suffix_key`` (``{name}``) for
    another suffix, ``folder_key`` (``{path}``, ``{folder}``) when its folder does not exist, and
    when the file exists without ``overwrite``."""
    if out.suffix.lower() not in FIGURES + (".json",):
        raise error(InputError, suffix_key, name=repr(out.name))
    if not out.parent.exists():
        raise error(InputError, folder_key, path=repr(str(out)), folder=repr(str(out.parent)))
    check_new_file(out, overwrite)
    return out


def check_new_results(folder: Path, names: Sequence[str], overwrite: bool, flag: str = "--out") -> None:
    """InputError when the folder cannot be made (:func:`check_out_dir`), or already holds one of
    ``names`` (an earlier run's results) and ``overwrite`` was not asked for."""
    check_out_dir(folder)
    if overwrite or not folder.is_dir():
        return
    there = [n for n in names if (folder / n).exists()]
    if there:
        raise error(InputError, "cli.results_there", flag=flag, path=repr(str(folder)), names=", ".join(there))


def figure_dpi(args, outs: Sequence[Path]) -> int:
    """``--dpi`` (150 when not given), refused when no file of ``outs`` is a figure: it would be
    dropped, as lens's and patch's .json numbers and printed table have no resolution."""
    if args.dpi is not None and not any(out.suffix.lower() in FIGURES for out in outs):
        raise error(InputError, "cli.dpi_no_figure", dpi=args.dpi)
    return 150 if args.dpi is None else args.dpi


def save_figure(fig, out: Path, dpi: int) -> None:
    """Write a matplotlib figure to ``out`` (its suffix picks PNG, SVG or PDF); InputError naming
    the file when it cannot be written."""
    try:
        fig.savefig(out, dpi=dpi)
    except OSError as e:
        raise error(InputError, "cli.cannot_write", path=out, why=e.strerror or e) from None


def write_text(file, text: str, key: str, /, **values) -> None:
    """Write ``text`` to ``file`` (UTF-8); InputError by the catalogue key ``key`` (with ``values``, and
    ``why``: the system's reason) when it cannot be written."""
    try:
        Path(file).write_text(text, encoding="utf-8")
    except OSError as e:
        raise error(InputError, key, why=e.strerror or e, **values) from None


def check_device(device: Optional[str], flag: str = "--device") -> Optional[str]:
    """``device`` if torch can use it here (cpu, cuda, cuda:N, mps), else InputError saying why."""
    if device is None:
        return None
    import torch
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise error(InputError, "cli.not_device", flag=flag, device=repr(device)) from None
    if dev.type == "cpu":
        return device
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise error(InputError, "cli.no_cuda_build" if torch.version.cuda is None else "cli.no_cuda", flag=flag,
                        device=device)
        n = torch.cuda.device_count()
        if dev.index is not None and dev.index >= n:
            raise error(InputError, "errors.cli_cuda_index_one" if n == 1 else "errors.cli_cuda_index", flag=flag,
                        device=device, n=n, last=n - 1)
        return device
    if dev.type == "mps":
        if not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise error(InputError, "errors.cli_no_mps", flag=flag, device=device)
        return device
    raise error(InputError, "errors.cli_device_type", flag=flag, device=device, type=dev.type)


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose own errors (invalid choice, a required argument, an invalid value)
    come out in ``lang`` (its subcommands' parsers are of this class too; :func:`build_parser`
    sets their language): argparse's fixed English patterns are read back through the ``cli``
    table's ``cli.argparse_*`` keys. In English, argparse's own line, unchanged."""

    lang = "en"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # a value that starts with a negative number ('--scores -1.5,2,3', '-X "-1,0;0,1"') is a value,
        # not an unknown option ('expected one argument'): argparse's own pattern takes a lone number only
        self._negative_number_matcher = re.compile(r"^-(\d|\.\d|inf\b)")

    def error(self, message: str):
        if self.lang == "en":
            super().error(message)
        self.print_usage(sys.stderr)
        command = self.prog.split(" ", 1)[1] if " " in self.prog else None
        self.exit(2, error_line(command, translate(message, self.lang) or message, self.lang) + "\n")


def build_parser(lang: str = "en") -> argparse.ArgumentParser:
    from .. import __version__

    parser = Parser(
        prog="attnscope",
        description="Transformer self-attention, every number visible.",
    )
    parser.add_argument("--version", action="version", version=f"attnscope {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        command = importlib.import_module(f".{name.replace('-', '_')}", __name__)
        command.register(sub)
        sub.choices[name].set_defaults(func=command.run)
    for p in sub.choices.values():  # the module docstrings are reST; --help is plain text
        p.description = plain_text(p.description)
        name_int_options(p)
        if isinstance(p, Parser):
            p.lang = lang
    parser.lang = lang
    return parser


def given_options(args: argparse.Namespace, command: str) -> list[str]:
    """The options of ``command`` (their longest spelling, in the parser's order) that ``args`` holds a
    value other than the default for: what the user gave, for a mode that reads only some of them."""
    subs = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return [max(a.option_strings, key=len) for a in subs.choices[command]._actions
            if a.option_strings and a.dest != "help" and getattr(args, a.dest, a.default) != a.default]


def plain_text(doc: Optional[str]) -> Optional[str]:
    """A docstring for --help: reST literals ``x`` and `x` written as plain x."""
    if not doc:
        return doc
    return re.sub(r"`{1,2}([^`\n]+?)`{1,2}", r"\1", doc)


def lang_of(words: Sequence[str]) -> str:
    """The language ``--lang`` asks for among the command-line ``words`` ("en" without one), read
    before argparse so that an option's own error can be in it too."""
    lang = "en"
    for i, w in enumerate(words):
        if w == "--lang" and i + 1 < len(words):
            lang = words[i + 1]
        elif w.startswith("--lang="):
            lang = w.split("=", 1)[1]
    return lang if lang in LANGS else "en"


def error_line(command: Optional[str], message: str, lang: str = "en") -> str:
    """The one line an error prints: ``attnscope COMMAND: error: MESSAGE``, its lead-in in
    ``lang``; ``message`` is already in ``lang`` where it can be (:func:`attnscope.i18n.error_message`)."""
    return text("cli.error", lang, command=command, message=message) if command else \
        text("cli.error_top", lang, message=message)


def main(argv: Optional[Sequence[str]] = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    lang = lang_of(words)
    parser = build_parser(lang)
    command = next((w for w in words if w in COMMANDS), None)  # the subcommand: no top-level option takes a value
    try:
        args = parser.parse_args(argv)  # an option out of its range: OptionError, one sentence as the commands' own
        if not getattr(args, "func", None):
            parser.print_help()
            return 0
        refuse_overwrite_alone(args, command)
        return int(args.func(args) or 0)
    except AttnscopeError as e:
        print(error_line(command, error_message(e, lang), lang), file=sys.stderr)
        return 2
    except FileNotFoundError as e:
        print(error_line(command, text("cli.file_not_found", lang, name=e.filename), lang), file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM where a command turns it into this
        import signal
        signum = getattr(e, "signum", signal.SIGINT)
        print(text("cli.interrupted", lang) if signum == signal.SIGINT else f"stopped by {signal.Signals(signum).name}",
              file=sys.stderr)
        return 128 + int(signum)
