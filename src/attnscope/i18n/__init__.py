"""Every string attnscope shows outside the worked calculations, in English and Chinese.

One table per area (``plot``: figure titles, axes and colour bars; ``cli``: the command line's
error messages; ``steps``: the calculation steps ``check`` names; ``viewer``: the viewer page's
tabs, toolbar and notes; ``experiments`` and ``analysis``: the reports of ``experiment`` and
``analyze``, and what ``patch`` and ``generate`` print; ``errors``: keyed errors), read from the
catalogue files ``catalog/*.toml`` (data, not code: both languages side by side per key, so that a
translator edits one file and a key cannot exist in one language only; :mod:`attnscope.i18n.catalog`).
:func:`text` picks a key's string in a language and fills its ``{placeholders}``. The worked
calculations of :mod:`attnscope.explain` keep their own labels in :mod:`attnscope.explain.i18n`
(TeX inside ``$…$``, rendered per output format); tests/test_i18n.py checks those and these
tables with the same rule (:func:`missing`): every key in every language, the same placeholders.

Errors have one mechanism: a raise site builds its error with :func:`error` from a key and the
key's values (``raise error(InputError, "errors.token_missing", token=..., listing=...)``); the
message is the key's English string, so English output is the table's words byte for byte, and
the error carries ``key`` and ``values`` so that the command line (:func:`error_message`) writes it
in ``--lang``; an error raised without a key keeps its English words. Nothing reads English error
text back, except :func:`translate` for argparse's own few fixed messages (invalid choice,
required arguments, invalid value: the ``cli.argparse_*`` keys), which attnscope does not raise.

    >>> from attnscope.i18n import text
    >>> text("plot.layer", "zh", layer=3)
    '第 3 层'
"""

from __future__ import annotations

import re
import string
from typing import Mapping, Optional, Sequence, Type, TypeVar, Union

from ..errors import AttnscopeError, InputError
from . import catalog

#: The languages every table has.
LANGS = ("en", "zh")

#: area -> language -> key -> string, read from the catalogue files.
TABLES: dict[str, dict[str, dict[str, str]]] = {}
catalog.load(TABLES, LANGS)


def check_lang(lang: str) -> str:
    """``lang`` if attnscope speaks it, else InputError naming the choices."""
    if lang not in LANGS:
        raise error(InputError, "errors.core_lang", code=repr(lang), choices=", ".join(LANGS))
    return lang


def _table(key: str, lang: str) -> dict[str, str]:
    area = key.split(".", 1)[0]
    if area not in TABLES:
        raise KeyError(f"no string table for {key!r} (areas: {', '.join(TABLES)})")
    return TABLES[area][check_lang(lang)]


def text(key: str, lang: str = "en", **fmt) -> str:
    """The string ``key`` (``area.name``) in ``lang``, its ``{placeholders}`` filled from ``fmt``."""
    return _table(key, lang)[key].format(**fmt)


class Msg:
    """A piece of a message written in the message's language: a key and its values (a hint, or
    a word such as "layer" that an error names)."""

    def __init__(self, key: str, **values):
        self.key, self.values = key, values

    def render(self, lang: str) -> str:
        return text(self.key, lang, **{k: v.render(lang) if isinstance(v, Msg) else v for k, v in self.values.items()})

    def __str__(self) -> str:
        return self.render("en")


E = TypeVar("E", bound=AttnscopeError)


def error(cls: Type[E], key: str, **values) -> E:
    """An error of ``cls`` whose message is ``key``'s English string filled from ``values`` (a
    :class:`Msg` value is written in English too), carrying ``key`` and ``values`` so that
    :func:`error_message` can write it in another language."""
    e = cls(Msg(key, **values).render("en"))
    e.key, e.values = key, values
    return e


def word(name: str):
    """The word ``name`` ("layer", "heads", …) as a :class:`Msg` where the ``errors`` table has
    it (``errors.word.NAME``), else ``name`` as written."""
    return Msg(f"errors.word.{name}") if f"errors.word.{name}" in TABLES["errors"]["en"] else name


#: An error lists at most this many of a text's tokens: hundreds would bury its one sentence.
LISTED = 20


def listing(items: Sequence[str], sep: str = " ", numbered: bool = False) -> Union[str, Msg]:
    """``items`` (a text's tokens) for an error, joined by ``sep`` (``numbered``: ``0:[CLS] 1:the``):
    all of them up to :data:`LISTED`, else the first LISTED and "… and N more" (a :class:`Msg`:
    written in the error's language)."""
    shown = [f"{i}:{x}" if numbered else x for i, x in enumerate(items[:LISTED])]
    if len(items) <= LISTED:
        return sep.join(shown)
    return Msg("errors.listing_more", listing=sep.join(shown), n=len(items) - LISTED)


def error_message(e: BaseException, lang: str) -> str:
    """The message of ``e`` in ``lang``: from its key where it carries one, else its own
    (English) words."""
    key = getattr(e, "key", None)
    return Msg(key, **getattr(e, "values", {})).render(lang) if key else str(e)


def fields(template: str) -> set[str]:
    """The placeholder names of a ``str.format`` template."""
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def missing(by_lang: Mapping[str, Mapping[str, str]],
            placeholders=fields) -> list[str]:
    """What a table lacks: one line per key missing in a language, or whose placeholders differ
    from the English string's (``placeholders`` reads a template's names). Empty when complete."""
    keys = set().union(*(set(t) for t in by_lang.values()))
    out = []
    for key in sorted(keys):
        for lang in LANGS:
            if key not in by_lang.get(lang, {}):
                out.append(f"{key}: no {lang} string")
            elif "en" in by_lang and key in by_lang["en"] and \
                    placeholders(by_lang[lang][key]) != placeholders(by_lang["en"][key]):
                out.append(f"{key}: {lang} placeholders {sorted(placeholders(by_lang[lang][key]))} differ from "
                           f"en {sorted(placeholders(by_lang['en'][key]))}")
    return out


def _pattern(template: str) -> re.Pattern:
    """A regular expression matching ``template`` with each placeholder as a named group."""
    parts, seen = [], set()
    for literal, name, _, _ in string.Formatter().parse(template):
        parts.append(re.escape(literal))
        if name:
            parts.append(f"(?P={name})" if name in seen else f"(?P<{name}>.+?)")
            seen.add(name)
    return re.compile("".join(parts) + r"\Z", re.S)


def translate(message: str, lang: str, area: str = "cli") -> Optional[str]:
    """``message``, an English string of ``area``'s table with its placeholders filled, in
    ``lang``; None when no key of the table reads that way (the message then stays English)."""
    if lang == "en":
        return message
    table = TABLES[area]
    for key, template in table["en"].items():
        m = _pattern(template).match(message)
        if m:
            return table[check_lang(lang)][key].format(**m.groupdict())
    return None


def step_name(step: str, lang: str = "en") -> str:
    """A calculation step's name as a report shows it: ``weights`` or ``output[1]`` (one head's)
    as is in English, 注意力权重（weights） or 输出（output），头 1 in Chinese; a step no table
    names stays as written."""
    base, bracket, rest = step.partition("[")
    table = TABLES["steps"][check_lang(lang)]
    if f"steps.{base}" not in table:
        return step
    name = table[f"steps.{base}"]
    # ``steps.NAME[]`` words the index of a step that is per layer (``mixed[3]``: 第 3 层), else a head's
    index = f"steps.{base}[]" if f"steps.{base}[]" in table else "steps.head"
    return text(index, lang, name=name, head=rest.rstrip("]")) if bracket else name


__all__ = ["LANGS", "TABLES", "text", "Msg", "error", "error_message", "word",
           "check_lang", "missing", "fields", "translate", "step_name"]
