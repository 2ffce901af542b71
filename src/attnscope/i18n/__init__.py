"""Every string attnscope shows outside the worked calculations, in English and Chinese.

One table per area (``plot``: figure titles, axes and colour bars; ``cli``: the command line's
error messages; ``steps``: the calculation steps ``check`` names; ``viewer``: the viewer page's
tabs, toolbar and notes; ``experiments`` and ``analysis``: the reports of ``experiment`` and
``analyze``, and what ``patch`` and ``generate`` print), each a module here with an ``EN`` and a ``ZH`` dict under the same keys.
:func:`text` picks a key's string in a language and fills its ``{placeholders}``. The worked
calculations of :mod:`attnscope.explain` keep their own labels in :mod:`attnscope.explain.i18n`
(TeX inside ``$…$``, rendered per output format); tests/test_i18n.py checks those and these
tables with the same rule (:func:`missing`): every key in every language, the same placeholders.

    >>> from attnscope.i18n import text
    >>> text("plot.layer", "zh", layer=3)
    '第 3 层'
"""

from __future__ import annotations

import re
import string
from typing import Mapping, Optional

from ..errors import InputError
from . import strings_analysis, strings_cli, strings_experiments, strings_plot, strings_steps, strings_viewer

#: The languages every table has.
LANGS = ("en", "zh")

#: area -> language -> key -> string.
TABLES: dict[str, dict[str, dict[str, str]]] = {
    "plot": {"en": strings_plot.EN, "zh": strings_plot.ZH},
    "cli": {"en": strings_cli.EN, "zh": strings_cli.ZH},
    "steps": {"en": strings_steps.EN, "zh": strings_steps.ZH},
    "viewer": {"en": strings_viewer.EN, "zh": strings_viewer.ZH},
    "experiments": {"en": strings_experiments.EN, "zh": strings_experiments.ZH},
    "analysis": {"en": strings_analysis.EN, "zh": strings_analysis.ZH},
}


def check_lang(lang: str) -> str:
    """``lang`` if attnscope speaks it, else InputError naming the choices."""
    if lang not in LANGS:
        raise InputError(f"language {lang!r} is not one of {', '.join(LANGS)}")
    return lang


def _table(key: str, lang: str) -> dict[str, str]:
    area = key.split(".", 1)[0]
    if area not in TABLES:
        raise KeyError(f"no string table for {key!r} (areas: {', '.join(TABLES)})")
    return TABLES[area][check_lang(lang)]


def text(key: str, lang: str = "en", **fmt) -> str:
    """The string ``key`` (``area.name``) in ``lang``, its ``{placeholders}`` filled from ``fmt``."""
    return _table(key, lang)[key].format(**fmt)


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
    return text("steps.head", lang, name=name, head=rest.rstrip("]")) if bracket else name


__all__ = ["LANGS", "TABLES", "text", "check_lang", "missing", "fields", "translate", "step_name"]
