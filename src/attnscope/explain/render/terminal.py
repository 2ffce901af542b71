"""The terminal layout, drawn with rich: a rule per step, matrices as boxed tables, the arithmetic
as aligned lines. Nothing is parsed as rich markup (tokens such as ``[CLS]`` stay literal)."""

from __future__ import annotations

import io
from typing import Optional

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from ..blocks import Matrix, Para, T, Table
from .base import Ctx, grid, text_blocks
from .breaks import break_lines, has_wide
from .lines import text_lines


def _renderables(w, ctx: Ctx, width: int):
    yield Text(ctx.text(w.title), style="bold underline")
    yield from _blocks(ctx, w.intro, width)
    for n, step in enumerate(w.steps, 1):
        yield Text("")
        yield Text(ctx.text(T("step_n", {"n": n, "title": step.title})), style="bold cyan")
        yield from _blocks(ctx, step.blocks, width)


def _para(ctx: Ctx, b: Para) -> list:
    style = {"note": "italic", "warn": "bold yellow"}.get(b.style, "")
    prefix = "※ " if b.style == "note" else ("! " if b.style == "warn" else "")
    text = prefix + ctx.text(b.text)
    return [Wrapped(text, style) if has_wide(text) else Text(text, style=style)]


class Wrapped:
    """A paragraph with Chinese in it, broken by :func:`.breaks.break_lines` at the console's width
    (rich alone breaks only at spaces)."""

    def __init__(self, text: str, style: str) -> None:
        self.text, self.style = text, style

    def __rich_console__(self, console, options):
        yield Text("\n".join(break_lines(self.text, options.max_width)), style=self.style)


def _captioned(draw, width: int):
    return lambda ctx, b: ([Text(ctx.text(b.caption), style="italic")] if b.caption is not None else []) + \
        draw(ctx, b, width)


def _blocks(ctx: Ctx, blocks, width: int) -> list:
    """The step's renderables, a blank line before each block and each group of consecutive expansions
    (:func:`.base.text_blocks` puts its blank lines after them)."""
    out = text_blocks(ctx, blocks, para=_para, formula=lambda ctx, b: [Text("  " + b.text, style="green")],
                      matrix=_captioned(matrix, width), table=_captioned(table, width),
                      expansion=lambda ctx, b: ["  " + line for line in text_lines(ctx, b, width=width - 4)],
                      group=lambda lines: [Text("\n".join(lines))])
    return [Text("") if isinstance(x, str) else x for x in [""] + out[:-1]] if out else []


def _grid(header: list, rows: list, width: int) -> list:
    """Rich tables of cells already written (Text): the first column left-aligned, the others right.
    One table, or, when it is wider than ``width`` characters, its columns in blocks that fit, each
    block led by the first column: rich would otherwise cut the numbers to "-0.03…"."""
    widths = [max(cell_len(line) for c in column for line in c.plain.split("\n")) for column in zip(header, *rows)]
    blocks: list = [[]]
    used = widths[0]
    for i in range(1, len(widths)):
        if blocks[-1] and used + 3 + widths[i] > width:  # padding, the box's blank divider, padding
            blocks.append([])
            used = widths[0]
        blocks[-1].append(i)
        used += 3 + widths[i]
    tables: list = []
    for block in blocks:
        tab = RichTable(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        for i in [0, *block]:
            tab.add_column(header[i], justify="left" if i == 0 else "right")
        for row in rows:
            tab.add_row(*[row[i] for i in [0, *block]])
        tables += [Text(""), tab] if tables else [tab]
    return tables


def matrix(ctx: Ctx, m: Matrix, width: int) -> list:
    as_int, vals, rows, cols = grid(m)
    return _grid([Text(m.sym.text if m.sym else "", style="bold")] + [Text(str(c)) for c in cols],
                 [[Text(str(r))] + [Text(ctx.cell(x, as_int, m.exact)) for x in row] for r, row in zip(rows, vals)],
                 width)


def table(ctx: Ctx, t: Table, width: int) -> list:
    return _grid([Text(ctx.text(h)) for h in t.header], [[Text(ctx.text(c)) for c in row] for row in t.rows], width)


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
