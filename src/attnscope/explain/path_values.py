"""The numbers of one token's whole path (:mod:`.path`), before a word is written.

:class:`PathValues` holds the float64 pass of the whole text from the weights (``f``,
:mod:`attnscope.reference_model`), the model's own float32 trace of the same names (``tr``) and the
query; :meth:`~PathValues.x` reads the token's float64 vector at a trace name and
:meth:`~PathValues.diff` its largest difference from the trace; ``recipe`` is the layer's recipe
(:mod:`attnscope.recipe`, the one the float64 pass ran), whose steps the document walks (:mod:`.path_layer`).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from .. import reference as R
from .. import reference_model as RM
from ..reference_model_blocks import layer_recipe


class PathValues:
    """Every float64 number of one token's path and the model's float32 trace beside it (see the module
    docstring); ``d``: the query (``layer``, ``head``, ``qpos``, ``tokens``, ``text``, …)."""

    def __init__(self, model, f: dict, d: dict, stack: str = "") -> None:
        """``stack``: "" (one-stack models) or "encoder" / "decoder" of an encoder–decoder model,
        whose trace names start with it."""
        self.m, self.f, self.d, self.c = model, f, d, model.config
        self.i, self.h, self.p = d["layer"], d["head"], d["qpos"]
        self.n = len(d["tokens"])
        self.labels = d.get("labels") or d["tokens"]  # as a person reads them (byte-level pieces decoded)
        self.tok = f"{self.p}:{self.labels[self.p]}"
        self.decoder = getattr(self.c, "kind", "") == "decoder"
        self.seq2seq = bool(stack)
        self.pfx = f"{stack}." if stack else ""
        self.lp = self.pfx + f"layers.{self.i}"
        owner = getattr(model, stack) if stack else model
        self.e = owner.embed
        self.layer = owner.layers[self.i]
        self.recipe = layer_recipe(self.layer, self.c)  # the layer's own (the one the float64 pass ran)
        self.gated = self.decoder or bool(getattr(self.c, "gated_ffn", False))
        self.g = R.kv_head(self.h, self.c.n_heads, getattr(self.c, "kv_heads", self.c.n_heads))
        names = [nm for nm in model.hook_names if nm.startswith(self.pfx + "embed.") or nm.startswith(self.lp + ".")]
        names = [nm for nm in names if nm.split(".")[-1] not in ("scores", "scaled", "masked", "weights", "mask", "bias",
                                                                  "scores_c2c", "scores_c2p", "scores_p2c")]
        if self.i > 0:
            names.append(self.pfx + f"layers.{self.i - 1}.out")
        names += d.get("extra_names", [])
        self.tr = model.trace(d["text"], d["target"], names=names) if self.seq2seq else model.trace(d["text"], names=names)

    def layer_in(self) -> np.ndarray:
        """What enters the layer, every token: (L, d)."""
        if self.i > 0:
            return self.f[self.pfx + f"layers.{self.i - 1}.out"]
        return self.f[self.pfx + "embed.out"] if self.seq2seq else RM.layer_input(self.f, 0)

    def name(self, step: str) -> str:
        """The trace name of a recipe step's value: ``layers.3.attn_resid``; a block's output
        ``layers.3.attn.out``."""
        return f"{self.lp}.{step}.out" if step in self.recipe.blocks else f"{self.lp}.{step}"

    def vec(self, step: str) -> np.ndarray:
        """The token's float64 vector at a recipe step (``x``: what enters the layer)."""
        return self.layer_in()[self.p] if step == "x" else self.x(self.name(step))

    def x(self, name: str, head: Optional[int] = None) -> np.ndarray:
        """The token's float64 vector at ``name`` (a per-head name: that head's)."""
        a = self.f[name]
        return a[head][self.p] if head is not None else a[self.p]

    def diff(self, name: str, head: Optional[int] = None) -> Optional[float]:
        """The largest |float32 − float64| of the token's vector at ``name`` (None: not traced)."""
        if name not in self.tr:
            return None
        theirs = R.as_f64(self.tr[name])[0]
        theirs = theirs[head][self.p] if head is not None else theirs[self.p]
        return float(np.abs(theirs - self.x(name, head)).max())
