"""English UI words a Chinese viewer page must not show, built from the strings table itself.

The guard list is every word (two letters or more; an identifier with underscores is one word)
of the ``viewer`` table's English strings that no Chinese string of the table uses: ``layer``,
``head``, ``query``, ``weight``, ``encoder``… — but not ``softmax``, ``exp``, ``PNG`` or
``Gemma``, which the Chinese strings keep on purpose. Commands quoted in a string (``attnscope
view TEXT --model …``, ``pip install …``) are no UI words in either language and are left out of
both sides. A page's words that come from its data (the model's name, the tokens, the texts) are
not the page's own words either: a browser test removes them with :func:`words` of the data
before it asks :func:`english_left`.
"""

from __future__ import annotations

import re
from functools import lru_cache

from attnscope.i18n import TABLES

WORD = re.compile(r"[A-Za-z][A-Za-z_]*[A-Za-z]")  # an identifier (query_pre_attn_scalar) is one word
#: A command or option quoted in a sentence: the same in both languages.
COMMAND = re.compile(r"(?:attnscope|pip install)(?: [-A-Za-z0-9_.=]+)+|--[a-z][-a-z]*(?: [A-Z_]+)?")
PLACEHOLDER = re.compile(r"\{\w+\}")


def words(text: str) -> set[str]:
    """The lower-case words of ``text``, commands and ``{placeholders}`` left out."""
    return {w.lower() for w in WORD.findall(COMMAND.sub(" ", PLACEHOLDER.sub(" ", text)))}


@lru_cache(maxsize=None)
def guard_words() -> frozenset[str]:
    """English words of the viewer's table that its Chinese strings never use."""
    table = TABLES["viewer"]
    return frozenset(words(" ".join(table["en"].values())) - words(" ".join(table["zh"].values())))


def english_left(text: str, data: str = "") -> list[str]:
    """The guard words in ``text`` that are not words of ``data`` (what the page shows from its data)."""
    return sorted((words(text) & guard_words()) - words(data))
