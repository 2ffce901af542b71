"""Line breaks for prose that mixes Chinese and Latin words, for the terminal layout.

rich breaks a line only at spaces, so to it a Chinese sentence is one long word: it moves the whole
sentence to the next line, leaving a lone "float64" on the line before, and then cuts the sentence
wherever the width runs out. Chinese may break between any two characters, except before closing
punctuation (，。) and after opening punctuation (（《), the rule Japanese typesetting calls kinsoku
(here with its common characters only). Latin words and numbers still break only at spaces, and
beside a Chinese character only where they end or begin (a label such as ``4:喜`` stays whole).
"""

from __future__ import annotations

import unicodedata

from rich.cells import cell_len, chop_cells

NO_LINE_START = frozenset("，。、；：！？）》」』】…,.;:!?)")
NO_LINE_END = frozenset("（《「『【(")


def wide(c: str) -> bool:
    """True for a character two cells wide (Chinese, Japanese, Korean, full-width forms)."""
    return unicodedata.east_asian_width(c) in "WF"


def has_wide(text: str) -> bool:
    return any(wide(c) for c in text)


def units(text: str) -> list[str]:
    """``text`` cut where a line may break: runs of spaces, runs of narrow characters (a word, a
    number), single wide characters; closing punctuation stays with what comes before it, opening
    punctuation with what comes after. ``"".join(units(text)) == text``."""
    out: list[str] = []
    for c in text:
        last = out[-1][-1] if out else ""
        glue = bool(out) and (
            (c.isspace() and last.isspace())
            or (not c.isspace() and not last.isspace()
                and ((not wide(c) and not wide(last)) or c in NO_LINE_START or last in NO_LINE_END
                     or (wide(c) and not wide(last) and not last.isalnum())
                     or (wide(last) and not wide(c) and not c.isalnum()))))
        if glue:
            out[-1] += c
        else:
            out.append(c)
    return out


def break_lines(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` terminal cells, filled greedily at the breaks
    :func:`units` allows; spaces at a break are dropped, and a piece wider than a line is cut."""
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for u in units(paragraph):
            if cell_len(line + u) <= width:
                line += u
            elif u.isspace():
                continue  # a break falls here: the spaces go
            else:
                if line.strip():
                    lines.append(line.rstrip())
                *full, line = chop_cells(u, width) if cell_len(u) > width else [u]
                lines += full
        lines.append(line.rstrip())
    return lines
