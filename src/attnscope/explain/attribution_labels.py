"""The labels of the attribution lessons (``explain --attribution``, ``check`` of a rollout row), read
from the string catalogue (``i18n/catalog/attribution_lesson.toml``, area ``attrlesson``) rather than
the Python label tables: :func:`lt` makes a :class:`~.blocks.T` that carries its text in every
language, so the renderers show it like any other label (TeX inside ``$…$`` included)."""

from __future__ import annotations

from typing import Any

from ..i18n import TABLES
from .blocks import T

AREA = "attrlesson"


def lt(key: str, **params: Any) -> T:
    """The catalogue label ``attrlesson.{key}`` with its ``{placeholders}`` filled at render time."""
    full = f"{AREA}.{key}"
    table = TABLES[AREA]
    return T(full, params, {lang: table[lang][full] for lang in table})
