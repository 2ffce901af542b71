"""What a patching run returns: the metric after every patch, with its labels, as JSON or a figure."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

import torch

from ..errors import InputError
from ..i18n import error

Tensor = torch.Tensor

#: |clean − corrupted| below this (in the metric's units) leaves the normalised score undefined.
FLAT = 1e-6


@dataclass
class PatchingResult:
    """The metric after each patch.

    Attributes:
        what: ``"heads"`` (one head's z per cell) or ``"residual"`` (one position's stream per cell).
        site: ``"z"``, or the residual site (``resid_pre``, ``attn_in``, ``resid_mid``, ``resid_post``).
        values: ``(n_layers, n_heads)`` or ``(n_layers, L)`` float64: the metric of the corrupted
            run with that one activation taken from the clean run (NaN: layer not patched).
        clean, corrupted: the metric of the two runs unpatched.
        rows, cols: labels (``layer i``; ``head h`` or the prompt's tokens).
        metric: what was measured, e.g. ``logit(' Mary') − logit(' John')``.
        tokens: ``{"answer": {"text", "id"}, "wrong": {…}}`` for the default metric.
        layer_evaluations: (prompt copy, layer) pairs the run computed, the clean and corrupted
            runs included: each patched copy goes through the layers from the patched one up
            (:mod:`attnscope.patching.prefix`).
        layer_evaluations_full: what it would be if every copy went through every layer.
    """

    what: str
    site: str
    values: Tensor
    clean: float
    corrupted: float
    rows: list
    cols: list
    metric: str
    model_name: str = ""
    clean_text: str = ""
    corrupted_text: str = ""
    clean_tokens: list = field(default_factory=list)
    corrupted_tokens: list = field(default_factory=list)
    tokens: dict = field(default_factory=dict)
    layers: list = field(default_factory=list)
    layer_evaluations: int = 0
    layer_evaluations_full: int = 0

    @property
    def defined(self) -> bool:
        """Whether the normalised score exists: the corruption changes the metric (by more than :data:`FLAT`)."""
        return abs(self.clean - self.corrupted) > FLAT

    @property
    def normalized(self) -> Optional[Tensor]:
        """``(patched − corrupted) / (clean − corrupted)``: 0 = the patch changes nothing, 1 = it
        restores the clean metric. None when the clean and corrupted metrics are equal."""
        if not self.defined:
            return None
        return (self.values - self.corrupted) / (self.clean - self.corrupted)

    def top(self, k: int = 5, *, normalized: bool = True) -> list[tuple[str, float]]:
        """The ``k`` cells with the largest effect ``|patched − corrupted|``, as ``("layer.col", value)``."""
        norm = self.normalized if normalized else None  # None also when undefined
        v = norm if norm is not None else self.values
        effect = torch.nan_to_num((self.values - self.corrupted).abs(), nan=-1.0).flatten()
        order = torch.argsort(effect, descending=True)[:k].tolist()
        n = self.values.shape[1]
        return [(f"{i // n}.{i % n}" if self.what == "heads" else f"{i // n}@{i % n} {self.cols[i % n]!r}",
                 float(v.flatten()[i])) for i in order if effect[i] >= 0]

    def note(self) -> str:
        """One sentence for a reader when the normalised score is undefined ('' otherwise)."""
        if self.defined:
            return ""
        return (f"the clean and corrupted prompts give the same {self.metric} ({self.clean:.4g}), so the normalised "
                f"score is undefined and the raw metric is shown; choose a corruption that changes the answer")

    def to_json(self) -> dict:
        """Everything, JSON-ready (NaN as null)."""
        def rows(t: Optional[Tensor]):
            if t is None:
                return None
            return [[None if math.isnan(x) else x for x in r] for r in t.tolist()]
        return {
            "format": "attnscope.patching", "version": 1, "model": self.model_name, "what": self.what,
            "site": self.site, "metric": self.metric, **self.tokens,
            "clean": {"prompt": self.clean_text, "tokens": self.clean_tokens, "metric": self.clean},
            "corrupted": {"prompt": self.corrupted_text, "tokens": self.corrupted_tokens, "metric": self.corrupted},
            "layers": self.layers, "layer_evaluations": self.layer_evaluations,
            "layer_evaluations_full": self.layer_evaluations_full, "rows": self.rows, "cols": self.cols,
            "values": rows(self.values), "normalized": rows(self.normalized), "note": self.note() or None,
        }

    def save(self, path: Union[str, Path]) -> Path:
        """Write :meth:`to_json` to ``path`` (UTF-8)."""
        p = Path(path)
        try:
            p.write_text(json.dumps(self.to_json(), indent=1, ensure_ascii=False), encoding="utf-8")
        except OSError as e:
            raise error(InputError, "errors.cli_cannot_write", path=p, why=e.strerror or e) from None
        return p

    def figure(self, *, normalized: Optional[bool] = None, lang: str = "en"):
        """The heatmap (:func:`attnscope.plot.patching.patching_heatmap`), its words in ``lang``."""
        from ..plot.patching import patching_heatmap
        return patching_heatmap(self, normalized=normalized, lang=lang)
