"""Markdown for blog posts and slides: headings per step, matrices as tables, formulas as code
spans, the written-out arithmetic in code blocks (so columns stay aligned in any viewer)."""

from __future__ import annotations

from ..blocks import Matrix, Para, Table
from .base import Ctx, grid, text_blocks
from .lines import text_lines


def render(w, lang: str = "en", decimals: int = 4) -> str:
    ctx = Ctx(lang, decimals, "text")
    out = [f"# {ctx.text(w.title)}", ""]
    out += _blocks(ctx, w.intro)
    for n, step in enumerate(w.steps, 1):
        out += [f"## {ctx.text(_step_title(n, step))}", ""]
        out += _blocks(ctx, step.blocks)
    return "\n".join(out).rstrip() + "\n"


def _step_title(n, step):
    from ..blocks import T
    return T("step_n", {"n": n, "title": step.title})


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


def matrix(ctx: Ctx, m: Matrix) -> list:
    as_int, vals, rows, cols = grid(m)
    corner = f"**{m.sym.text}**" if m.sym is not None else ""
    lines = []
    if m.caption is not None:
        lines += [f"*{ctx.text(m.caption)}*", ""]
    lines.append("| " + " | ".join([corner] + [_cell(c) for c in cols]) + " |")
    lines.append("|" + "---|" + "---:|" * len(cols))
    for r, row in zip(rows, vals):
        lines.append("| " + " | ".join([_cell(r)] + [ctx.cell(x, as_int, m.exact) for x in row]) + " |")
    return lines


def table(ctx: Ctx, t: Table) -> list:
    lines = []
    if t.caption is not None:
        lines += [f"*{ctx.text(t.caption)}*", ""]
    lines.append("| " + " | ".join(_cell(ctx.text(h)) for h in t.header) + " |")
    lines.append("|" + "".join("---|" if i == 0 else "---:|" for i in range(len(t.header))))
    for row in t.rows:
        lines.append("| " + " | ".join(_cell(ctx.text(c)) for c in row) + " |")
    return lines
