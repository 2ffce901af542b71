"""Head classification into the attention patterns of the literature.

Pattern types (Clark et al. 2019, "What Does BERT Look At?"; Kovaleva et al. 2019, "Revealing the
Dark Secrets of BERT"):

==============  =====================================================================
label           meaning / rule on the head's mean statistics
==============  =====================================================================
``previous``    positional: ``to_prev ≥ previous`` (over half its attention on i-1)
``next``        positional: ``to_next ≥ next``
``self``        diagonal: ``to_self ≥ self``
``cls``         vertical: ``to_cls ≥ cls`` (a stripe on [CLS] in the weight matrix)
``sep``         vertical: ``to_sep ≥ sep``
``punct``       vertical: ``to_punct ≥ punct``
``local``       block/local: ``to_local ≥ local`` (attention within ±window tokens)
``broad``       ``entropy_norm ≥ broad`` (attention spread nearly evenly)
``other``       none of the above
==============  =====================================================================

Rule order: among the six *dominant-key* rules (previous, next, self, cls, sep, punct) that pass,
the one with the largest fraction wins (with thresholds ≥ 0.5 at most one can pass, except when a
query's own token is also its [CLS]/previous). Only if none passes are ``local``, then ``broad``
tried. A NaN statistic (e.g. ``to_next`` of a causal model) never passes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Iterable, Mapping

import numpy as np

from ..errors import ConfigError
from ..i18n import error

LABELS = ("previous", "next", "self", "cls", "sep", "punct", "local", "broad", "other")

#: label -> the statistic its rule reads.
RULE_STAT = {"previous": "to_prev", "next": "to_next", "self": "to_self", "cls": "to_cls",
             "sep": "to_sep", "punct": "to_punct", "local": "to_local", "broad": "entropy_norm"}

#: label -> the family of the literature it belongs to.
FAMILY = {"previous": "positional", "next": "positional", "self": "diagonal", "cls": "vertical",
          "sep": "vertical", "punct": "vertical", "local": "block/local", "broad": "broad", "other": "other"}


@dataclass
class Thresholds:
    """Minimum mean statistic for each label (all fractions in [0, 1]); settable by name.

    Defaults follow Clark et al.: a head is previous/next/[CLS]/[SEP]-attending when more than half
    of its attention goes there. ``broad`` needs an entropy of at least 0.75 of the uniform
    entropy ln(n); ``local`` at least half of the attention within the ``to_local`` window.
    Decoder roles of causal models: ``induction``, ``duplicate`` and ``prev_token`` heads put at
    least 0.4 of their attention on that key of the repeated random tokens (the usual cut-off of
    head-detector exercises); a ``sink`` head at least half of it on the first token.
    """

    previous: float = 0.5
    next: float = 0.5
    self: float = 0.5
    cls: float = 0.5
    sep: float = 0.5
    punct: float = 0.5
    local: float = 0.5
    broad: float = 0.75
    # decoder roles (:mod:`.decoder_heads`), read on the scores of the same names
    induction: float = 0.4
    duplicate: float = 0.4
    prev_token: float = 0.4
    sink: float = 0.5

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, (int, float)) or not 0.0 <= float(v) <= 1.0:
                raise error(ConfigError, "errors.analysis_threshold_range", name=f.name, value=repr(v))
            setattr(self, f.name, float(v))

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def parse(cls, items: Iterable[str]) -> "Thresholds":
        """From ``["previous=0.4", "broad=0.8"]`` (the CLI's ``--threshold``), the rest default."""
        values = {}
        names = [f.name for f in fields(cls)]
        for item in items:
            name, eq, value = item.partition("=")
            name = name.strip()
            if not eq or name not in names:
                raise error(ConfigError, "errors.analysis_threshold_form", names=", ".join(names), item=repr(item))
            if name in values:  # the first value would be dropped
                raise error(ConfigError, "errors.analysis_threshold_twice", name=name)
            try:
                values[name] = float(value)
            except ValueError:
                raise error(ConfigError, "errors.analysis_threshold_number", name=name, value=repr(value)) from None
        return cls(**values)


DOMINANT = ("previous", "next", "self", "cls", "sep", "punct")


def classify_heads(means: Mapping[str, np.ndarray], thresholds: Thresholds | None = None) -> np.ndarray:
    """Label every head from its mean statistics.

    Args:
        means: ``{stat: (n_layers, n_heads)}`` as from :meth:`StatsAccumulator.means`.
        thresholds: :class:`Thresholds` (defaults if None).
    Returns:
        ``(n_layers, n_heads)`` array of label strings from :data:`LABELS`.
    """
    t = thresholds or Thresholds()
    missing = [s for s in RULE_STAT.values() if s not in means]
    if missing:
        raise error(ConfigError, "errors.analysis_classify_needs", names=", ".join(missing))
    shape = np.shape(means["to_self"])
    labels = np.full(shape, "other", dtype=object)
    best = np.full(shape, -np.inf)
    for label in DOMINANT:
        v = np.nan_to_num(np.asarray(means[RULE_STAT[label]], dtype=float), nan=-np.inf)
        win = (v >= getattr(t, label)) & (v > best)
        labels[win], best[win] = label, v[win]
    for label in ("local", "broad"):
        v = np.nan_to_num(np.asarray(means[RULE_STAT[label]], dtype=float), nan=-np.inf)
        win = (labels == "other") & (v >= getattr(t, label))
        labels[win] = label
    return labels.astype(str)
