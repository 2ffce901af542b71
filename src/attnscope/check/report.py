"""A check report as terminal text (rich), Markdown or JSON, in English or Chinese."""

from __future__ import annotations

import io
import json
import math

from ..errors import ConfigError
from ..explain import i18n
from ..explain.doc import T
from ..explain.numbers import fmt
from ..explain.render.base import Ctx

FORMATS = ("rich", "markdown", "json")


def _where(ctx: Ctx, e) -> str:
    if e.row_label == "-":
        return ctx.text(T("check.where_entry", {"step": e.step, "col": e.col_label}))
    return ctx.text(T("check.where", {"step": e.step, "row": e.row_label, "col": e.col_label}))


#: Decimals beyond this say nothing about a float64 value; an answer written with more is shown
#: against the exact value at this many (it is judged at float64's precision, see attnscope.check).
SHOWN_DECIMALS = 17


def _exact(x: float, d: int) -> str:
    if not math.isfinite(x):
        return fmt(x, 0)
    d = min(d, SHOWN_DECIMALS)
    return fmt(x, max(0, d), as_int=False) if d > 0 else fmt(x, 0, as_int=True)


def _more(x: float, d: int) -> str:
    """More digits than the learner wrote, trailing zeros dropped (0.711000 → 0.711)."""
    d = min(d, SHOWN_DECIMALS)
    s = fmt(x, min(max(d, 0) + 3, 10), as_int=False)
    if "." in s and "e" not in s:
        keep = max(d, 0)
        head, tail = s.split(".")
        tail = tail.rstrip("0")
        tail = tail + "0" * (keep - len(tail)) if len(tail) < keep else tail
        s = head + ("." + tail if tail else "")
    return s


def _line(ctx: Ctx, e) -> str:
    p = {"where": _where(ctx, e), "wrote": e.written, "d": e.decimals, "right": _exact(e.exact, e.decimals),
         "exact": _more(e.exact, e.decimals), "recomputed": _more(e.recomputed, e.decimals),
         "sources": ", ".join(e.sources) if e.sources else "-"}
    key = {"wrong": "check.line_wrong", "carried": "check.line_carried", "rounding": "check.line_rounding"}[e.verdict]
    return ctx.text(T(key, p))


def _problem(ctx: Ctx, r) -> str:
    p = r.problem
    kind = p.get("kind")
    if kind == "toy":
        what = p.get("example") or p.get("name") or "-"
        return ctx.text(T("check.problem_toy", {"what": what, "L": len(p.get("tokens", [])),
                                                 "tokens": " ".join(p.get("tokens", []))}))
    if kind == "model":
        return ctx.text(T("check.problem_model", {"model": p["model"], "layer": p["layer"], "head": p["head"],
                                                   "tok": f"{p['position']}:{p['token']}", "text": p["text"]}))
    return ctx.text(T("check.problem_scores", {"S": len(p.get("tokens", [])), "dk": p.get("d_k") or "-"}))


def _sections(ctx: Ctx, r):
    """(heading, [lines]) for the wrong / carried / rounding lists."""
    out = []
    for verdict, key in (("wrong", "check.sec_wrong"), ("carried", "check.sec_carried"),
                         ("rounding", "check.sec_rounding")):
        es = r.by_verdict(verdict)
        if es:
            out.append((ctx.label(key), [_line(ctx, e) for e in es]))
    return out


def _summary_rows(ctx: Ctx, r):
    rows = []
    for step in r.answered:
        c = r.counts(step)
        n = sum(c.values())
        rows.append([step, n, c["correct"], c["rounding"], c["carried"], c["wrong"], r.blanks.get(step, 0)])
    return rows


def _verdict(ctx: Ctx, r) -> list:
    c = r.counts()
    lines = []
    fw = r.first_wrong
    if fw is not None:
        step, row = fw
        lines.append(ctx.text(T("check.first_wrong_row" if row != "-" else "check.first_wrong",
                                {"step": step, "row": row})))
    elif c["carried"]:  # cannot happen: a carried entry needs a wrong one upstream
        lines.append(ctx.label("check.only_carried"))
    key = "check.result_ok" if r.ok else "check.result_bad"
    lines.append(ctx.text(T(key, {"correct": c["correct"], "rounding": c["rounding"], "carried": c["carried"],
                                  "wrong": c["wrong"]})))
    return lines


def render(r, format: str = "rich", lang: str = "en") -> str:
    if format not in FORMATS:
        raise ConfigError(f"unknown format {format!r} for check; choose one of {', '.join(FORMATS)}")
    if lang not in i18n.LANGS:
        raise ConfigError(f"unknown language {lang!r}; choose one of {', '.join(i18n.LANGS)}")
    if format == "json":
        return json.dumps(to_dict(r), ensure_ascii=False, indent=2, allow_nan=False) + "\n"
    ctx = Ctx(lang, 4, "text")
    header = [ctx.label(k) for k in ("check.col_step", "check.col_n", "check.col_correct", "check.col_rounding",
                                     "check.col_carried", "check.col_wrong", "check.col_blank")]
    rows = _summary_rows(ctx, r)
    title = ctx.text(T("check.title", {"source": r.source}))
    if format == "markdown":
        out = [f"# {title}", "", _problem(ctx, r), "", ctx.label("check.rule"), ""]
        out.append("| " + " | ".join(header) + " |")
        out.append("|---|" + "---:|" * (len(header) - 1))
        out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
        out.append("")
        for head, lines in _sections(ctx, r):
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
    console.print(Text(ctx.label("check.rule"), style="italic"))
    tab = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for i, k in enumerate(("check.col_step", "check.col_n", "check.col_correct", "check.col_rounding",
                           "check.col_carried", "check.col_wrong", "check.col_blank")):
        tab.add_column(Text(ctx.label(k)), justify="left" if i == 0 else "right")
    for row in _summary_rows(ctx, r):
        style = "red" if row[5] else ("yellow" if row[4] else "")
        tab.add_row(*(Text(str(c)) for c in row), style=style)
    console.print(tab)
    marks = {0: ("✗ ", "red"), 1: ("↪ ", "yellow"), 2: ("~ ", "cyan")}
    for n, (head, lines) in enumerate(_sections(ctx, r)):
        console.print(Text(head, style="bold"))
        verdict = [v for v in ("wrong", "carried", "rounding") if r.by_verdict(v)][n]
        mark, style = {"wrong": marks[0], "carried": marks[1], "rounding": marks[2]}[verdict]
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
        "problem": r.problem,
        "ok": r.ok,
        "first_wrong": {"step": r.first_wrong[0], "row": r.first_wrong[1]} if r.first_wrong else None,
        "counts": r.counts(),
        "steps": {s: dict(r.counts(s), blank=r.blanks.get(s, 0)) for s in r.answered},
        "entries": [{"step": e.step, "row": e.row + 1, "col": e.col + 1, "row_label": e.row_label,
                     "col_label": e.col_label, "written": e.written, "decimals": e.decimals, "value": num(e.value),
                     "exact": num(e.exact), "recomputed": num(e.recomputed), "verdict": e.verdict,
                     "sources": e.sources} for e in r.entries],
    }
