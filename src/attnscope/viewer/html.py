"""Assemble the viewer page: one HTML file with the script, the styles and the data inline."""

from __future__ import annotations

import html
import json
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Optional, Union

from ..errors import InputError
from ..fonts import font_face_css
from ..i18n import TABLES, check_lang, error
from .data import all_text


@lru_cache(maxsize=None)
def asset(name: str) -> str:
    """The text of ``viewer/assets/<name>`` (shipped as package data)."""
    # one part per joinpath: Python 3.10's Traversable.joinpath takes a single child
    return resources.files(__package__).joinpath("assets").joinpath(name).read_text(encoding="utf-8")


#: The viewer's scripts, in the order the page runs them: the core (numbers, Text, kernels), the
#: painters and helpers, the Viewer, its views, then the reading of texts the server holds and the Web Workers,
#: the attribution switch (it wraps the views' reading of weights) and the lens view (a tab of its own).
SCRIPTS = ("viewer_core.js", "viewer_paint.js", "viewer.js", "viewer_form.js", "viewer_head.js", "viewer_step.js",
           "viewer_generation.js", "viewer_matrix.js", "viewer_remote.js", "viewer_workers.js", "viewer_attribution.js",
           "viewer_lens.js")


def ui_text() -> str:
    """Every character of the page's own words in every language: the embedded font must draw
    them (the page can switch to Chinese on a machine without CJK fonts)."""
    return "".join(s for table in TABLES["viewer"].values() for s in table.values())


def script(seq2seq: bool = False) -> str:
    """The viewer's JavaScript: the core views, then the views that extend them (generation,
    matrix) and the reading of texts the server holds; the page's words after the core, for tr().
    ``seq2seq``: the encoder–decoder views last (they extend ``attnscope.mount``)."""
    # the page's own words, language -> key -> string (attnscope.i18n's catalogue, viewer*.toml)
    words = f"window.attnscope.strings = {json_for_script(TABLES['viewer'])};"
    names = SCRIPTS[1:] + (("viewer_seq2seq.js", "viewer_seq2seq_views.js") if seq2seq else ())
    return "\n".join([asset(SCRIPTS[0]), words] + [asset(name) for name in names])


def json_for_script(obj) -> str:
    """JSON that is safe inside ``<script type="application/json">``: every ``<`` escaped."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def _page(title: str, head_css: str, body: str, lang: str = "en") -> str:
    html_lang = "zh-CN" if lang == "zh" else "en"
    return (f"<!DOCTYPE html>\n<html lang=\"{html_lang}\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{html.escape(title)}</title>\n<style>\n{head_css}\n{asset('viewer.css')}</style>\n"
            f"</head>\n<body>\n{body}\n</body>\n</html>\n")


def render(data: dict, *, title: Optional[str] = None, lang: str = "en") -> str:
    """The self-contained page for ``data`` (from :func:`attnscope.viewer.data.build`, or an
    encoder–decoder pair's from :func:`attnscope.viewer.seq2seq.seq2seq_view_data`), its own
    words in ``lang`` (en, zh; the page can switch; the embedded font draws both)."""
    first, seq2seq = (data["texts"][0] if data["texts"] else None), bool(data.get("seq2seq"))
    if first is None:
        shown = ""
    elif seq2seq:
        shown = " ".join(first["source_tokens"])[:40] + " → " + " ".join(first["target_tokens"])[:30]
    else:
        shown = " ".join(first["tokens"])[:60]
    return data_page(title or f"attnscope · {data['model']} · {shown}", script(seq2seq), data,
                     font_face_css(all_text(data) + ui_text()), lang=lang)


def data_page(title: str, scripts: str, data: dict, font_css: str, lang: str = "en") -> str:
    """A self-contained viewer page: ``scripts`` (every viewer script the page needs), ``data`` as
    JSON in the page, and the viewer mounted on it with the fonts of its text (``font_css``), its
    own words in ``lang``."""
    check_lang(lang)
    body = (
        "<div id=\"attnscope-root\"></div>\n"
        f"<script type=\"application/json\" id=\"attnscope-data\">{json_for_script(data)}</script>\n"
        f"<script>\n{scripts}</script>\n"
        "<script>\nwindow.attnscopeViewer = attnscope.mount(document.getElementById('attnscope-root'),\n"
        "  JSON.parse(document.getElementById('attnscope-data').textContent),\n"
        f"  {{fontCss: {json.dumps(font_css)}, lang: {json.dumps(lang)}}});\n</script>"
    )
    return _page(title, font_css, body, lang)


#: Unicode blocks of CJK text (punctuation, kana, ideographs, Hangul, full-width forms).
CJK_RANGES = "U+2E80-9FFF,U+AC00-D7AF,U+F900-FAFF,U+FE30-FE4F,U+FF00-FFEF"


def render_server_page(model_name: str, *, api: str = "api/view", max_chars: Optional[int] = None,
                       font_url: str = "assets/attnscope-cjk.otf", lang: str = "en", seq2seq: bool = False) -> str:
    """The page of ``attnscope serve``: a short introduction with examples, a text box that asks
    the JSON API, and the same viewer under it (its toolbar's words in ``lang``); ``seq2seq``: for
    an encoder–decoder model, source and target boxes and the encoder / decoder / cross views. The
    viewer is mounted without data; the bundled CJK font is read from ``font_url``."""
    server = {"endpoint": api, "model": model_name, "maxChars": max_chars, **({"seq2seq": True} if seq2seq else {})}
    options = {"server": server, "lang": check_lang(lang)}
    body = (
        "<div id=\"attnscope-root\"></div>\n"
        f"<script>\n{script(seq2seq)}</script>\n"
        "<script>\nwindow.attnscopeViewer = attnscope.mount(document.getElementById('attnscope-root'), null,\n"
        f"  {json_for_script(options)});\n</script>"
    )
    # The served page's own words (examples, what a user types) may be any CJK text: the whole
    # bundled font, fetched from the server only when such a character is on screen. The views'
    # notes and tables, and the tooltips, say the page's own words too (a Chinese note was tofu).
    ui_font = ("@font-face{font-family:'attnscope CJK UI';font-style:normal;font-weight:400;"
               f"unicode-range:{CJK_RANGES};src:url({font_url}) format('opentype');}}\n"
               ".as-intro,.as-form,.as-form *,.as-top,.as-bar,.as-heads,.as-warn,.as-body,.as-tip"
               "{font-family:'attnscope CJK UI',system-ui,'DejaVu Sans',sans-serif}")
    return _page(f"attnscope · {model_name}", ui_font, body, lang)


def iframe(page: str, *, height: int = 640) -> str:
    """``page`` inside an ``<iframe srcdoc>``, for Jupyter: its script and styles stay isolated."""
    return (f"<iframe srcdoc=\"{html.escape(page, quote=True)}\" style=\"width:100%;height:{height}px;"
            "border:1px solid #ddd;border-radius:4px\" sandbox=\"allow-scripts allow-downloads\"></iframe>")


def write_page(path: Union[str, Path], page: str) -> Path:
    """Write ``page`` to ``path`` (UTF-8); the path, or InputError in one sentence."""
    path = Path(path)
    try:
        path.write_text(page, encoding="utf-8")
    except OSError as e:
        raise error(InputError, "errors.cli_cannot_write", path=path, why=e.strerror or e) from None
    return path
