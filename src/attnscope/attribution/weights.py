"""Token-to-token attributions from the attention weights alone: ``attention``, ``rollout``, ``flow``.

All three read each layer's attention weights ``(H, L, L)`` of one text (``model.trace``,
``layers.{i}.attn.weights``) averaged over the heads. What they cover, model by model:

* **grouped-query / multi-query heads** (Llama, Qwen, Gemma): the weights are per *query* head
  already (keys and values are shared, the softmax is not), so the mean runs over the query heads;
* **windows** (Gemma's and Mistral's sliding layers) and **causal masks**: the weights already
  carry the mask (0 outside it), so rollout and flow follow it with no extra step;
* **relative positions** (DeBERTa's disentangled terms, T5's bias, ALiBi, rotary): they act inside
  the scores; the weights are what they produced, nothing is added here;
* **padding**: one text at a time, so no padding; rows and columns are the text's tokens;
* **encoder–decoder models** (T5, BART): the text is the *source*, and the methods attribute the
  encoder's self-attention stack (``encoder.layers.{i}.attn.weights``). The decoder's self-attention
  rollout combined with cross-attention is not done yet: ``stack="decoder"`` is refused.

Rollout and flow follow Abnar & Zuidema 2020 ("Quantifying Attention Flow in Transformers"):
Ã_l = ½·mean_h(A_l) + ½·I, rows renormalised; rollout R_l = Ã_l · R_{l−1}; flow = the maximum flow
from each output node of ``layer`` to each input token through the layer graph with capacities Ã
(SciPy's compiled Dinic on capacities floored to multiples of 2⁻³⁰, with a stated bound:
:mod:`attnscope.attribution.maxflow`; ``rows=`` computes only some output rows), each row
normalised to sum 1. The float64 formulas are :mod:`attnscope.reference.attribution` (its flow:
networkx's preflow-push, an independent algorithm).
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import torch

from ..errors import InputError
from ..i18n import error
from .base import Attribution, AttributionMethod, register_method
from .maxflow import flow_bounds, normalise_rows

Tensor = torch.Tensor

#: attention flow solves L² maximum-flow problems on a graph of (layer + 2)·L nodes, growing ~L⁴. One
#: CPU thread, :mod:`~attnscope.attribution.maxflow`, MiniLM's own Ã, the full matrix: 24 tokens 0.6 s
#: (networkx's shortest augmenting paths, used before: 13.8 s), 45–50 tokens 3–6 s, 64 tokens ~7 s,
#: 127 tokens ~4.6 min (one row: 2.2 s). Longer texts are refused (``max_tokens=`` raises the limit;
#: ``rows=`` computes only some rows).
FLOW_MAX_TOKENS = 64


def text_ids(model, text: str) -> tuple[list[str], Tensor]:
    """The tokens of one text and its ids ``(L,)`` on the model's device; one clear InputError for
    a text with no tokens (a text past the context raises in ``model.encode``)."""
    batch = model.encode(text)
    n = int(batch.attention_mask[0].sum())
    if n == 0:
        raise error(InputError, "errors.attribution_no_tokens", text=repr(text))
    return list(batch.tokens[0]), batch.input_ids[0, :n].to(model.device)  # (L,)


def stack_prefix(model, stack: Optional[str]) -> str:
    """The trace-name prefix of the self-attention stack the methods read ("" for one-stack models,
    ``"encoder."`` for T5/BART)."""
    seq2seq = getattr(model.config, "kind", "") == "seq2seq"
    if stack is None or (stack == "encoder" and seq2seq):
        return "encoder." if seq2seq else ""
    if stack == "decoder" and seq2seq:
        raise error(InputError, "errors.attribution_decoder_stack")
    raise error(InputError, "errors.attribution_stack_seq2seq" if seq2seq else "errors.attribution_stack_one",
                stack=repr(stack), model=model.name, family=model.family)


def traced_weights(model, text: str, stack: Optional[str] = None) -> tuple[list[str], list[Tensor]]:
    """The tokens of ``text`` and every layer's attention weights, each ``(H, L, L)`` as the trace
    holds them (the model's device and dtype, not copied), of the stack :func:`stack_prefix` names.
    The text is tokenized once and the batch handed to the trace."""
    prefix = stack_prefix(model, stack)
    batch = model.encode(text)
    if int(batch.attention_mask[0].sum()) == 0:
        raise error(InputError, "errors.attribution_no_tokens", text=repr(text))
    names = [f"{prefix}layers.{i}.attn.weights" for i in range(model.config.n_layers)]
    with torch.no_grad():
        t = model.trace(batch, "", names=names) if prefix else model.trace(batch, names=names)
    return list(batch.tokens[0]), [t[name][0] for name in names]


def head_means(model, text: str, stack: Optional[str] = None) -> tuple[list[str], Tensor]:
    """The tokens of ``text`` and every layer's attention weights averaged over the (query) heads,
    ``(n_layers, L, L)`` (the model's device and dtype).

    A hook on each layer's weights writes their mean straight into its slice while the pass runs,
    and nothing is recorded: a layer's (H, L, L) weights are freed when the layer ends, so their
    memory is reused by the next layer instead of being held (and paged in afresh) for the whole
    pass — MiniLM at 510 tokens: rollout 1.02× a trace of the weights this way, 1.14× when it read
    them from such a trace (one process, 15 paired rounds, 2 threads). The same numbers: the mean
    of the same tensors."""
    prefix = stack_prefix(model, stack)
    batch = model.encode(text)
    if int(batch.attention_mask[0].sum()) == 0:
        raise error(InputError, "errors.attribution_no_tokens", text=repr(text))
    n_layers = model.config.n_layers
    seen: set[int] = set()  # the layers whose weights reached the hook
    out: list[Tensor] = []  # the (n_layers, L, L) result, made at the first layer (its L, dtype, device)

    def keep(w: Tensor, name: str) -> None:  # w (1, H, L, L), name "[encoder.]layers.{i}.attn.weights"
        if not out:
            out.append(w.new_empty((n_layers,) + tuple(w.shape[-2:])))
        i = int(name[len(prefix):].split(".")[1])
        torch.mean(w[0], dim=0, out=out[0][i])  # (L, L)
        seen.add(i)
    hooks = {f"{prefix}layers.*.attn.weights": keep}
    with torch.no_grad():
        if prefix:
            model.trace(batch, "", names=[], hooks=hooks)
        else:
            model.trace(batch, names=[], hooks=hooks)
    missing = [i for i in range(n_layers) if i not in seen]
    if missing:  # every layer's weights pass the hook in every family; a new one that skips them must say so
        raise error(InputError, "errors.attribution_no_head_means", layers=", ".join(map(str, missing)), model=model.name)
    return list(batch.tokens[0]), out[0]


def residual_attention(A: Tensor) -> Tensor:
    """Ã = ½·A + ½·I, rows renormalised: ``A`` (…, L, L) → (…, L, L), in A's dtype and device."""
    return residual_attention_(A.clone())


def residual_attention_(A: Tensor) -> Tensor:
    """:func:`residual_attention` in place, in ``A`` itself (returned): ½·A, then + ½ on the
    diagonal (the same numbers as ½·A + ½·I, which adds exact zeros elsewhere), then each row
    divided by its sum — no identity matrix and no temporary of A's size."""
    A.mul_(0.5)  # (…, L, L)
    A.diagonal(dim1=-2, dim2=-1).add_(0.5)
    return A.div_(A.sum(dim=-1, keepdim=True))


def rollout_of(A_tilde: Tensor) -> Tensor:
    """``(n_layers, L, L)``: R_0 = Ã_0, R_l = Ã_l · R_{l−1}, from Ã ``(n_layers, L, L)``; each
    product written into its slice of the result (no list, no stack), R_0 copied rather than
    multiplied by I (the same numbers: a product with I adds exact zeros)."""
    out = torch.empty_like(A_tilde)  # (n_layers, L, L)
    out[0].copy_(A_tilde[0])
    for i in range(1, A_tilde.shape[0]):
        torch.matmul(A_tilde[i], out[i - 1], out=out[i])  # (L, L)
    return out


def _last(model, layer: Optional[int]) -> int:
    return model.config.n_layers - 1 if layer is None else layer


def _no_target(method: str, target) -> None:
    if target is not None:
        raise error(InputError, "errors.attribution_weights_no_target", method=method, target=repr(target))


def attention(model, text: str, *, layer: Optional[int] = None, target=None, stack: Optional[str] = None
              ) -> Attribution:
    """Raw attention of ``layer`` (default the last), averaged over the (query) heads: ``scores``
    (L, L); ``per_layer`` (n_layers, L, L) every layer's head mean; ``details["heads"]`` the
    layer's (H, L, L)."""
    _no_target("attention", target)
    layer = _last(model, layer)
    tokens, weights = traced_weights(model, text, stack)  # each (H, L, L)
    per_layer = torch.stack([w.mean(dim=0) for w in weights])  # (n_layers, L, L)
    return Attribution("attention", "tokens", tokens, per_layer[layer], per_layer=per_layer, layer=layer,
                       meaning="the attention weight of output row i on input token j in this layer, averaged "
                               "over the heads (each row sums to 1)",
                       details={"heads": weights[layer]})


def rollout(model, text: str, *, layer: Optional[int] = None, target=None, stack: Optional[str] = None
            ) -> Attribution:
    """Attention rollout up to ``layer`` (default the last): ``per_layer`` = Ã_l of every layer
    (n_layers, L, L), ``scores`` = R_layer = Ã_layer ··· Ã_0 (L, L); each row sums to 1."""
    _no_target("rollout", target)
    layer = _last(model, layer)
    tokens, means = head_means(model, text, stack)  # (n_layers, L, L)
    A_tilde = residual_attention_(means)  # (n_layers, L, L), in place: the means are this call's own
    R = rollout_of(A_tilde[: layer + 1])  # (layer + 1, L, L)
    return Attribution("rollout", "tokens", tokens, R[-1], per_layer=A_tilde, layer=layer,
                       meaning="the share of output position i after this layer that comes from input token "
                               "j, following attention and the residual path (½·A + ½·I) through every layer "
                               "below; each row sums to 1",
                       details={"rollout": R})


def flow_values(A_tilde: np.ndarray, layer: int, rows: Optional[Sequence[int]] = None) -> np.ndarray:
    """``values (L, L)`` float64: the maximum flow from output node i of ``layer`` to input token j
    through the layer graph of capacities ``A_tilde (n_layers, L, L)``; only the output nodes
    ``rows`` (default all), the other rows NaN.

    One maximum-flow problem per pair (i, j), as Abnar & Zuidema define flow (their code,
    ``compute_flows``): a super-source or super-sink would give only a row's total, not each input's
    share. Solved by :func:`~attnscope.attribution.maxflow.flow_bounds`; the value is the upper of
    its two bounds (the float64 capacity of a minimum cut of the floored graph), at most
    (edges in that cut)·2⁻³⁰ above the true maximum flow and in practice equal to it (the tests
    compare with networkx's preflow-push and a hand-written Edmonds–Karp)."""
    return flow_bounds(A_tilde, layer, rows)[1]


def flow(model, text: str, *, layer: Optional[int] = None, target=None, stack: Optional[str] = None,
         max_tokens: int = FLOW_MAX_TOKENS, rows: Optional[Sequence[int]] = None) -> Attribution:
    """Attention flow up to ``layer`` (default the last): the maximum flow from each output node of
    ``layer`` to each input token through the layer graph with capacities Ã (:func:`flow_values`,
    SciPy's maximum flow with a stated bound), each row normalised to sum 1. ``per_layer`` = the
    capacities Ã (n_layers, L, L); ``details["values"]`` the unnormalised flows;
    ``details["bound"]`` the largest distance, over the pairs computed, between the two bounds the
    true maximum flow lies between (a float; values are the upper bound: see
    :mod:`~attnscope.attribution.maxflow`).

    It is slow (L² max-flow problems): texts longer than ``max_tokens`` (default
    :data:`FLOW_MAX_TOKENS`) are refused. ``rows``: only these output positions (negative ones count
    from the end; a decoder's next-token row is ``[-1]``), the other rows NaN — one max-flow problem
    per token a row, where the full matrix takes L a row for every row."""
    _no_target("flow", target)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise error(InputError, "errors.attribution_positive_int", name="max_tokens", value=repr(max_tokens))
    layer = _last(model, layer)
    tokens, means = head_means(model, text, stack)  # (n_layers, L, L)
    if len(tokens) > max_tokens:
        raise error(InputError, "errors.attribution_flow_long", n=len(tokens), max_tokens=max_tokens)
    rows = normalise_rows(rows, len(tokens))
    A_tilde = residual_attention_(means)  # (n_layers, L, L)
    lower, values = flow_bounds(A_tilde.detach().to("cpu", torch.float64).numpy(), layer, rows)  # (L, L) each
    done = ~np.isnan(values)
    bound = float((values - lower)[done].max(initial=0.0))
    sums = values.sum(axis=-1, keepdims=True)  # (L, 1); NaN for a row not computed
    scores = np.divide(values, sums, out=np.where(np.isnan(sums), np.nan, 0.0) * np.ones_like(values),
                       where=sums > 0)  # a row of zeros stays zeros, a row not computed NaN

    def back(a: np.ndarray) -> Tensor:
        return torch.from_numpy(a).to(device=A_tilde.device, dtype=A_tilde.dtype)  # (L, L)

    return Attribution("flow", "tokens", tokens, back(scores), per_layer=A_tilde, layer=layer,
                       meaning="the maximum flow from output position i after this layer to input token j "
                               "through the layer graph with capacities ½·A + ½·I, as a share of row i's "
                               "total flow (each row sums to 1)",
                       details={"values": back(values), "rows": rows, "bound": bound})


register_method(AttributionMethod(
    "attention", "tokens", attention, "raw attention weights of one layer, averaged over the heads"))
register_method(AttributionMethod(
    "rollout", "tokens", rollout, "attention rollout: ½·A + ½·I per layer, multiplied from the first layer up",
    source="Abnar & Zuidema 2020, Quantifying Attention Flow in Transformers"))
register_method(AttributionMethod(
    "flow", "tokens", flow, "attention flow: maximum flow through the layer graph with capacities ½·A + ½·I",
    source="Abnar & Zuidema 2020, Quantifying Attention Flow in Transformers"))
