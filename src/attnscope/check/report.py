"""A check report as terminal text (rich), Markdown or JSON, in English or Chinese."""

from __future__ import annotations

import io
import json
import math
from decimal import Decimal

from ..errors import ConfigError
from ..explain import i18n
from ..explain.attribution_labels import lt
from ..explain.doc import COUNTING, INDEX_BASE, T
from ..explain.numbers import as_decimal, fixed, fmt, mantissa, round_half_up, short
from ..explain.render.base import Ctx
from ..i18n import error, step_name

FORMATS = ("rich", "markdown", "json")
#: The label keys of the summary table's columns (one row per answered step).
COLUMNS = ("check.col_step", "check.col_n", "check.col_correct", "check.col_rounding", "check.col_carried",
           "check.col_wrong", "check.col_blank")


def _rule(ctx: Ctx) -> str:
    """How numbers are judged, and how rows, columns and entries are counted (from 0, as explain)."""
    return ctx.label("check.rule") + ("" if ctx.lang == "zh" else " ") + ctx.label(COUNTING)


def _where(ctx: Ctx, e) -> str:
    key = "check.where_entry" if e.row_label == "-" else "check.where"  # "-": a step of one row names no row
    return ctx.text(T(key, {"step": step_name(e.step, ctx.lang), "row": e.row_label, "col": e.col_label}))


#: The report writes a correct value with at most this many decimals (a 29-decimal answer is judged
#: exactly, but its correct value is shown to 17).
SHOWN_DECIMALS = 17


def _sci(x: Decimal, sig: int, trim: bool = True) -> str:
    """``x`` with ``sig`` significant digits times a power of ten: 1.7705e44 (digits computed, never padded)."""
    if x == 0:
        return "0"
    m, e = mantissa(x, sig - 1)
    return f"{_trim(m, x.scaleb(-e)) if trim else m:f}e{e}"


def _trim(shown: Decimal, value: Decimal) -> Decimal:
    """Trailing zeros dropped only when ``shown`` is the whole value (0.500000 of exactly ½ → 0.5);
    otherwise every shown zero is a computed digit and stays."""
    return shown.normalize() if shown == value else shown


def _right(x: Decimal, w) -> str:
    """The exact value rounded (half-up) at the learner's last written place, written their way."""
    if not x.is_finite():
        return fmt(float(x), 0)
    if w.scientific:
        q = round_half_up(x, w.decimals)
        return "0" if q == 0 else _sci(x, min(_digits(q, w), SHOWN_DECIMALS + 1), trim=False)
    return fixed(round_half_up(x, min(max(w.decimals, 0), SHOWN_DECIMALS)))


def _more(x: Decimal, w) -> str:
    """The exact value with three more digits than the learner wrote (in scientific notation when
    that is how they wrote it, or when the value is too small to have three digits there)."""
    if not x.is_finite():
        return fmt(float(x), 0)
    if x == 0:
        return "0"
    if w.scientific:
        return _sci(x, w.significant + 3)
    d = min(max(w.decimals, 0) + 3, SHOWN_DECIMALS + 3)
    q = round_half_up(x, d)
    if q == 0 or q.adjusted() + d + 1 < 3:  # fewer than 3 significant digits at these places
        return _sci(x, 4)
    return fixed(_trim(q, x))


def _digits(q: Decimal, w) -> int:
    """Significant digits of the value ``q`` rounded at the learner's last written place."""
    return max(q.adjusted() + w.decimals + 1, 1) if q != 0 else w.significant


def _prec(w, x: Decimal) -> T:
    """How precisely the learner wrote a number: "3 decimals", "a whole number", "5 significant
    digits" (the digits the correct value has at the learner's last written place)."""
    if w.scientific:
        n = _digits(round_half_up(x, w.decimals), w) if x.is_finite() else w.significant
        return T("check.prec_digit" if n == 1 else "check.prec_digits", {"n": n})
    if w.decimals <= 0:
        return T("check.prec_whole", {})
    return T("check.prec_decimal" if w.decimals == 1 else "check.prec_decimals", {"d": w.decimals})


def _line(ctx: Ctx, e) -> str:
    w = e.number
    x, rr = as_decimal(e.exact_value if e.exact_value is not None else e.exact), as_decimal(e.recomputed)
    sources = ctx.label("list_sep").join(step_name(s, ctx.lang) for s in e.sources) if e.sources else "-"
    p = {"where": _where(ctx, e), "wrote": e.written, "prec": _prec(w, x), "right": _right(x, w),
         "exact": _more(x, w), "recomputed": _more(rr, w), "sources": sources}
    key = {"wrong": "check.line_wrong", "carried": "check.line_carried", "rounding": "check.line_rounding"}[e.verdict]
    return ctx.text(T(key, p))


def _convention_lines(ctx: Ctx, r) -> list:
    out = []
    for c in r.conventions:
        row = c["row_label"] if c["row_label"] != "-" else "0"
        key = "check.conv_stable" if c.get("shown") == "plain" else f"check.conv_{c['convention']}"
        out.append(ctx.text(T(key, {"step": step_name(c["step"], ctx.lang), "row": row,
                                                                 "m": fixed(_trim(round_half_up(c['m'], 4), c['m']))})))
    return out


def _problem(ctx: Ctx, r) -> str:
    p = r.problem
    kind = p.get("kind")
    if kind == "toy":
        what = p.get("example") or p.get("name") or "-"
        return ctx.text(T("check.problem_toy", {"what": what, "L": len(p.get("tokens", [])),
                                                 "tokens": " ".join(p.get("tokens", []))}))
    if kind == "rollout":
        return ctx.text(lt("check_problem", model=p["model"], layer=p["layer"], tok=p["token"], pos=p["position"],
                           text=p["text"]))
    if kind == "model":
        return ctx.text(T("check.problem_model", {"model": p["model"], "layer": p["layer"], "head": p["head"],
                                                   "tok": p["token"], "pos": p["position"],
                                                   "text": p["text"]}))
    toks, q = p.get("tokens", []), p.get("query")
    line = ctx.text(T("check.problem_scores" if p.get("d_k") else "check.problem_scores_factor",
                      {"S": len(toks), "dk": p.get("d_k"), "factor": short(p.get("factor") or 0)}))
    gap = "" if ctx.lang == "zh" else " "  # no space after a Chinese full stop
    return line if q is None else line + gap + ctx.text(T("check.problem_scores_query", {"pos": q, "tok": toks[q]}))


def _sections(ctx: Ctx, r):
    """(kind, heading, [lines]) for the wrong / carried / rounding lists, then the rows whose
    exponentials could be written two ways ("conventions")."""
    out = []
    for verdict in ("wrong", "carried", "rounding"):
        es = r.by_verdict(verdict)
        if es:
            out.append((verdict, ctx.label(f"check.sec_{verdict}"), [_line(ctx, e) for e in es]))
    if r.conventions:
        out.append(("conventions", ctx.label("check.sec_conventions"), _convention_lines(ctx, r)))
    return out


def _summary_rows(ctx: Ctx, r):
    rows = []
    for step in r.answered:
        c = r.counts(step)
        n = sum(c.values())
        rows.append([step_name(step, ctx.lang), n, c["correct"], c["rounding"], c["carried"], c["wrong"], r.blanks.get(step, 0)])
    return rows


def _verdict(ctx: Ctx, r) -> list:
    c = r.counts()
    lines = []
    fw = r.first_wrong
    if fw is not None:
        step, row = fw
        lines.append(ctx.text(T("check.first_wrong_row" if row != "-" else "check.first_wrong",
                                {"step": step_name(step, ctx.lang), "row": row})))
    elif c["carried"]:  # cannot happen: a carried entry needs a wrong one upstream
        lines.append(ctx.label("check.only_carried"))
    if r.missing:
        where = ctx.label("list_sep").join(f"{step_name(step, ctx.lang)} {n}" for step, n in r.blanks.items() if n)
        lines.append(ctx.text(T("check.missing_one" if r.missing == 1 else "check.missing",
                                {"missing": r.missing, "where": where})))
    key = "check.result_ok" if r.ok else "check.result_bad"
    lines.append(ctx.text(T(key, {"correct": c["correct"], "rounding": c["rounding"], "carried": c["carried"],
                                  "wrong": c["wrong"]})))
    return lines


def render(r, format: str = "rich", lang: str = "en") -> str:
    if format not in FORMATS:
        raise error(ConfigError, "errors.check_unknown_format", format=repr(format), formats=", ".join(FORMATS))
    if lang not in i18n.LANGS:
        raise error(ConfigError, "errors.check_unknown_lang", language=repr(lang), langs=", ".join(i18n.LANGS))
    if format == "json":
        return json.dumps(to_dict(r), ensure_ascii=False, indent=2, allow_nan=False) + "\n"
    ctx = Ctx(lang, 4, "text")
    header = [ctx.label(k) for k in COLUMNS]
    rows = _summary_rows(ctx, r)
    title = ctx.text(T("check.title", {"source": r.source}))
    if format == "markdown":
        out = [f"# {title}", "", _problem(ctx, r), "", _rule(ctx), ""]
        out.append("| " + " | ".join(header) + " |")
        out.append("|---|" + "---:|" * (len(header) - 1))
        out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
        out.append("")
        for _, head, lines in _sections(ctx, r):
            out += [f"## {head}", ""] + [f"- {ln}" for ln in lines] + [""]
        out += [f"**{ln}**" if i == 0 else ln for i, ln in enumerate(_verdict(ctx, r))]
        return "\n".join(out).rstrip() + "\n"
    buf = io.StringIO()
    print_rich(r, lang, file=buf, width=100, color=False)
    return buf.getvalue()


def print_rich(r, lang: str = "en", file=None, width=None, color: bool = True) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(file=file, width=width, highlight=False, color_system="auto" if color else None,
                      force_terminal=None if color else False)
    ctx = Ctx(lang, 4, "text")
    console.print(Text(ctx.text(T("check.title", {"source": r.source})), style="bold underline"))
    console.print(Text(_problem(ctx, r)))
    console.print(Text(_rule(ctx), style="italic"))
    tab = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for i, k in enumerate(COLUMNS):
        tab.add_column(Text(ctx.label(k)), justify="left" if i == 0 else "right", overflow="fold")
    for row in _summary_rows(ctx, r):
        style = "red" if row[5] else ("yellow" if row[4] else "")
        tab.add_row(*(Text(str(c)) for c in row), style=style)
    console.print(tab)
    marks = {"wrong": ("✗ ", "red"), "carried": ("↪ ", "yellow"), "rounding": ("~ ", "cyan"), "conventions": ("· ", "")}
    for kind, head, lines in _sections(ctx, r):
        console.print(Text(head, style="bold"))
        mark, style = marks[kind]
        for ln in lines:
            console.print(Text(mark + ln, style=style), soft_wrap=True)  # one line each: the terminal wraps
        console.print(Text(""))
    for i, ln in enumerate(_verdict(ctx, r)):
        console.print(Text(ln, style="bold green" if r.ok else ("bold red" if i == 0 else "bold")))


def to_dict(r) -> dict:
    def num(x):
        return x if math.isfinite(x) else None
    return {
        "source": r.source,
        "kind": r.kind,
        "index_base": INDEX_BASE,  # rows, columns and entries count from 0
        "problem": r.problem,
        "ok": r.ok,
        "missing": r.missing,
        "first_wrong": {"step": r.first_wrong[0], "row": r.first_wrong[1]} if r.first_wrong else None,
        "counts": r.counts(),
        "steps": {s: dict(r.counts(s), blank=r.blanks.get(s, 0)) for s in r.answered},
        "entries": [{"step": e.step, "row": e.row, "col": e.col, "row_label": e.row_label,
                     "col_label": e.col_label, "written": e.written, "decimals": e.decimals, "value": num(e.value),
                     "exact": num(e.exact), "recomputed": num(e.recomputed), "verdict": e.verdict,
                     "sources": e.sources, "convention": e.convention} for e in r.entries],
        "conventions": [{"step": c["step"], "row": c["row"], "row_label": c["row_label"],
                         "convention": c["convention"], "m": float(c["m"])} for c in r.conventions],
    }
