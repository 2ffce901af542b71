"""``explain positions``: the lesson's options checked and sent to its scheme — ``sinusoidal``
(:mod:`.positions_worked`), ``rotary`` and ``t5`` (:mod:`.positions_relative`)."""

from __future__ import annotations

from typing import Optional

from ..errors import InputError
from ..i18n import error
from .doc import Worked
from .positions_relative import explain_rotary, explain_t5
from .positions_worked import explain_sinusoidal

SCHEMES = ("sinusoidal", "rotary", "t5")
#: The options a scheme does not take (an error names the first given: ``errors.explain_not_{scheme}_option``).
REFUSED = {"sinusoidal": ("model", "d_k", "pairing", "vector", "buckets", "max_distance", "causal"),
           "rotary": ("buckets", "max_distance", "causal"),
           "t5": ("dim", "d_model", "base", "d_k", "pairing", "vector")}


def explain_positions(scheme: str = "sinusoidal", *, position: Optional[int] = None, dim: Optional[int] = None,
                      offset: Optional[int] = None, d_model: Optional[int] = None, base: Optional[float] = None,
                      model=None, layer: int = 0, d_k: Optional[int] = None, pairing: Optional[str] = None,
                      vector=None, buckets: Optional[int] = None, max_distance: Optional[int] = None,
                      causal: bool = False, **extra) -> Worked:
    """A worked position lesson; see the module doc. Unknown keywords are an InputError."""
    if extra:
        raise error(InputError, "errors.explain_positions_option", name=repr(sorted(extra)[0]))
    if scheme not in SCHEMES:
        raise error(InputError, "errors.explain_unknown_scheme", scheme=repr(scheme), choices=", ".join(SCHEMES))
    given = {"dim": dim, "d_model": d_model, "base": base, "model": model, "d_k": d_k, "pairing": pairing,
             "vector": vector, "buckets": buckets, "max_distance": max_distance, "causal": causal or None}
    bad = [k for k in REFUSED[scheme] if given[k] is not None]
    if scheme == "rotary" and d_model is not None and not bad:
        raise error(InputError, "errors.explain_rotary_d_model")
    if bad:
        raise error(InputError, f"errors.explain_not_{scheme}_option", name=bad[0])
    if scheme == "sinusoidal":
        return explain_sinusoidal(position=5 if position is None else position, dim=dim, offset=3 if offset is None
                                  else offset, d_model=8 if d_model is None else d_model,
                                  base=10000.0 if base is None else base)
    if scheme == "rotary":
        return explain_rotary(position=5 if position is None else position, dim=dim, offset=3 if offset is None else offset,
                              model=model, layer=layer, d_k=d_k, base=base, pairing=pairing, vector=vector)
    return explain_t5(position=20 if position is None else position, offset=-13 if offset is None else offset,
                      model=model, buckets=buckets, max_distance=max_distance, causal=causal)
