"""Renderers of a :class:`~attnscope.explain.doc.Worked`: ``rich`` (terminal tables), ``markdown``,
``latex`` and ``json``. All take the same object; only the look differs. They read it as data and
import only :mod:`..blocks`, never :mod:`..doc`, which imports them."""

from __future__ import annotations

import sys

from .base import FORMATS, check_options


def render(w, format: str = "markdown", lang: str = "en", decimals: int = 4, width: int = 100) -> str:
    """The text of ``w`` in ``format``; "rich" gives the terminal layout without colour codes."""
    check_options(format, lang, decimals)
    if format == "markdown":
        from .markdown import render as r
        return r(w, lang, decimals)
    if format == "latex":
        from .latex import render as r
        return r(w, lang, decimals)
    if format == "json":
        from .jsondoc import render as r
        return r(w, lang, decimals)
    from .terminal import render_text
    return render_text(w, lang, decimals, width=width)


def print_worked(w, format: str = "rich", lang: str = "en", decimals: int = 4, file=None) -> None:
    """Print ``w``: "rich" through a rich Console (colours on a terminal), others as plain text."""
    check_options(format, lang, decimals)
    if format == "rich":
        from .terminal import print_rich
        print_rich(w, lang, decimals, file=file)
        return
    text = render(w, format, lang, decimals)
    (file or sys.stdout).write(text)


__all__ = ["FORMATS", "render", "print_worked"]
