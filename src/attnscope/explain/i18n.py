"""Every label of the worked calculations, in English and Chinese.

Keys are shared; a test checks that both languages have the same keys and the same
``{placeholders}``. Inline math is TeX between ``$…$`` (kept by the LaTeX renderer, turned into
Unicode by the others). Placeholders are ``{name}``; inside math, avoid TeX groups that spell a
parameter's name.
"""

from __future__ import annotations

from .labels_en import EN
from .labels_zh import ZH

LANGS = ("en", "zh")

LABELS = {"en": EN, "zh": ZH}

__all__ = ["LANGS", "LABELS", "EN", "ZH"]
