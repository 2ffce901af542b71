"""The system fonts the test Chromium may use: this machine's fonts less every one that draws CJK.

The embedded CJK fonts (the viewer's, the docs site's) exist for machines without CJK system
fonts, and the glyph checks (:mod:`tests.browser.cjk_glyphs`) can only fail where a missing web
font would show boxes. So that they mean the same on every machine, Chromium is launched with a
fontconfig configuration of its own (``FONTCONFIG_FILE``) that lists links to the machine's font
files minus those whose character map holds a CJK ideograph, kana or hangul (read with fontTools;
font collections, ``.ttc``, are left out whole: CJK fonts come as collections). Latin text is drawn
with the usual system fonts; a CJK character that the page's own font does not draw falls back to
a box, whatever is installed.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from xml.sax.saxutils import escape

#: Where fontconfig looks for fonts on Debian-like systems (and the user's own folders).
FONT_DIRS = ("/usr/share/fonts", "/usr/local/share/fonts", "~/.fonts", "~/.local/share/fonts")
#: One character of each CJK script: a font that has any of them is left out.
PROBES = (0x6211, 0x4E00, 0x3042, 0x30A2, 0xD55C)

_env: dict[str, str] | None = None


def draws_cjk(path: Path) -> bool:
    """Whether the font file's character map has a CJK character (unreadable files count as yes)."""
    from fontTools.ttLib import TTFont

    try:
        with TTFont(str(path), lazy=True, fontNumber=0) as font:
            cmap = font.getBestCmap() or {}
    except Exception:  # a broken or unknown file: leave it out rather than risk a CJK font
        return True
    return any(cp in cmap for cp in PROBES)


def font_files(dirs=FONT_DIRS) -> list[Path]:
    """The .ttf/.otf files under ``dirs``."""
    found: list[Path] = []
    for d in dirs:
        root = Path(d).expanduser()
        if root.is_dir():
            found += [p for p in sorted(root.rglob("*")) if p.suffix.lower() in (".ttf", ".otf") and p.is_file()]
    return found


def fontconfig_file(root: Path, fonts: list[Path]) -> Path:
    """A fontconfig configuration in ``root`` whose only fonts are (links to) ``fonts``."""
    folder = root / "fonts"
    folder.mkdir(parents=True, exist_ok=True)
    for i, f in enumerate(fonts):
        (folder / f"{i:03d}-{f.name}").symlink_to(f)
    conf = root / "fonts.conf"
    conf.write_text('<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n'
                    f"  <dir>{escape(str(folder))}</dir>\n  <cachedir>{escape(str(root / 'cache'))}</cachedir>\n"
                    "</fontconfig>\n", encoding="utf-8")
    return conf


def sandbox_env(dirs=None) -> dict[str, str]:
    """``{"FONTCONFIG_FILE": …}``: the fonts under ``dirs`` (default: this machine's, made once per
    process) that draw no CJK character, in a temporary folder."""
    global _env
    if dirs is None and _env is not None:
        return dict(_env)
    fonts = [f for f in font_files(FONT_DIRS if dirs is None else dirs) if not draws_cjk(f)]
    env = {"FONTCONFIG_FILE": str(fontconfig_file(Path(tempfile.mkdtemp(prefix="attnscope-fonts-")), fonts))}
    if dirs is None:
        _env = env
    return dict(env)


def browser_env() -> dict[str, str]:
    """The environment to launch the test Chromium with: this process's, with the font sandbox."""
    return dict(os.environ, **sandbox_env())
