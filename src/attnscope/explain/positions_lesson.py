"""``explain positions``: the lesson's options checked and sent to its scheme — ``sinusoidal``
(:mod:`.positions_worked`), ``rotary`` and ``t5`` (:mod:`.positions_relative`)."""

from __future__ import annotations

from typing import Optional

from ..errors import InputError
from .doc import Worked
from .positions_relative import explain_rotary, explain_t5
from .positions_worked import explain_sinusoidal

SCHEMES = ("sinusoidal", "rotary", "t5")


def explain_positions(scheme: str = "sinusoidal", *, position: Optional[int] = None, dim: Optional[int] = None,
                      offset: Optional[int] = None, d_model: Optional[int] = None, base: Optional[float] = None,
                      model=None, layer: int = 0, d_k: Optional[int] = None, pairing: Optional[str] = None,
                      vector=None, buckets: Optional[int] = None, max_distance: Optional[int] = None,
                      causal: bool = False, **extra) -> Worked:
    """A worked position lesson; see the module doc. Unknown keywords are an InputError."""
    if extra:
        raise InputError(f"explain positions: unknown option {sorted(extra)[0]!r}; the options are scheme, position, "
                         "dim, offset, d_model, base, model, layer, d_k, pairing, vector, buckets, max_distance, causal")
    if scheme not in SCHEMES:
        raise InputError(f"unknown position scheme {scheme!r}; choose one of {', '.join(SCHEMES)}")
    if scheme == "sinusoidal":
        unused = {"model": model, "d_k": d_k, "pairing": pairing, "vector": vector, "buckets": buckets,
                  "max_distance": max_distance}
        bad = [k for k, v in unused.items() if v is not None] + (["causal"] if causal else [])
        if bad:
            raise InputError(f"{bad[0]} is not an option of the sinusoidal lesson (it takes position, dim, offset, "
                             "d_model and base)")
        return explain_sinusoidal(position=5 if position is None else position, dim=dim, offset=3 if offset is None
                                  else offset, d_model=8 if d_model is None else d_model,
                                  base=10000.0 if base is None else base)
    if scheme == "rotary":
        if buckets is not None or max_distance is not None or causal or d_model is not None:
            which = "buckets" if buckets is not None else "max_distance" if max_distance is not None else \
                "causal" if causal else "d_model (rotary turns each head's d_k features: give d_k)"
            raise InputError(f"{which} is not an option of the rotary lesson")
        return explain_rotary(position=5 if position is None else position, dim=dim, offset=3 if offset is None else offset,
                              model=model, layer=layer, d_k=d_k, base=base, pairing=pairing, vector=vector)
    bad = [k for k, v in {"dim": dim, "d_model": d_model, "base": base, "d_k": d_k, "pairing": pairing,
                          "vector": vector}.items() if v is not None]
    if bad:
        raise InputError(f"{bad[0]} is not an option of the T5 lesson (it takes position, offset, buckets, "
                         "max_distance, causal or a model)")
    return explain_t5(position=20 if position is None else position, offset=-13 if offset is None else offset,
                      model=model, buckets=buckets, max_distance=max_distance, causal=causal)


# ----------------------------------------------------------------------------------------------
# sinusoidal
# ----------------------------------------------------------------------------------------------
