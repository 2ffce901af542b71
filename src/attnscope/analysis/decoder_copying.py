"""The OV copying score of every head that ``analyze`` labels induction (issue 28): Σλ/Σ|λ| over the
eigenvalues of the head's full OV circuit W_E W_OV W_U, norm scales folded
(:func:`attnscope.circuits.copying_scores`). An induction head attends to the token after an earlier
copy of the current one; a copying score near 1 says its OV circuit then raises that token's logit."""

from __future__ import annotations

from typing import Mapping

import numpy as np

from ..circuits import copying_scores
from ..errors import InputError


def induction_heads(means: Mapping[str, np.ndarray], thresholds) -> list[tuple[int, int]]:
    """(layer, head) of every head whose induction score reaches its threshold (the ``induction``
    role of :func:`.decoder_heads.decoder_roles`), in layer order."""
    if "induction" not in means:
        return []
    v = np.nan_to_num(np.asarray(means["induction"], dtype=float), nan=-np.inf)  # (n_layers, H)
    return [(int(l), int(h)) for l, h in zip(*np.nonzero(v >= thresholds.induction))]


def induction_copying(model, means: Mapping[str, np.ndarray], thresholds) -> dict:
    """``{"scores": {"L.H": copying score}, "skipped": None}``, or ``{"scores": {}, "skipped": why, …}``
    when the model cannot give one (no unembedding, post-norm): the reason in English, one sentence,
    with its catalogue key and values (``skipped_key``, ``skipped_values``)."""
    heads = induction_heads(means, thresholds)
    try:
        scores = copying_scores(model, heads) if heads else {}
    except InputError as e:
        return skipped(e)
    return {"scores": {f"{l}.{h}": float(s) for (l, h), s in scores.items()}, "skipped": None}


def every_copying(model) -> dict:
    """:func:`induction_copying` of every head (what a shard keeps, so that merging needs no model):
    each head's score is the one :func:`induction_copying` gives it (``copying_scores`` scores each
    head alone)."""
    try:
        scores = copying_scores(model)
    except InputError as e:
        return skipped(e)
    return {"scores": {f"{l}.{h}": float(s) for (l, h), s in scores.items()}, "skipped": None}


def pick_copying(every: Mapping, means: Mapping[str, np.ndarray], thresholds) -> dict:
    """:func:`induction_copying` from :func:`every_copying`'s scores."""
    heads = induction_heads(means, thresholds)
    if heads and every.get("skipped"):
        return dict(every)
    return {"scores": {f"{l}.{h}": every["scores"][f"{l}.{h}"] for l, h in heads}, "skipped": None}


def skipped(e: InputError) -> dict:
    """Why there is no copying score: the reason, and its key to write it in the report's language."""
    return {"scores": {}, "skipped": str(e), "skipped_key": getattr(e, "key", None),
            "skipped_values": {k: str(v) for k, v in getattr(e, "values", {}).items()}}
