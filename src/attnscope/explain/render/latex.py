"""LaTeX (amsmath): a subsection per step, matrices as labelled arrays, the arithmetic in ``align*``.

Three modes (``--latex-mode``): ``document`` (a whole article), ``fragment`` (the body only, for a
teacher's own document; comment lines say which packages its preamble needs) and ``beamer`` (a
presentation, one frame per step, ``allowframebreaks`` where a step is long). A text without CJK
characters compiles with pdflatex (the few non-ASCII symbols the labels use, −, ≈, √, ×, Greek
letters, are declared for pdflatex's utf8 input; xelatex and lualatex work too). A text with CJK
characters (Chinese tokens or ``--lang zh``) loads xeCJK and needs xelatex."""

from __future__ import annotations

import re

from ..blocks import Matrix, Para, T, Table
from .base import Ctx, grid, tex_escape, text_blocks
from .lines import expansion

TERMS_PER_LINE = 4

#: The output's forms: a whole article, the body alone, or beamer frames.
MODES = ("document", "fragment", "beamer")

_CJK = re.compile(r"[\u2e80-\u9fff\u3000-\u303f\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")

#: Non-ASCII symbols of the labels and how pdflatex sets them (``DeclareUnicodeCharacter``).
UNICODE_TEX = {
    "−": r"\ensuremath{-}", "×": r"\ensuremath{\times}", "·": r"\ensuremath{\cdot}", "≈": r"\ensuremath{\approx}",
    "√": r"\ensuremath{\surd}", "≤": r"\ensuremath{\leq}", "≥": r"\ensuremath{\geq}", "≠": r"\ensuremath{\neq}",
    "±": r"\ensuremath{\pm}", "∞": r"\ensuremath{\infty}", "→": r"\ensuremath{\rightarrow}",
    "←": r"\ensuremath{\leftarrow}", "↪": r"\ensuremath{\hookrightarrow}", "∑": r"\ensuremath{\sum}",
    "⌊": r"\ensuremath{\lfloor}", "⌋": r"\ensuremath{\rfloor}", "′": r"\ensuremath{'}", "∈": r"\ensuremath{\in}",
    "✓": r"\ensuremath{\checkmark}", "✗": r"\ensuremath{\times}", "⋯": r"\ensuremath{\cdots}", "∅": r"\ensuremath{\emptyset}",
    "ᵀ": r"\textsuperscript{T}", "⁽": r"\textsuperscript{(}", "⁾": r"\textsuperscript{)}", "ⁱ": r"\textsuperscript{i}",
    "⁻": r"\textsuperscript{-}", "ʰ": r"\textsuperscript{h}",
    **{c: rf"\textsuperscript{{{i}}}" for i, c in enumerate("⁰¹²³⁴⁵⁶⁷⁸⁹")},
    **{c: rf"\textsubscript{{{i}}}" for i, c in enumerate("₀₁₂₃₄₅₆₇₈₉")},
    **{c: rf"\ensuremath{{\{n}}}" for c, n in zip("αβγδεθλμπστφψωΣΔΘΛΠΦΨΩ",
                                                ("alpha beta gamma delta varepsilon theta lambda mu pi sigma tau phi "
                                                 "psi omega Sigma Delta Theta Lambda Pi Phi Psi Omega").split())},
}
#: Non-ASCII characters pdflatex's utf8 input sets by itself (Latin-1 letters, dashes, quotes, …).
_NATIVE = re.compile(r"[\u00a0-\u00ff\u2013\u2014\u2018\u2019\u201c\u201d\u2026\u2022]")


def preamble_lines(text: str, lang: str = "en", beamer: bool = False) -> list:
    """The preamble for ``text``: pdflatex-ready unless the text has CJK (then xeCJK, xelatex), or a
    character that neither pdflatex's utf8 input nor :data:`UNICODE_TEX` sets (then xelatex)."""
    ctx = Ctx(lang, 4, "tex")
    cjk = _CJK.search(text) is not None
    others = sorted({c for c in text if ord(c) > 127 and not _CJK.match(c) and not _NATIVE.match(c)
                     and c not in UNICODE_TEX})
    if cjk:
        comment = ctx.label("latex.compile_cjk")
    elif others:
        comment = ctx.label("latex.compile_xe") + " " + "".join(others)
    else:
        comment = ctx.label("latex.compile_pdf")
    used = [c for c in UNICODE_TEX if c in text]
    lines = ["% " + comment, r"\documentclass{beamer}" if beamer else r"\documentclass{article}",
             r"\usepackage{iftex}", r"\ifPDFTeX", r"\usepackage[T1]{fontenc}", r"\usepackage[utf8]{inputenc}"]
    lines += [rf"\DeclareUnicodeCharacter{{{ord(c):04X}}}{{{UNICODE_TEX[c]}}}" for c in used]
    lines += [r"\fi", r"\usepackage{amsmath,amssymb}"]
    if not beamer:
        lines.append(r"\usepackage[margin=2cm]{geometry}")
    if cjk:
        lines.append(r"\usepackage{xeCJK}")
    return lines + [r"\allowdisplaybreaks"]


def render(w, lang: str = "en", decimals: int = 4, mode: str = "document") -> str:
    """``w`` as LaTeX in ``mode`` (:data:`MODES`)."""
    ctx = Ctx(lang, decimals, "tex")
    title = ctx.text(w.title)
    parts = [(title, _blocks(ctx, w.intro))]
    for n, step in enumerate(w.steps, 1):
        parts.append((ctx.text(T("step_n", {"n": n, "title": step.title})), _blocks(ctx, step.blocks)))
    if mode == "beamer":
        body = []
        for head, blocks in parts:
            body += [rf"\begin{{frame}}[allowframebreaks]{{{head}}}", *blocks, r"\end{frame}", ""]
    else:
        body = [rf"\section*{{{title}}}", ""] + parts[0][1]
        for head, blocks in parts[1:]:
            body += [rf"\subsection*{{{head}}}", ""] + blocks
    text = "\n".join(body).rstrip() + "\n"
    pre = preamble_lines(text, lang, beamer=mode == "beamer")
    if mode == "fragment":
        needs = [ln for ln in pre[1:] if not ln.startswith((r"\documentclass", r"\allowdisplaybreaks",
                                                            r"\usepackage[margin"))]
        return "\n".join(["% " + Ctx(lang, 4, "tex").label("latex.fragment"), *("%   " + ln for ln in needs),
                          "% " + pre[0][2:], ""]) + text
    return "\n".join(pre + [r"\begin{document}", ""]) + "\n" + text + "\n\\end{document}\n"


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


def _grid_lines(ctx: Ctx, caption, begin: list, header: list, rows: list, end: list) -> list:
    """A LaTeX grid of cells already written: the caption, ``begin``, the header ruled off, the rows, ``end``."""
    lines = [ctx.text(caption), ""] if caption is not None else []
    lines += begin + [" & ".join(header) + r" \\ \hline"]
    return lines + [" & ".join(row) + r" \\" for row in rows] + end


def matrix(ctx: Ctx, m: Matrix) -> list:
    as_int, vals, rows, cols = grid(m)
    lhs = (m.sym.tex + " = ") if m.sym is not None else ""
    return _grid_lines(ctx, m.caption, [r"\[", lhs + r"\begin{array}{l|" + "r" * len(cols) + "}"],
                       [""] + [_label(ctx, c) for c in cols],
                       [[_label(ctx, r)] + [ctx.cell(x, as_int, m.exact) for x in row] for r, row in zip(rows, vals)],
                       [r"\end{array}", r"\]"])


def table(ctx: Ctx, t: Table) -> list:
    return _grid_lines(ctx, t.caption, [r"\begin{center}", r"\begin{tabular}{l" + "r" * (len(t.header) - 1) + "}"],
                       [ctx.text(h) for h in t.header], [[ctx.text(c) for c in row] for row in t.rows],
                       [r"\end{tabular}", r"\end{center}"])
