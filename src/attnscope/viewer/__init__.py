"""The interactive attention viewer: one self-contained HTML file, also served by ``attnscope serve``.

    >>> import attnscope
    >>> from attnscope import viewer
    >>> tr = attnscope.load().trace(["The bank of the river.", "Money in the bank."])
    >>> viewer.save_html(tr, "attention.html", compare=True)    # open it in any browser, offline

The page has five views: the head view (tokens on two sides, lines weighted by attention, layer
selector, head toggles), the model view (a thumbnail of every layer × head), the matrix view (one
head's weights as a heatmap, max-pooled when cells are smaller than a pixel, zoomable, exact values
on hover), the step view (for a query token: raw score, scaled score, exp and weight of every key,
and the weighted sum, with the numbers of ``attnscope explain``) and the context view (how one
token's vector differs between two texts, layer by layer). ``attnscope serve`` holds long texts and
the page reads them on demand (:mod:`attnscope.viewer.held_api`). Every view exports as PNG and
SVG. See :mod:`attnscope.viewer.data` for what the file stores and how exact it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

from . import data as _data
from .html import iframe, render, render_server_page, write_page


def to_html(trace, *, compare=None, token: Optional[str] = None, decimals: int = 4,
            title: Optional[str] = None, lang: str = "en") -> str:
    """The viewer page for ``trace`` as a string (see :func:`attnscope.viewer.data.build`), its
    own words in ``lang`` (en, zh; the page has a switch)."""
    return render(_data.build(trace, compare=compare, token=token, decimals=decimals), title=title, lang=lang)


def save_html(trace, path: Union[str, Path], **kw) -> Path:
    """Write :func:`to_html` to ``path`` (UTF-8); return the path."""
    return write_page(path, to_html(trace, **kw))


def repr_html(trace, *, height: int = 640) -> str:
    """What ``Trace._repr_html_`` shows in Jupyter: the viewer in an isolated iframe.

    A trace without q, k, v of every layer shows its repr and why there is no viewer.
    """
    import html as _html

    from ..errors import AttnscopeError
    try:
        return iframe(to_html(trace), height=height)
    except AttnscopeError as e:
        return (f"<pre>{_html.escape(repr(trace))}</pre><p style=\"color:#667085\">attnscope viewer: "
                f"{_html.escape(str(e))}</p>")


__all__ = ["to_html", "save_html", "repr_html", "render", "render_server_page", "iframe"]
