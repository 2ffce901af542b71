"""Markdown for blog posts and slides: headings per step, matrices as tables, formulas as code
spans, the written-out arithmetic in code blocks (so columns stay aligned in any viewer)."""

from __future__ import annotations

from ..blocks import Matrix, Para, T, Table
from .base import Ctx, grid, text_blocks
from .lines import text_lines


def render(w, lang: str = "en", decimals: int = 4) -> str:
    ctx = Ctx(lang, decimals, "text")
    out = [f"# {ctx.text(w.title)}", ""]
    out += _blocks(ctx, w.intro)
    for n, step in enumerate(w.steps, 1):
        out += [f"## {ctx.text(T('step_n', {'n': n, 'title': step.title}))}", ""]
        out += _blocks(ctx, step.blocks)
    return "\n".join(out).rstrip() + "\n"


def _cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def _para(ctx: Ctx, b: Para) -> list:
    text = ctx.text(b.text)
    if b.style == "note":
        text = "> " + text.replace("\n", "\n> ")
    elif b.style == "warn":
        text = "> **" + ctx.label("warning") + "** " + text
    return [text]


def _blocks(ctx: Ctx, blocks) -> list:
    return text_blocks(ctx, blocks, para=_para, formula=lambda ctx, b: [f"`{b.text}`"],
                       matrix=matrix, table=table, expansion=text_lines,
                       group=lambda lines: ["```text", *lines, "```"])


def _grid_lines(ctx: Ctx, caption, header: list, rows: list) -> list:
    """A Markdown table of cells already written: the caption, the header, the first column left-aligned."""
    lines = [f"*{ctx.text(caption)}*", ""] if caption is not None else []
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" + "---:|" * (len(header) - 1))
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def matrix(ctx: Ctx, m: Matrix) -> list:
    as_int, vals, rows, cols = grid(m)
    corner = f"**{m.sym.text}**" if m.sym is not None else ""
    return _grid_lines(ctx, m.caption, [corner] + [_cell(c) for c in cols],
                       [[_cell(r)] + [ctx.cell(x, as_int, m.exact) for x in row] for r, row in zip(rows, vals)])


def table(ctx: Ctx, t: Table) -> list:
    return _grid_lines(ctx, t.caption, [_cell(ctx.text(h)) for h in t.header],
                       [[_cell(ctx.text(c)) for c in row] for row in t.rows])
