"""The CJK glyph checks on a machine that has a CJK system font, and the font sandbox.

The "machine" is a folder with a few of this machine's Latin fonts and a copy of attnscope's
bundled CJK font renamed "Machine CJK" (an installed Noto CJK, say), given to Chromium as its only
fonts. There, a page's own CJK font is still the one that draws its CJK text (the check passes), and
a page whose font is missing is still reported: drawn with "Machine CJK", no box to see, but not the
page's family. The sandbox (tests/browser/font_sandbox.py, how every test Chromium is launched) made
from the same folder leaves the CJK font out, so a missing page font is drawn as boxes, as on a
machine without CJK fonts; the page's own font passes there too.
"""

from __future__ import annotations

import base64
import tempfile
from pathlib import Path

import pytest

from attnscope.fonts import CJK_FAMILY, CJK_FONT_PATH, subset_font
from tests.browser.cjk_glyphs import cjk_fallbacks
from tests.browser.font_sandbox import draws_cjk, font_files, fontconfig_file, sandbox_env
from tests.browser.playwright_once import chromium_context, watched_page

ZH = "我喜欢人工智能"
MACHINE_FAMILY = "Machine CJK"
OURS = CJK_FAMILY  # the page's font: a subset of the bundled one, under its own name


def _renamed(src: Path, dst: Path, family: str) -> Path:
    from fontTools.ttLib import TTFont

    font = TTFont(str(src))
    for rec in font["name"].names:
        if rec.nameID in (1, 4, 16):
            rec.string = family
        elif rec.nameID == 6:
            rec.string = family.replace(" ", "")
    font.save(str(dst))
    return dst


@pytest.fixture(scope="module")
def machine() -> Path:
    """A font folder: this machine's Latin fonts (a few) and a CJK system font."""
    root = Path(tempfile.mkdtemp(prefix="attnscope-machine-fonts-"))
    latin = [f for f in font_files() if not draws_cjk(f)][:6]
    assert latin, "no Latin system font found to draw the page's other text"
    for f in latin:
        (root / f.name).symlink_to(f)
    _renamed(CJK_FONT_PATH, root / "machine-cjk.otf", MACHINE_FAMILY)
    return root


def _page_html(with_font: bool) -> str:
    face = ""
    if with_font:
        data = base64.b64encode(subset_font(ZH) or b"").decode()
        face = f"@font-face {{ font-family: '{OURS}'; src: url(data:font/otf;base64,{data}) format('opentype'); }}"
    return (f"<!doctype html><html lang=zh><head><style>{face} p {{ font-family: '{OURS}', sans-serif; }}</style>"
            f"</head><body><p id=t>{ZH}</p></body></html>")


def _checks(env: dict) -> dict[bool, tuple[int, list]]:
    """{with the page's font?: (elements checked, fallbacks)} in a Chromium launched with ``env``."""
    out = {}
    with chromium_context("the font sandbox test", env=env) as ctx:
        for with_font in (True, False):
            with watched_page(ctx) as page:
                page.set_content(_page_html(with_font))
                page.evaluate("() => document.fonts.ready")
                out[with_font] = cjk_fallbacks(page, "#t", OURS)
    return out


def _families(bad: list) -> set:
    return {f["familyName"] for _, fonts in bad for f in fonts}


def test_the_sandbox_leaves_out_the_cjk_font(machine):
    assert draws_cjk(machine / "machine-cjk.otf")
    conf = Path(sandbox_env([machine])["FONTCONFIG_FILE"])
    kept = sorted(p.name for p in (conf.parent / "fonts").iterdir())
    assert kept and not any("machine-cjk" in k for k in kept), kept


def test_a_machine_with_a_cjk_font_passes_and_still_sees_a_missing_page_font(machine):
    import os

    plain = _checks(dict(os.environ, FONTCONFIG_FILE=str(fontconfig_file(Path(tempfile.mkdtemp()),
                                                                           sorted(machine.iterdir())))))
    assert plain[True] == (1, [])  # the page's own font draws its CJK text, whatever is installed
    checked, bad = plain[False]  # no page font: the machine's CJK font draws it (no box), reported
    assert checked == 1 and _families(bad) == {MACHINE_FAMILY}, bad
    sandboxed = _checks(dict(os.environ, **sandbox_env([machine])))
    assert sandboxed[True] == (1, [])
    checked, bad = sandboxed[False]  # boxes from a Latin font, as on a machine without CJK fonts
    assert checked == 1 and bad and MACHINE_FAMILY not in _families(bad), bad
