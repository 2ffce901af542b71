"""The string catalogues: data files under ``attnscope/i18n/catalog/`` (``*.toml``).

Each entry is one key with its string in every language, side by side, so that a translator reads
and edits both in one place and a key cannot be added in one language only::

    ["errors.answers_shape"]
    en = "{where}: {name} has shape {got}, expected {expected}"
    zh = "{where}：{name} 的形状是 {got}，应为 {expected}"

A file may hold keys of any area (the part of the key before the first dot); the file names only
group them for the people who edit them. :func:`load` reads every file once and merges them with
the tables still written as Python modules; a key defined twice, an entry without a language, a
language nobody asked for or a value that is not a string is a ``CatalogError`` naming the file
and the key, raised at import so that a broken catalogue never ships.
"""

from __future__ import annotations

import sys
from importlib import resources
from typing import Iterable, Mapping

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


class CatalogError(Exception):
    """A catalogue file is malformed: the message names the file and the key."""


def _entries(name: str, data: Mapping[str, object], langs: tuple[str, ...],
             areas: bool = True) -> Iterable[tuple[str, dict[str, str]]]:
    for key, entry in data.items():
        if not isinstance(entry, dict):
            raise CatalogError(f"{name}: {key!r} is not a table of languages (write [\"{key}\"] then en = …, zh = …)")
        if set(entry) != set(langs):
            raise CatalogError(f"{name}: {key!r} has languages {sorted(entry)}, expected {list(langs)}")
        for lang, value in entry.items():
            if not isinstance(value, str):
                raise CatalogError(f"{name}: {key!r} {lang} is a {type(value).__name__}, not a string")
        if areas and "." not in key:
            raise CatalogError(f"{name}: key {key!r} has no area (write area.name, e.g. errors.{key})")
        yield key, entry


def _files(package: str, folder: str) -> list[tuple[str, str]]:
    """(name, text) of every ``*.toml`` in ``package``'s ``folder``, by name."""
    root = resources.files(package) / folder
    return sorted((p.name, p.read_text(encoding="utf-8")) for p in root.iterdir() if p.name.endswith(".toml"))


def _parse(name: str, body: str) -> Mapping[str, object]:
    try:
        return tomllib.loads(body)
    except tomllib.TOMLDecodeError as e:
        raise CatalogError(f"{name}: not valid TOML: {e}") from None


def flat(package: str, folder: str, langs: tuple[str, ...],
         files: Iterable[tuple[str, str]] | None = None) -> dict[str, dict[str, str]]:
    """language -> key -> string from every ``*.toml`` in ``package``'s ``folder``, keys without
    areas (the worked calculations' labels: ``step_n``, ``toy.title``, …); the same checks as
    :func:`load`."""
    out: dict[str, dict[str, str]] = {lang: {} for lang in langs}
    for name, body in _files(package, folder) if files is None else files:
        for key, entry in _entries(name, _parse(name, body), langs, areas=False):
            if key in out[langs[0]]:
                raise CatalogError(f"{name}: {key!r} is defined twice (another catalogue file has it)")
            for lang in langs:
                out[lang][key] = entry[lang]
    return out


def load(tables: dict[str, dict[str, dict[str, str]]], langs: tuple[str, ...],
         files: Iterable[tuple[str, str]] | None = None) -> None:
    """Merge every catalogue file into ``tables`` (area -> language -> key -> string), in place.

    ``files``: (name, TOML text) pairs; by default every ``*.toml`` of the package's catalogue."""
    for name, body in _files("attnscope.i18n", "catalog") if files is None else files:
        for key, entry in _entries(name, _parse(name, body), langs):
            area = key.split(".", 1)[0]
            by_lang = tables.setdefault(area, {lang: {} for lang in langs})
            if key in by_lang[langs[0]]:
                raise CatalogError(f"{name}: {key!r} is defined twice (a Python table or another catalogue file has it)")
            for lang in langs:
                by_lang[lang][key] = entry[lang]
