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
    if scheme == "sinusoidal":
        unused = {"model": model, "d_k": d_k, "pairing": pairing, "vector": vector, "buckets": buckets,
                  "max_distance": max_distance}
        bad = [k for k, v in unused.items() if v is not None] + (["causal"] if causal else [])
        if bad:
            raise error(InputError, "errors.explain_not_sinusoidal_option", name=bad[0])
        return explain_sinusoidal(position=5 if position is None else position, dim=dim, offset=3 if offset is None
                                  else offset, d_model=8 if d_model is None else d_model,
                                  base=10000.0 if base is None else base)
    if scheme == "rotary":
        if buckets is not None or max_distance is not None or causal or d_model is not None:
            if buckets is None and max_distance is None and not causal:
                raise error(InputError, "errors.explain_rotary_d_model")
            which = "buckets" if buckets is not None else "max_distance" if max_distance is not None else "causal"
            raise error(InputError, "errors.explain_not_rotary_option", name=which)
        return explain_rotary(position=5 if position is None else position, dim=dim, offset=3 if offset is None else offset,
                              model=model, layer=layer, d_k=d_k, base=base, pairing=pairing, vector=vector)
    bad = [k for k, v in {"dim": dim, "d_model": d_model, "base": base, "d_k": d_k, "pairing": pairing,
                          "vector": vector}.items() if v is not None]
    if bad:
        raise error(InputError, "errors.explain_not_t5_option", name=bad[0])
    return explain_t5(position=20 if position is None else position, offset=offset,
                      model=model, buckets=buckets, max_distance=max_distance, causal=causal)
