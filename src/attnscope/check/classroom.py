"""A class at once: :func:`check_class` judges many answers files (a folder of them, or a list), one
student per file (the student's name is the file's stem: ``wang_fang.yaml`` → ``wang_fang``), and
:class:`ClassReport` writes the class summary.

The summary has one row per student × step, in the order of the steps::

    student,file,step,entries,correct,rounding,new,carried,missing,first_mistake,status
    li_lei,li_lei.yaml,scores,9,9,0,0,0,0,,ok
    li_lei,li_lei.yaml,weights,9,6,0,1,2,0,1 (爱),new mistake

``new`` counts the mistakes made at that step (the report's "wrong"), ``carried`` the entries that
only follow from an earlier slip, ``missing`` the entries left empty (they never count as right).
``first_mistake`` is filled on the step of the student's first new mistake (with its row). A file
that cannot be checked (malformed, or every answer empty) gets one row with ``status`` ``error``
and the sentence saying why; the others are still judged.

The CSV is for programs as well as for people: its header, the ``step`` keys and the ``status``
words are the same in every language. In Chinese (``lang="zh"``) a ``step_name`` column follows
``step`` with the step's name as the Chinese report writes it::

    student,file,step,step_name,entries,…
    li_lei,li_lei.yaml,weights,注意力权重（weights）,9,…
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence, Union

from rich.cells import cell_len

from ..errors import AttnscopeError, InputError
from ..i18n import error, error_message
from .judge import Report

#: The file types an answers folder is searched for.
SUFFIXES = (".yaml", ".yml", ".json", ".toml")

COLUMNS = ("student", "file", "step", "entries", "correct", "rounding", "new", "carried", "missing",
           "first_mistake", "status")


@dataclass
class Student:
    """One student's result: the :class:`~attnscope.check.Report`, or the error that stopped it."""

    name: str
    path: Path
    report: Optional[Report] = None
    error: Optional[str] = None        # in English (the CSV's status)
    exc: Optional[AttnscopeError] = None  # the error itself, for the table in the reader's language

    @property
    def status(self) -> str:
        """``ok``, ``new mistake``, ``carried only``, ``missing`` or ``error``."""
        r = self.report
        if r is None:
            return "error"
        c = r.counts()
        if c["wrong"]:
            return "new mistake"
        if c["carried"]:
            return "carried only"
        return "missing" if r.missing else "ok"


@dataclass
class ClassReport:
    """Every student's check, in the order of the files (sorted by name within a folder)."""

    students: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(s.status == "ok" for s in self.students)

    @property
    def steps(self) -> list:
        """Every step any student answered, in the order the chains have them."""
        out: list = []
        for s in self.students:
            for step in (s.report.answered if s.report is not None else []):
                if step not in out:
                    out.append(step)
        return out

    def rows(self) -> list[dict]:
        """The summary's rows (see the module doc), as dicts keyed by :data:`COLUMNS`."""
        out = []
        for s in self.students:
            base = {"student": s.name, "file": s.path.name}
            r = s.report
            if r is None:
                out.append(dict(base, step="", entries="", correct="", rounding="", new="", carried="",
                                missing="", first_mistake="", status=f"error: {s.error}"))
                continue
            first = r.first_wrong
            for step in r.answered:
                c = r.counts(step)
                blank = r.blanks.get(step, 0)
                status = ("new mistake" if c["wrong"] else "carried" if c["carried"] else
                          "missing" if blank else "ok")
                out.append(dict(base, step=step, entries=sum(c.values()) + blank, correct=c["correct"],
                                rounding=c["rounding"], new=c["wrong"], carried=c["carried"], missing=blank,
                                first_mistake=first[1] if first is not None and first[0] == step else "",
                                status=status))
        return out

    def to_csv(self, lang: str = "en") -> str:
        """The summary CSV (see the module doc); ``lang="zh"`` adds the ``step_name`` column."""
        from ..i18n import check_lang, step_name
        rows, fields = self.rows(), list(COLUMNS)
        if check_lang(lang) != "en":
            fields.insert(fields.index("step") + 1, "step_name")
            rows = [dict(r, step_name=step_name(r["step"], lang) if r["step"] else "") for r in rows]
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
        return buf.getvalue()

    def table(self, lang: str = "en") -> tuple[list, list]:
        """(header, rows) of the class at a glance: per student and step ``✓`` (all right), ``✗n``
        (n new mistakes), ``↪n`` (n carried), ``∅n`` (n missing), joined; then the first mistake.
        The steps are named in ``lang`` (查询（Q） in Chinese)."""
        from ..explain.blocks import T
        from ..explain.render.base import Ctx
        from ..i18n import step_name
        ctx = Ctx(lang, 4, "text")
        steps = self.steps
        header = [ctx.label("check.class_student")] + [step_name(st, lang) for st in steps] + \
            [ctx.label(f"check.class_{k}") for k in ("first", "status")]
        status = {"ok": "ok", "new mistake": "new", "carried only": "carried", "missing": "missing", "error": "error"}
        body = []
        for s in self.students:
            r = s.report
            if r is None:
                why = s.error if s.exc is None else error_message(s.exc, lang)
                body.append([s.name] + [""] * len(steps) + ["", f"{ctx.label('check.status_error')}: {why}"])
                continue
            cells = []
            for step in steps:
                if step not in r.answered:
                    cells.append("")
                    continue
                c, blank = r.counts(step), r.blanks.get(step, 0)
                marks = [f"✗{c['wrong']}" if c["wrong"] else "", f"↪{c['carried']}" if c["carried"] else "",
                         f"∅{blank}" if blank else ""]
                cells.append(" ".join(m for m in marks if m) or "✓")
            first = r.first_wrong
            where = ("" if not first else step_name(first[0], lang) if first[1] == "-"  # "-": a step of one row
                     else ctx.text(T("check.class_row", {"step": step_name(first[0], lang), "row": first[1]})))
            body.append([s.name] + cells + [where, ctx.label(f"check.status_{status[s.status]}")])
        return header, body

    def render(self, format: str = "text", lang: str = "en") -> str:
        """The table as plain text (``text``), Markdown, or the CSV (``csv``; its keys stay English,
        for programs, with the steps' names in ``lang`` beside them)."""
        from ..explain.render.base import Ctx
        if format == "csv":
            return self.to_csv(lang)
        header, body = self.table(lang)
        if format == "markdown":
            lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in body]
        else:
            width = [max(cell_len(str(x)) for x in col) for col in zip(header, *body)]
            lines = ["  ".join(str(x) + " " * (w - cell_len(str(x))) for x, w in zip(row, width)).rstrip()
                     for row in [header] + body]
        return "\n".join(lines + ["", Ctx(lang, 4, "text").label("check.class_key")]) + "\n"


def answer_files(paths: Sequence[Union[str, Path]]) -> list[Path]:
    """The answers files of ``paths``: files as given, folders searched (not recursively) for
    :data:`SUFFIXES`, sorted by name. InputError for a path that does not exist, a folder without
    answers files, or two files of one student (the same stem)."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(f for f in p.iterdir() if f.is_file() and f.suffix.lower() in SUFFIXES)
            if not found:
                raise error(InputError, "errors.folder_no_answers", path=repr(str(p)), suffixes=", ".join(SUFFIXES))
            files += found
        elif p.is_file():
            files.append(p)
        else:
            raise error(InputError, "errors.not_answers", path=repr(str(p)))
    seen: dict = {}
    for f in files:
        if f.stem in seen and seen[f.stem] != f:
            raise error(InputError, "errors.check_student_twice", name=repr(f.stem), first=repr(str(seen[f.stem])),
                        second=repr(str(f)))
        seen[f.stem] = f
    return list(dict.fromkeys(files))


def check_class(paths: Sequence[Union[str, Path]]) -> ClassReport:
    """Check every answers file of ``paths`` (files and folders; see :func:`answer_files`)."""
    from .problem import check
    out = ClassReport()
    for f in answer_files(paths):
        try:
            out.students.append(Student(f.stem, f, report=check(str(f))))
        except AttnscopeError as e:
            out.students.append(Student(f.stem, f, error=str(e), exc=e))
    return out
