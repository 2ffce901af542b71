"""Pages of the encoder–decoder viewer: the single file of ``attnscope view SOURCE --target TARGET``
and the page ``attnscope serve`` shows for T5 and BART (a source box and a target box).

    >>> from attnscope.viewer.seq2seq_page import save_html
    >>> save_html(model, "translate English to German: The cat sat.", "Die Katze sass.", "t5.html")

Both pages carry the same script as every viewer page plus ``viewer_seq2seq.js`` and
``viewer_seq2seq_views.js``, which draw data marked ``seq2seq`` (see :mod:`attnscope.viewer.seq2seq`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

from ..errors import InputError
from ..fonts import font_face_css
from ..i18n import check_lang, error
from .html import asset, data_page, script, server_page, ui_text, write_page
from .seq2seq import all_text, is_seq2seq, seq2seq_view_data


def seq2seq_script() -> str:
    """Every viewer script, the encoder–decoder views last (they extend ``attnscope.mount``)."""
    return "\n".join([script(), asset("viewer_seq2seq.js"), asset("viewer_seq2seq_views.js")])


def render(data: dict, *, title: Optional[str] = None, lang: str = "en") -> str:
    """The self-contained page for encoder–decoder ``data`` (:func:`~.seq2seq.seq2seq_view_data`),
    its own words in ``lang`` (en, zh; the page can switch; the embedded font draws both)."""
    first = data["texts"][0] if data["texts"] else None
    pair = (" ".join(first["source_tokens"])[:40] + " → " + " ".join(first["target_tokens"])[:30]) if first else ""
    return data_page(title or f"attnscope · {data['model']} · {pair}", seq2seq_script(), data,
                     font_face_css(all_text(data) + ui_text()), lang=lang)


def save_html(model, source: str, target: str, path: Union[str, Path], *, decimals: int = 4,
              lang: str = "en") -> Path:
    """Write the page of one (source, target) pair to ``path``; return the path."""
    return write_page(path, render(seq2seq_view_data(model, source, target, decimals=decimals), lang=lang))


def render_server_page(model_name: str, *, api: str = "api/view", max_chars: Optional[int] = None,
                       font_url: str = "assets/attnscope-cjk.otf", lang: str = "en") -> str:
    """The page of ``attnscope serve`` for an encoder–decoder model: source and target boxes that
    ask the JSON API, and the encoder / decoder / cross views under them (words in ``lang``)."""
    opts = {"server": {"endpoint": api, "model": model_name, "maxChars": max_chars, "seq2seq": True},
            "lang": check_lang(lang)}
    return server_page(model_name, seq2seq_script(), opts, font_url)


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
