"""Pages of the encoder–decoder viewer: the single file of ``attnscope view SOURCE --target TARGET``.

    >>> from attnscope.viewer.seq2seq_page import save_html
    >>> save_html(model, "translate English to German: The cat sat.", "Die Katze sass.", "t5.html")

The page is :func:`attnscope.viewer.html.render`'s for data marked ``seq2seq`` (see
:mod:`attnscope.viewer.seq2seq`): the same script as every viewer page plus ``viewer_seq2seq.js``
and ``viewer_seq2seq_views.js``, which draw it; ``attnscope serve`` shows T5 and BART the page of
:func:`attnscope.viewer.html.render_server_page` with ``seq2seq=True`` (a source box and a target box).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

from ..config import is_seq2seq
from ..errors import InputError
from ..i18n import error
from .html import render, write_page
from .seq2seq import seq2seq_view_data


def save_html(model, source: str, target: str, path: Union[str, Path], *, decimals: int = 4,
              lang: str = "en") -> Path:
    """Write the page of one (source, target) pair to ``path``; return the path."""
    return write_page(path, render(seq2seq_view_data(model, source, target, decimals=decimals), lang=lang))


def cli_page(model, text: str, target: Optional[str], *, compare: Optional[str] = None,
             decimals: int = 4, lang: str = "en") -> Optional[str]:
    """What ``attnscope view`` writes for ``model``: the encoder–decoder page of (``text``,
    ``target``), or None for a model without a decoder over a source (the ordinary page).
    InputError when the two do not fit: a target for an encoder or decoder, a T5/BART model
    without a target, or ``--compare`` (the context view) with one."""
    if not is_seq2seq(model):
        if target is not None:
            raise error(InputError, "errors.viewer_target_one_text", name=model.name, family=model.family)
        return None
    if target is None:
        where = getattr(model, "path", None) or model.name
        raise error(InputError, "errors.viewer_give_target", name=model.name, where=where)
    if compare is not None:
        raise error(InputError, "errors.viewer_compare_seq2seq")
    return render(seq2seq_view_data(model, text, target, decimals=decimals), lang=lang)
