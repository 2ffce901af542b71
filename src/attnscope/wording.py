"""Lists inside keyed error messages, joined in the message's language.

An error that names several things ("shapes (2, 3) and (4, 5) do not broadcast", "rank 0 float32,
rank 1 float16") passes them to :func:`attnscope.i18n.error` as one value: :func:`joined` makes it
a :class:`~attnscope.i18n.Msg` that is written "a and b" in English and "a 和 b" in Chinese, so
that no English joining word is left inside a Chinese line.
"""

from __future__ import annotations

from typing import Iterable, Union

from .i18n import TABLES, Msg

#: The joining patterns (keys of catalog/errors_core.toml): "{a} and {b}", "{a} or {b}", "{a}, {b}".
AND, OR, COMMA = "errors.core_join_and", "errors.core_join_or", "errors.core_join_comma"


def joined(items: Iterable[object], key: str = AND) -> Union[Msg, object]:
    """``items`` (strings, numbers or Msgs; at least one) joined pairwise by ``key``'s pattern
    from the right: ``a and b and c`` for AND, the item itself when there is one."""
    items = list(items)
    out = items[-1]
    for x in reversed(items[:-1]):
        out = Msg(key, a=x, b=out)
    return out


def phrase(prefix: str, text: str) -> Union[Msg, str]:
    """The catalogue's ``prefix.text`` (a word or phrase an error names, such as the registry
    "position scheme") as a Msg where the catalogue has it, else ``text`` as written."""
    key = f"{prefix}.{text}"
    return Msg(key) if key in TABLES["errors"]["en"] else text


__all__ = ["AND", "OR", "COMMA", "joined", "phrase"]
