"""Every label of the worked calculations, in English and Chinese.

The labels are data: TOML files under ``attnscope/explain/catalog/`` (one entry per key, English
and Chinese side by side; read by :func:`attnscope.i18n.catalog.flat`, which refuses a key defined
twice or missing a language). A test checks that both languages have the same ``{placeholders}``.
Inline math is TeX between ``$…$`` (kept by the LaTeX renderer, turned into Unicode by the others).
Placeholders are ``{name}``; inside math, avoid TeX groups that spell a parameter's name.
"""

from __future__ import annotations

from ..i18n.catalog import flat

LANGS = ("en", "zh")

LABELS = flat("attnscope.explain", "catalog", LANGS)

EN = LABELS["en"]
ZH = LABELS["zh"]

__all__ = ["LANGS", "LABELS", "EN", "ZH"]
