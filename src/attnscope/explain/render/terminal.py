"""The terminal layout, drawn with rich: a rule per step, matrices as boxed tables, the arithmetic
as aligned lines. Nothing is parsed as rich markup (tokens such as ``[CLS]`` stay literal)."""

from __future__ import annotations

import io
from typing import Optional

from rich import box
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from ..blocks import Formula, Matrix, Para, T, Table
from .base import Ctx, grid
from .lines import text_lines


def _renderables(w, ctx: Ctx, width: int):
    yield Text(ctx.text(w.title), style="bold underline")
    yield from _blocks(ctx, w.intro, width)
    for n, step in enumerate(w.steps, 1):
        yield Text("")
        yield Text(ctx.text(T("step_n", {"n": n, "title": step.title})), style="bold cyan")
        yield from _blocks(ctx, step.blocks, width)


def _blocks(ctx: Ctx, blocks, width: int):
    pending: list = []  # consecutive expansions print as one group
    for b in blocks:
        if not isinstance(b, (Para, Formula, Matrix, Table)):
            pending.extend("  " + line for line in text_lines(ctx, b, width=width - 4))
            continue
        if pending:
            yield Text("")
            yield Text("\n".join(pending))
            pending = []
        yield Text("")
        if isinstance(b, Para):
            style = {"note": "italic", "warn": "bold yellow"}.get(b.style, "")
            prefix = "※ " if b.style == "note" else ("! " if b.style == "warn" else "")
            yield Text(prefix + ctx.text(b.text), style=style)
        elif isinstance(b, Formula):
            yield Text("  " + b.text, style="green")
        else:
            if b.caption is not None:
                yield Text(ctx.text(b.caption), style="italic")
            yield matrix(ctx, b) if isinstance(b, Matrix) else table(ctx, b)
    if pending:
        yield Text("")
        yield Text("\n".join(pending))


def _grid(header: list, rows: list) -> RichTable:
    """A rich table of cells already written (Text): the first column left-aligned, the others right."""
    tab = RichTable(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for i, h in enumerate(header):
        tab.add_column(h, justify="left" if i == 0 else "right")
    for row in rows:
        tab.add_row(*row)
    return tab


def matrix(ctx: Ctx, m: Matrix) -> RichTable:
    as_int, vals, rows, cols = grid(m)
    return _grid([Text(m.sym.text if m.sym else "", style="bold")] + [Text(str(c)) for c in cols],
                 [[Text(str(r))] + [Text(ctx.cell(x, as_int, m.exact)) for x in row] for r, row in zip(rows, vals)])


def table(ctx: Ctx, t: Table) -> RichTable:
    return _grid([Text(ctx.text(h)) for h in t.header], [[Text(ctx.text(c)) for c in row] for row in t.rows])


def print_rich(w, lang: str = "en", decimals: int = 4, file=None, console: Optional[Console] = None) -> None:
    console = console or Console(file=file, highlight=False, soft_wrap=False)
    ctx = Ctx(lang, decimals, "text")
    for r in _renderables(w, ctx, console.width):
        console.print(r)


def render_text(w, lang: str = "en", decimals: int = 4, width: int = 100) -> str:
    """The terminal layout as plain text (no colour codes), e.g. for tests and files."""
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, highlight=False, force_terminal=False,
                      soft_wrap=False)
    print_rich(w, lang, decimals, console=console)
    return buf.getvalue()
