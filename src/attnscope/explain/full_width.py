"""What a Chinese input method types where a file or an option wants ASCII punctuation.

A learner who writes answers in Chinese types the full-width forms without seeing the difference:
'，' '、' for ',' , '；' for ';', '。' for a decimal point, '：' after a key, an ideographic space
'　' (U+3000) to indent. YAML takes them as text, so the slip surfaced as a count that did not add
up, "not a number", or an unknown key printed as '\\u3000\\u3000sums'. Each check here names the
character and the half-width one to type instead.
"""

from __future__ import annotations

import re
from typing import Optional, Sequence

from ..errors import InputError
from ..i18n import error
from .places import Where

#: a full-width stand-in → what was meant (the catalogue names both)
SEPARATORS = "，、；"
POINT = "。"
IDEOGRAPHIC_SPACE = "\u3000"


def no_full_width_separator(cells: Sequence, where: Where) -> None:
    """InputError for a text entry holding '，', '、' or '；' (a Chinese input method's ',' and ';':
    YAML reads ``[0.3，0.7]`` as one text, once counted as one entry or named "not a number")."""
    for c, sep in ((c, s) for c in cells if isinstance(c, str) for s in SEPARATORS if s in c):
        raise error(InputError, "errors.explain_full_width_comma", where=where, value=repr(c), sep=sep)


def no_full_width_point(text: str, where: Where) -> None:
    """InputError for an entry such as ``1。5``: the Chinese full stop '。' typed as a decimal point."""
    if re.fullmatch(r"\s*[-+－＋]?[0-9０-９]*。[0-9０-９]+\s*", text):
        raise error(InputError, "errors.explain_full_width_point", where=where, value=repr(text))


def no_full_width_indent(text: str, name: str) -> None:
    """InputError for a line of a YAML file indented with the ideographic space U+3000, which YAML
    reads as part of a top-level key ('\\u3000\\u3000sums')."""
    found = re.search(rf"^[ \t]*{IDEOGRAPHIC_SPACE}", text, re.M)
    if found:
        raise error(InputError, "errors.yaml_full_width_indent", name=name, line=text.count("\n", 0, found.start()) + 1)


def full_width_colon_key(text: str) -> Optional[tuple[str, int]]:
    """``(key, line)`` of the first key followed by the full-width '：' (YAML then names a later line,
    in its own words), or None."""
    key = re.search(r"^[ \t]*([^\s:：#'\"\[{,-][^\s:：#]*)[ \t]*：", text, re.M)
    return (key[1], text.count("\n", 0, key.start()) + 1) if key else None
