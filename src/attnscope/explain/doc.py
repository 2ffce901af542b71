"""A worked calculation as data, independent of how it is shown.

A :class:`Worked` is a title, some introductory blocks and a list of :class:`Step` s; each step is a
list of blocks (:mod:`.blocks`: text, formulas, matrices, tables, written-out arithmetic). The
renderers in :mod:`.render` turn the same object into a terminal table, Markdown, LaTeX or JSON;
they read the blocks and never this module, so that nothing imports back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from . import blocks
from .blocks import *  # noqa: F403  (every block, re-exported: the lessons import them from here)
from .blocks import COUNTING, Para, T, t

__all__ = ["Worked", *blocks.__all__]


@dataclass
class Worked:
    """A whole worked calculation.

    ``kind``: "toy", "row" or "scaling". ``values``: the exact float64 results by name (what the
    checker compares with). ``meta``: facts shown in the header and written to JSON.
    """

    kind: str
    title: T
    intro: list
    steps: list
    values: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        # One counting convention for everything shown, stated once in every output (and in JSON).
        if not any(isinstance(b, Para) and b.text.key == COUNTING for b in self.intro):
            self.intro = list(self.intro[:1]) + [Para(t(COUNTING), style="note")] + list(self.intro[1:])

    def render(self, format: str = "markdown", lang: str = "en", decimals: int = 4, **kw) -> str:
        """The text of this calculation in ``format`` ("rich", "markdown", "latex", "json"); for LaTeX,
        ``latex_mode="document"`` (default), ``"fragment"`` or ``"beamer"``."""
        from .render import render
        return render(self, format=format, lang=lang, decimals=decimals, **kw)

    def print(self, format: str = "rich", lang: str = "en", decimals: int = 4, file=None,
              latex_mode: Optional[str] = None) -> None:
        """Print to the terminal (rich, with colours when the terminal has them) or ``file``."""
        from .render import print_worked
        print_worked(self, format=format, lang=lang, decimals=decimals, file=file, latex_mode=latex_mode)

    def to_dict(self, lang: str = "en", decimals: int = 4) -> dict:
        """A JSON-ready dict: every number unrounded; ±inf as None (see the JSON renderer)."""
        from .render.jsondoc import to_dict
        return to_dict(self, lang=lang, decimals=decimals)

    def __str__(self) -> str:
        return self.render("markdown")
