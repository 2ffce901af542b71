"""What an attribution is, and the registry of the methods that compute one.

An :class:`Attribution` answers "which input tokens does this output depend on, and how much"
for one text. Two kinds of method:

* **token-to-token** (``kind="tokens"``): ``scores (L, L)``, row i = the output position, column
  j = the input token (raw attention, rollout, flow, norm-based, GlobEnc, ALTI, value zeroing,
  gradient-weighted rollout); ``per_layer (n_layers, L, L)`` where the method has one matrix a layer
  (the layer's own, not accumulated) and ``scores`` is the accumulated matrix up to ``layer``;
* **output** (``kind="output"``): ``scores (L,)``, one number per input token for a ``target``
  (a decoder's next-token logit or logit difference at the last position; an encoder's pooled
  output, or one of its features/classes): gradient × input, integrated gradients, leave-one-out.

A method is one :func:`register_method` call; :func:`attribute` (``model.attribute``) dispatches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import torch

from ..errors import InputError
from ..i18n import error

Tensor = torch.Tensor

KINDS = ("tokens", "output")


@dataclass
class Attribution:
    """Scores of one text's tokens (see the module docstring for the two kinds and their shapes).

    ``meaning`` is one sentence that says what a score is (its unit and what a larger one means);
    ``details`` holds what a method computes on the way (per-head matrices, the target's logit, …)
    under documented keys.
    """

    method: str
    kind: str
    tokens: list[str]
    scores: Tensor                       # (L, L) token-to-token, (L,) output
    meaning: str
    per_layer: Optional[Tensor] = None   # (n_layers, L, L): each layer's own matrix
    layer: Optional[int] = None          # accumulated up to and including this layer (tokens kind)
    target: Optional[Any] = None         # what an output method explains
    details: dict = field(default_factory=dict)

    def row(self, i: int) -> Tensor:
        """Token-to-token: the scores of output position ``i`` over the input tokens, (L,)."""
        if self.kind != "tokens":
            raise error(InputError, "errors.attribution_no_rows", method=self.method)
        n = self.scores.shape[0]
        if not -n <= i < n:
            raise error(InputError, "errors.attribution_position", i=i, n=n, last=n - 1)
        return self.scores[i]


@dataclass(frozen=True)
class AttributionMethod:
    """One method: ``compute(model, text, layer=…, target=…, **options) -> Attribution``.

    ``needs_grad``: the method differentiates the model (refused, in one sentence, on a model whose
    parameters cannot take gradients). ``words``: a sentence for docs and ``--help``; ``source``:
    the paper it follows.
    """

    name: str
    kind: str
    compute: Callable[..., Attribution]
    words: str
    source: str = ""
    needs_grad: bool = False


METHODS: dict[str, AttributionMethod] = {}


def register_method(method: AttributionMethod) -> AttributionMethod:
    if method.kind not in KINDS:
        raise ValueError(f"attribution method {method.name!r}: kind must be one of {KINDS}, got {method.kind!r}")
    METHODS[method.name] = method
    return method


def get_method(name: str) -> AttributionMethod:
    try:
        return METHODS[name]
    except (KeyError, TypeError):
        raise error(InputError, "errors.attribution_unknown_method", name=repr(name), methods=", ".join(METHODS)) from None


def check_grad(model, method: str) -> None:
    """InputError before any work when ``model`` cannot be differentiated (a method with ``needs_grad``)."""
    for p in model.parameters():
        if not p.dtype.is_floating_point:
            raise error(InputError, "errors.attribution_grad_dtype", method=method, model=repr(model.name), dtype=str(p.dtype))
        if p.is_inference():
            raise error(InputError, "errors.attribution_grad_inference", method=method, model=repr(model.name))


def attribute(model, text: str, method: str = "rollout", *, layer: Optional[int] = None, target=None,
              **options) -> Attribution:
    """``method``'s :class:`Attribution` of one ``text`` under ``model`` (``layer``: accumulate up to
    this layer, default the last; ``target``: what an output method explains)."""
    m = get_method(method)
    if not isinstance(text, str):
        raise error(InputError, "errors.attribution_not_text", got=type(text).__name__)
    if not text.strip():  # every method, not norm's alone: rollout of '' read [CLS] [SEP] as the text
        raise error(InputError, "errors.attribution_empty_text")
    n_layers = model.config.n_layers
    if layer is not None and (isinstance(layer, bool) or not isinstance(layer, int) or not -n_layers <= layer < n_layers):
        raise error(InputError, "errors.attribution_layer", layer=repr(layer), n=n_layers, last=n_layers - 1)
    if layer is not None and layer < 0:
        layer += n_layers
    if m.needs_grad:
        check_grad(model, m.name)
    return m.compute(model, text, layer=layer, target=target, **options)
