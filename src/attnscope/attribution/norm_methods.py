"""Norm-based and block methods (token-to-token): ``norm``, ``globenc``, ``alti``, ``value_zeroing``.

All four read the model's float32 trace (the attention weights α as the model computed them, so
grouped-query heads, rotary positions, windows, ALiBi and relative position terms — which change α
only, never the values — are covered as they are). Each gives ``per_layer (n_layers, L, L)`` (the
layer's own matrix; row i = output position, column j = the layer's input token) and ``scores``:

* ``norm`` (Kobayashi et al. 2020): ``‖Σ_h α^h_ij f^h(x_j)‖₂`` with ``f^h(x) = (x W_V^h + b_V^h) W_O^h``
  (the value through the output projection); per head ``α^h_ij ‖f^h(x_j)‖`` in ``details["heads"]``
  ``(n_layers, H, L, L)``; ``scores`` = the matrix of ``layer`` (not accumulated: it has no residual);
* ``globenc`` (Modarressi et al. 2022): ``‖T_i(x_j)‖₂`` of the attention block with its residual and
  norm(s), rows normalised, accumulated by rollout (``M_layer · … · M_0``) — computed and registered
  in :mod:`.pairs` (with this module's helpers). It stops at the attention block's end, as ALTI
  does: the authors' code (``modeling_bert.py``, ``output_globenc``) also puts each part through the
  layer's second LayerNorm, linearised with the statistics of its real input (the FFN's output
  included, the FFN itself left out), which this does not — on MiniLM the rolled-out scores differ
  from theirs by up to ~0.07 (rows summing to 1), each layer's matrix by up to ~0.18;
* ``alti`` (Ferrando et al. 2022): ``c_ij = max(0, ‖y_i‖₁ − ‖y_i − T_i(x_j)‖₁)`` with ``y_i`` the
  block's output (bias included), rows normalised, accumulated by rollout — in :mod:`.pairs`;
* ``value_zeroing`` (Mohebbi et al. 2023): token j's value vectors in layer l set to 0 (every head,
  a hook on ``layers.{l}.attn.v``), the cosine distance of each token i's layer output to the
  original one; rows normalised, accumulated by rollout. Unlike the other three it runs the whole
  layer, MLP included — that layer only, from the stream the clean pass fed it (nothing below a
  zeroed layer changes).

The MLP is not linear: ``globenc`` and ``alti`` stop at the attention block's end (the residual stream
the MLP's residual sum adds to, :func:`.decompose.block_end`), as their papers do; the MLP mixes
within a token only. On an encoder–decoder model (T5, BART) all four attribute the encoder's stack
(the source text); the decoder's self- and cross-attention are not covered (a ``target`` asking for
them is refused in one sentence).
"""

from __future__ import annotations

from typing import Any, Optional

import torch
from torch import nn

from ..errors import InputError
from ..i18n import error
from . import decompose as DC
from .base import Attribution, AttributionMethod, register_method

Tensor = torch.Tensor


def trace_one(model, stack: DC.Stack, text: str, names: list[str], hooks=None):
    """The trace of one text (no truncation: a text past the context is refused by the trace), with
    ``hooks`` (``{name_or_glob: fn}``, as ``model.trace`` takes them) during the pass."""
    if not isinstance(text, str) or not text.strip():
        raise error(InputError, "errors.attribution_empty_text")
    with torch.no_grad():
        return model.trace(text, names=names, hooks=hooks, **stack.trace_kw)


def last(layer: Optional[int], stack: DC.Stack) -> int:
    """The layer the scores are of (accumulated up to): ``layer``, default the stack's last."""
    n = stack.n_layers
    if layer is None:
        return n - 1
    if not 0 <= int(layer) < n:
        raise error(InputError, "errors.attribution_stack_layer", layer=layer, n=n, last=n - 1)
    return int(layer)


@torch.no_grad()
def head_norms(stack: DC.Stack, tr, index: int) -> tuple[Tensor, Tensor]:
    """Kobayashi's norms of layer ``index``: per head ``α^h_ij ‖f^h(x_j)‖`` (H, L, L) and the layer's
    ``‖Σ_h α^h_ij f^h(x_j)‖`` (L, L), ``f^h(x_j) = v^h_j W_O^h`` from the traced v (b_V included)."""
    attn, p = stack.layers[index].attn, f"{stack.prefix}.{index}"
    H, Hkv, dh = attn.n_heads, attn.n_kv_heads, attn.d_head
    w = DC.value(tr, f"{p}.attn.weights")  # (H, L, L)
    v = DC.value(tr, f"{p}.attn.v").repeat_interleave(H // Hkv, dim=0)  # (H, L, d_head)
    W_O = attn.W_O.weight.to(v.dtype).reshape(-1, H, dh)  # (d, H, d_head)
    f = torch.einsum("hjd,ehd->hje", v, W_O)  # (H, L, d): f^h(x_j)
    heads = w * f.norm(dim=-1)[:, None, :]  # (H, L, L)
    summed = torch.einsum("hij,hje->ije", w, f).norm(dim=-1)  # (L, L)
    return heads, summed


def compute_norm(model, text: str, *, layer=None, target=None, stack: Optional[str] = None,
                 **options) -> Attribution:
    DC.check_options("norm", options)
    st = DC.stack_of(model, "norm", target, stack)
    tr = trace_one(model, st, text, [f"{st.prefix}.*.attn.weights", f"{st.prefix}.*.attn.v"])
    parts = [head_norms(st, tr, i) for i in range(st.n_layers)]
    per_layer = torch.stack([p[1] for p in parts])  # (n_layers, L, L)
    lay = last(layer, st)
    return Attribution("norm", "tokens", tr.text_tokens(0), per_layer[lay],
                       "‖Σ_h α_ij·f(x_j)‖: the length of the vector token j adds to position i through the "
                       "attention of this layer (value through W_O, weighted); larger = more", per_layer=per_layer,
                       layer=lay, details={"heads": torch.stack([p[0] for p in parts])})


def normalise_rows(m: Tensor) -> Tensor:
    s = m.sum(-1, keepdim=True)
    return m / torch.where(s > 0, s, torch.ones_like(s))  # a row of zeros stays zeros


class _Stop(Exception):
    """Raised by the hook on a layer's output: the pass need not go on (the later layers and the
    LM head — a 262k-word vocabulary in Gemma 3 — cost more than the layer itself)."""


class _Skip(nn.Module):
    """Stands in for a layer below the zeroed one during a zeroing pass: its input goes through
    untouched (what really enters the zeroed layer is put back by a pre-hook on that layer). The
    stack reads settings off its layers (a decoder: each layer's mask scheme and window), so any
    attribute it lacks is the layer's own; the layer is held outside the module tree."""

    def __init__(self, layer: nn.Module) -> None:
        super().__init__()
        self.__dict__["layer"] = layer  # not a submodule: no second copy of its parameters or hooks

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.__dict__["layer"], name)

    def forward(self, x: Tensor, *args, **kwargs) -> Tensor:
        return x


def traced_inputs(model, stack: DC.Stack, text: str) -> tuple[Any, list[Tensor]]:
    """The clean trace of ``text`` (every layer's ``out``) and what enters each layer ``(L, d)``,
    taken by pre-hooks on the layer modules in the same pass (exactly the tensors the layers got)."""
    inputs: dict[int, Tensor] = {}

    def keep(i: int):
        def hook(module, args) -> None:
            inputs[i] = args[0][0].detach()  # (L, d): text 0 of a batch of one
        return hook

    with model.lock:
        handles = [layer.register_forward_pre_hook(keep(i)) for i, layer in enumerate(stack.layers)]
        try:
            tr = trace_one(model, stack, text, [f"{stack.prefix}.*.out"])
        finally:
            for h in handles:
                h.remove()
    return tr, [inputs[i] for i in range(stack.n_layers)]


def zeroing_layer(model, stack: DC.Stack, text: str, index: int, original: Tensor, entering: Tensor,
                  chunk: int = 32) -> Tensor:
    """Value zeroing of layer ``index``: ``(L, L)``, [i, j] = cosine distance of token i's layer
    output with token j's values zeroed to ``original (L, d)``, rows normalised.

    Zeroing token j's values in layer l changes nothing below layer l, so the copies do not rerun
    the layers below: ``entering (L, d)`` (what enters layer l in the clean pass, :func:`traced_inputs`)
    is handed to layer l by a pre-hook, the layers below are skipped (:class:`_Skip`, put back
    however the pass ends), and a hook on the layer's output takes it and ends the pass. One batch
    row per zeroed token, ``chunk`` rows a pass: layer l runs once per chunk instead of the l + 1
    layers a pass from the embedding costs (SmolLM2's 30 layers: 30 layer runs a text, not 465)."""
    L, p = original.shape[0], f"{stack.prefix}.{index}"
    out = original.new_zeros(L, L, dtype=torch.float64)  # normalised in float64, returned in the trace's dtype
    layers = stack.layers
    for start in range(0, L, chunk):
        js = list(range(start, min(L, start + chunk)))
        taken: dict[str, Tensor] = {}

        rows = entering.unsqueeze(0).expand(len(js), -1, -1).contiguous()  # (B, L, d)

        def enter(module, args, kwargs, rows=rows):
            return (rows, *args[1:]), kwargs

        def zero(v: Tensor, name: str, js=js) -> Tensor:  # (B, H_kv, L, d_head)
            v = v.clone()
            b = torch.arange(len(js), device=v.device)
            v[b, :, torch.tensor(js, device=v.device)] = 0
            return v

        def take(t: Tensor, name: str, taken=taken) -> None:  # (B, L, d)
            taken["out"] = t.detach()
            raise _Stop
        kw = {k: [v] * len(js) for k, v in stack.trace_kw.items()}  # the encoder–decoder's target, one a text
        with model.lock:  # the model's layers are swapped for this pass only
            below = [layers[k] for k in range(index)]
            handle = layers[index].register_forward_pre_hook(enter, with_kwargs=True)
            try:
                for k in range(index):
                    layers[k] = _Skip(below[k])
                with torch.no_grad():
                    model.trace([text] * len(js), names=[], hooks={f"{p}.attn.v": zero, f"{p}.out": take}, **kw)
            except _Stop:
                pass
            finally:
                handle.remove()
                for k, m in enumerate(below):
                    layers[k] = m
        new = taken["out"][:, :L]  # (B, L, d)
        out[:, start:start + len(js)] = cosine_distance(new, original[None]).T  # (L, B)
    return normalise_rows(out).to(original.dtype)


def cosine_distance(a: Tensor, b: Tensor) -> Tensor:
    """``1 − cos(a, b)`` over the last axis, as ``½‖a/‖a‖ − b/‖b‖‖²`` in float64: 1 − cos in float32
    loses every digit of a distance near 1e-7, and a row whose outputs hardly move (its total near
    1e-5) is then divided by that noise when the rows are normalised."""
    a, b = a.double(), b.double()
    return 0.5 * (a / a.norm(dim=-1, keepdim=True) - b / b.norm(dim=-1, keepdim=True)).pow(2).sum(-1)


def compute_value_zeroing(model, text: str, *, layer=None, target=None, stack: Optional[str] = None,
                          **options) -> Attribution:
    DC.check_options("value_zeroing", options)
    st = DC.stack_of(model, "value_zeroing", target, stack)
    tr, entering = traced_inputs(model, st, text)
    per_layer = torch.stack([zeroing_layer(model, st, text, i, DC.value(tr, f"{st.prefix}.{i}.out"), entering[i])
                             for i in range(st.n_layers)])  # (n_layers, L, L)
    lay = last(layer, st)
    return Attribution("value_zeroing", "tokens", tr.text_tokens(0), DC.rollout(per_layer, lay),
                       "the change (cosine distance, rows normalised) of position i's layer output when token "
                       "j's value vectors are zeroed, accumulated over layers by rollout; larger = more",
                       per_layer=per_layer, layer=lay)


register_method(AttributionMethod(
    "norm", "tokens", compute_norm, "the norm of each weighted value vector through W_O, ‖α·f(x)‖, per head "
    "and for the layer", "Kobayashi et al. 2020, Attention is Not Only a Weight"))
register_method(AttributionMethod(
    "value_zeroing", "tokens", compute_value_zeroing, "zero one token's value vectors and measure how much "
    "each output changes (cosine distance), rolled out over layers",
    "Mohebbi et al. 2023, Quantifying Context Mixing in Transformers"))
