"""How far a learner's answer made from the float32 model may be from a real row's float64
values (:func:`.row.model_row_data` with operands from the weights): the room ``check`` gives
such answers before it calls them wrong."""

from __future__ import annotations

import math

import numpy as np

from .row_numbers import row_values

#: How many times the model's own float32 deviation a float32 answer may be off: another float32
#: path (transformers eager, a different summation order) lands within a few times the same error.
FLOAT32_MARGIN = 3.0


def float32_error(d: dict) -> dict:
    """How far an answer computed from the float32 model may be from the float64 values of a row of
    :func:`model_row_data` (operands from the weights), per step of the checker's chain:
    ``{step: array}`` shaped as its values ((1, S) for a row, (n, d) for the keys, (1, 1) for the sum).

    The bound starts from the model's measured float32 deviation (its trace against these float64
    numbers) × :data:`FLOAT32_MARGIN` — δs in the raw scores, δv in the values, the rotated q and k —
    and carries it through the steps: scaled c·δs, e_j·(e^(c·δs) − 1), the sum Σ·(e^(c·δs) − 1),
    weights p_j·(e^(2c·δs) − 1), output (e^(2c·δs) − 1)·Σ_j p_j |v_j| + δv. Empty for a trace-based row."""
    if d.get("operands") != "weights":
        return {}
    vals = row_values(d["raw"], d["factor"], d["allowed"], d["V"])
    m = FLOAT32_MARGIN
    ds = m * float(np.abs(d["raw"] - d["trace_scores"]).max())
    dv = m * float(d["operand_diff"]["v"])
    c = abs(float(d["factor"]))
    grow, grow2 = math.expm1(c * ds), math.expm1(2 * c * ds)
    S = len(d["raw"])
    out = {"scores": np.full((1, S), ds), "scaled": np.full((1, S), c * ds),
           "exp": (vals["exp"] * grow)[None, :], "sum": np.array([[vals["sum"] * grow]]),
           "weights": (vals["weights"] * grow2)[None, :]}
    out["output"] = (grow2 * (vals["weights"] @ np.abs(np.asarray(d["V"], dtype=np.float64))) + dv)[None, :]
    dec = d.get("decoder")
    if dec is not None:
        n, dh = dec["k_rot"].shape
        out["Q_rot"] = np.full((1, dh), m * dec["diff"]["q"])
        out["K_rot"] = np.full((n, dh), m * dec["diff"]["k"])
        if "rms" in dec:
            out["Q_normed"] = np.full((1, dh), m * dec["rms"]["diff"])
            out["K_normed"] = np.full((n, dh), m * dec["rms"]["diff"])
    return out
