"""The CJK font that attnscope ships, for matplotlib figures and for the HTML viewer.

matplotlib's default font (DejaVu Sans) has no Chinese, Japanese or Korean glyphs: a token such as
``我`` would be drawn as an empty box with a "Glyph … missing" warning. attnscope bundles
``assets/fonts/attnscope-cjk.otf``, a 3.0 MB subset of Noto Sans CJK SC (SIL OFL 1.1, see
``assets/fonts/OFL.txt``; built by ``tools/make_cjk_font.py``) covering GB 2312, Big5 level 1,
JIS X 0208, KS X 1001 and every CJK character of the vocabularies of all-MiniLM-L6-v2 and
multilingual-e5-small (about 14,300 characters). Figures use DejaVu Sans first and fall back to
it per glyph, so Latin text looks as usual. Installed CJK fonts are not needed.

The viewer embeds only the glyphs of the tokens it shows (a few KB), so that an exported HTML file
renders CJK tokens in a browser on a machine without CJK fonts too.
"""

from __future__ import annotations

import base64
import io
from functools import lru_cache
from pathlib import Path
from typing import Optional

#: The bundled font file.
CJK_FONT_PATH = Path(__file__).resolve().parent / "assets" / "fonts" / "attnscope-cjk.otf"
#: Its family name (matplotlib and CSS).
CJK_FAMILY = "attnscope CJK"


@lru_cache(maxsize=1)
def register_matplotlib() -> str:
    """Add the bundled font to matplotlib's font manager (once); return its family name."""
    from matplotlib import font_manager

    font_manager.fontManager.addfont(str(CJK_FONT_PATH))
    return CJK_FAMILY


def matplotlib_rc() -> dict:
    """rcParams for :func:`matplotlib.pyplot.rc_context`: the usual sans-serif, then CJK glyphs."""
    register_matplotlib()
    return {"font.family": ["DejaVu Sans", CJK_FAMILY], "svg.fonttype": "path", "pdf.fonttype": 42}


@lru_cache(maxsize=1)
def _cmap() -> frozenset:
    from fontTools.ttLib import TTFont

    return frozenset(TTFont(str(CJK_FONT_PATH), lazy=True).getBestCmap())


def has_glyph(ch: str) -> bool:
    """True when the bundled font draws ``ch``."""
    return ord(ch) in _cmap()


def subset_chars(text: str) -> list[str]:
    """The non-ASCII characters of ``text`` that the bundled font draws, sorted."""
    return sorted({c for c in text if ord(c) >= 0x80 and has_glyph(c)})


def subset_font(text: str) -> Optional[bytes]:
    """The bundled font cut down to the non-ASCII characters of ``text`` it has (OpenType bytes).

    None when there are none, so pure-ASCII pages carry no font at all.
    """
    chars = subset_chars(text)
    if not chars:
        return None
    from fontTools import subset
    from fontTools.ttLib import TTFont

    font = TTFont(str(CJK_FONT_PATH), recalcTimestamp=False)  # same text, same bytes
    opts = subset.Options()
    opts.name_IDs = [0, 1, 2, 4, 6, 13, 14]  # keep the copyright and licence notices
    opts.layout_features = []
    opts.notdef_outline = True
    sub = subset.Subsetter(opts)
    sub.populate(text="".join(chars))
    sub.subset(font)
    buf = io.BytesIO()
    font.save(buf)
    return buf.getvalue()


def font_face_css(text: str) -> str:
    """A CSS ``@font-face`` rule with :func:`subset_font` inline as a data URL, or ``""``.

    Its ``unicode-range`` is exactly the subset's characters, so the viewer can name the family
    first in every font list: those characters are always drawn with the embedded glyphs (also on
    a machine that has CJK fonts of its own, so that every machine shows the same picture), and
    every other character with the usual system font.
    """
    data = subset_font(text)
    if data is None:
        return ""
    b64 = base64.b64encode(data).decode("ascii")
    ranges = ",".join(f"U+{ord(c):X}" for c in subset_chars(text))
    return (f"@font-face{{font-family:'{CJK_FAMILY}';font-style:normal;font-weight:400;font-display:block;"
            f"unicode-range:{ranges};src:url(data:font/otf;base64,{b64}) format('opentype');}}")
