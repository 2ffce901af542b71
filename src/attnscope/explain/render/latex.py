"""A complete LaTeX document (amsmath): a subsection per step, matrices as labelled arrays, the
arithmetic in ``align*``. Tokens and Chinese labels need XeLaTeX with xeCJK, which the preamble
loads when the text has CJK characters."""

from __future__ import annotations

import re

from ..blocks import Matrix, Para, T, Table
from ..numbers import matrix_is_int
from .base import Ctx, tex_escape, text_blocks
from .lines import expansion

TERMS_PER_LINE = 4


def render(w, lang: str = "en", decimals: int = 4) -> str:
    ctx = Ctx(lang, decimals, "tex")
    body = [rf"\section*{{{ctx.text(w.title)}}}", ""]
    body += _blocks(ctx, w.intro)
    for n, step in enumerate(w.steps, 1):
        body += [rf"\subsection*{{{ctx.text(T('step_n', {'n': n, 'title': step.title}))}}}", ""]
        body += _blocks(ctx, step.blocks)
    text = "\n".join(body)
    cjk = re.search(r"[\u3000-\u9fff\uff00-\uffef]", text) is not None
    pre = [r"% " + ctx.label("latex.compile"),
           r"\documentclass{article}",
           r"\usepackage{amsmath,amssymb}",
           r"\usepackage[margin=2cm]{geometry}"]
    if cjk:
        pre.append(r"\usepackage{xeCJK}")
    pre += [r"\allowdisplaybreaks", r"\begin{document}", ""]
    return "\n".join(pre) + "\n" + text.rstrip() + "\n\n\\end{document}\n"


def _para(ctx: Ctx, b: Para) -> list:
    text = ctx.text(b.text)
    if b.style == "note":
        text = r"\emph{" + text + "}"
    elif b.style == "warn":
        text = r"\textbf{" + tex_escape(ctx.label("warning")) + "} " + text
    return [text]


def _blocks(ctx: Ctx, blocks) -> list:
    return text_blocks(ctx, blocks, para=_para, formula=lambda ctx, b: [r"\[", b.tex, r"\]"],
                       matrix=matrix, table=table, expansion=_align_lines,
                       group=lambda lines: [r"\begin{align*}", " \\\\\n".join(lines), r"\end{align*}"])


def _align_lines(ctx: Ctx, b) -> list:
    lhs, chain = expansion(ctx, b)
    lines = []
    for n, terms in enumerate(chain):
        chunks = [terms[i:i + TERMS_PER_LINE] for i in range(0, len(terms), TERMS_PER_LINE)]
        for c, chunk in enumerate(chunks):
            head = (lhs if n == 0 and c == 0 else "") + (" &= " if c == 0 else r" &\quad + ")
            lines.append(head + " + ".join(chunk))
    return lines


def _label(ctx: Ctx, s) -> str:
    return rf"\text{{{tex_escape(s)}}}"


def matrix(ctx: Ctx, m: Matrix) -> list:
    as_int = m.as_int if m.as_int is not None else matrix_is_int(m.values)
    vals = m.values if m.values.ndim == 2 else m.values[None, :]
    rows = m.rows or [str(i) for i in range(vals.shape[0])]
    cols = m.cols or [str(j) for j in range(vals.shape[1])]
    lines = []
    if m.caption is not None:
        lines += [ctx.text(m.caption), ""]
    lhs = (m.sym.tex + " = ") if m.sym is not None else ""
    lines += [r"\[", lhs + r"\begin{array}{l|" + "r" * len(cols) + "}",
              " & " + " & ".join(_label(ctx, c) for c in cols) + r" \\ \hline"]
    for r, row in zip(rows, vals):
        lines.append(_label(ctx, r) + " & " + " & ".join(ctx.cell(x, as_int, m.exact) for x in row) + r" \\")
    lines += [r"\end{array}", r"\]"]
    return lines


def table(ctx: Ctx, t: Table) -> list:
    lines = []
    if t.caption is not None:
        lines += [ctx.text(t.caption), ""]
    lines += [r"\begin{center}", r"\begin{tabular}{l" + "r" * (len(t.header) - 1) + "}",
              " & ".join(ctx.text(h) for h in t.header) + r" \\ \hline"]
    for row in t.rows:
        lines.append(" & ".join(ctx.text(c) for c in row) + r" \\")
    lines += [r"\end{tabular}", r"\end{center}"]
    return lines
