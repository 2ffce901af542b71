"""Every label of the worked calculations, in English and Chinese.

Keys are shared; a test checks that both languages have the same keys and the same
``{placeholders}``. Inline math is TeX between ``$…$`` (kept by the LaTeX renderer, turned into
Unicode by the others). Placeholders are ``{name}``; inside math, avoid TeX groups that spell a
parameter's name.
"""

from __future__ import annotations

from . import labels_modern, labels_multihead, labels_path, labels_path_relative, labels_positions
from .labels_en import EN as _EN
from .labels_zh import ZH as _ZH

EN = {**_EN, **labels_multihead.EN, **labels_positions.EN, **labels_modern.EN, **labels_path.EN,
      **labels_path_relative.EN}
ZH = {**_ZH, **labels_multihead.ZH, **labels_positions.ZH, **labels_modern.ZH, **labels_path.ZH,
      **labels_path_relative.ZH}

LANGS = ("en", "zh")

LABELS = {"en": EN, "zh": ZH}

__all__ = ["LANGS", "LABELS", "EN", "ZH"]
