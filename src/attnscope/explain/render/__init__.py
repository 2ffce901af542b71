"""Renderers of a :class:`~attnscope.explain.doc.Worked`: ``rich`` (terminal tables), ``markdown``,
``latex`` and ``json``. All take the same object; only the look differs. They read it as data and
import only :mod:`..blocks`, never :mod:`..doc`, which imports them."""

from __future__ import annotations

import sys
from typing import Optional

from ...errors import ConfigError
from ...i18n import error
from .base import FORMATS, check_options


def render(w, format: str = "markdown", lang: str = "en", decimals: int = 4, width: int = 100,
           latex_mode: Optional[str] = None) -> str:
    """The text of ``w`` in ``format``; "rich" gives the terminal layout without colour codes.
    ``latex_mode``: "document" (default), "fragment" or "beamer" (:mod:`.latex`), LaTeX only."""
    check_options(format, lang, decimals)
    check_latex_mode(latex_mode, format)
    if format == "markdown":
        from .markdown import render as r
        return r(w, lang, decimals)
    if format == "latex":
        from .latex import render as latex
        return latex(w, lang, decimals, mode=latex_mode or "document")
    if format == "json":
        from .jsondoc import render as r
        return r(w, lang, decimals)
    from .terminal import render_text
    return render_text(w, lang, decimals, width=width)


def print_worked(w, format: str = "rich", lang: str = "en", decimals: int = 4, file=None,
                 latex_mode: Optional[str] = None) -> None:
    """Print ``w``: "rich" through a rich Console (colours on a terminal), others as plain text."""
    check_options(format, lang, decimals)
    check_latex_mode(latex_mode, format)
    if format == "rich":
        from .terminal import print_rich
        print_rich(w, lang, decimals, file=file)
        return
    text = render(w, format, lang, decimals, latex_mode=latex_mode)
    (file or sys.stdout).write(text)


def check_latex_mode(mode: Optional[str], format: str = "latex") -> None:
    """A LaTeX mode (None: the default) that is one of MODES, given with the LaTeX format only (any other
    format would drop it)."""
    from .latex import MODES
    if mode is None:
        return
    if mode not in MODES:
        raise error(ConfigError, "errors.explain_latex_mode", mode=repr(mode), choices=", ".join(MODES))
    if format != "latex":
        raise error(ConfigError, "errors.explain_latex_mode_format", mode=repr(mode), format=repr(format))


__all__ = ["FORMATS", "render", "print_worked"]
