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
(networkx, :data:`FLOW_FUNC`; ``rows=`` computes only some output rows), each row normalised to
sum 1. The float64 formulas are
:mod:`attnscope.reference.attribution`.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import torch

from ..errors import InputError
from ..i18n import error
from ..reference.attribution import flow_graph
from .base import Attribution, AttributionMethod, register_method

Tensor = torch.Tensor

#: attention flow solves L² maximum-flow problems on a graph of (layer + 2)·L nodes (MiniLM, 24 tokens:
#: about 15 s of one CPU thread with :data:`FLOW_FUNC`, growing ~L⁴; a causal model about half of that, its rows
#: reach only the earlier tokens); longer texts are refused (``max_tokens=`` raises the limit).
FLOW_MAX_TOKENS = 24
#: the networkx maximum-flow algorithm :func:`flow_values` uses, chosen by time on random capacities
#: (one CPU thread, shared machine): the full matrix of 16 tokens × 6 layers 4.06 s with preflow-push,
#: 2.71 s with this, 8.41 s Boykov–Kolmogorov, 23.9 s Edmonds–Karp; one row of 16 tokens × 30 causal
#: layers (a decoder's next-token row) 4.34 s, 1.13 s, 2.66 s, 8.05 s; values equal to 1e-15
#: (networkx's Dinitz fails on float capacities)
FLOW_FUNC = "shortest_augmenting_path"


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


def layer_weights(model, text: str, stack: Optional[str] = None) -> tuple[list[str], Tensor]:
    """The tokens of ``text`` and every layer's attention weights ``(n_layers, H, L, L)`` (the
    model's device and dtype) of the stack :func:`stack_prefix` names."""
    prefix = stack_prefix(model, stack)
    tokens, _ = text_ids(model, text)
    names = [f"{prefix}layers.{i}.attn.weights" for i in range(model.config.n_layers)]
    with torch.no_grad():
        t = model.trace(text, "", names=names) if prefix else model.trace(text, names=names)
    return tokens, torch.stack([t[name][0] for name in names])  # (n_layers, H, L, L)


def residual_attention(A: Tensor) -> Tensor:
    """Ã = ½·A + ½·I, rows renormalised: ``A`` (…, L, L) → (…, L, L), in A's dtype and device."""
    eye = torch.eye(A.shape[-1], dtype=A.dtype, device=A.device)  # (L, L)
    t = 0.5 * A + 0.5 * eye  # (…, L, L)
    return t / t.sum(dim=-1, keepdim=True)


def rollout_of(A_tilde: Tensor) -> Tensor:
    """``(n_layers, L, L)``: R_0 = Ã_0, R_l = Ã_l · R_{l−1}, from Ã ``(n_layers, L, L)``."""
    out = []
    acc = torch.eye(A_tilde.shape[-1], dtype=A_tilde.dtype, device=A_tilde.device)  # (L, L)
    for a in A_tilde:
        acc = a @ acc  # (L, L)
        out.append(acc)
    return torch.stack(out)  # (n_layers, L, L)


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
    tokens, W = layer_weights(model, text, stack)  # (n_layers, H, L, L)
    per_layer = W.mean(dim=1)  # (n_layers, L, L)
    return Attribution("attention", "tokens", tokens, per_layer[layer], per_layer=per_layer, layer=layer,
                       meaning="the attention weight of output row i on input token j in this layer, averaged "
                               "over the heads (each row sums to 1)",
                       details={"heads": W[layer]})


def rollout(model, text: str, *, layer: Optional[int] = None, target=None, stack: Optional[str] = None
            ) -> Attribution:
    """Attention rollout up to ``layer`` (default the last): ``per_layer`` = Ã_l of every layer
    (n_layers, L, L), ``scores`` = R_layer = Ã_layer ··· Ã_0 (L, L); each row sums to 1."""
    _no_target("rollout", target)
    layer = _last(model, layer)
    tokens, W = layer_weights(model, text, stack)  # (n_layers, H, L, L)
    A_tilde = residual_attention(W.mean(dim=1))  # (n_layers, L, L)
    R = rollout_of(A_tilde[: layer + 1])  # (layer + 1, L, L)
    return Attribution("rollout", "tokens", tokens, R[-1], per_layer=A_tilde, layer=layer,
                       meaning="the share of output position i after this layer that comes from input token "
                               "j, following attention and the residual path (½·A + ½·I) through every layer "
                               "below; each row sums to 1",
                       details={"rollout": R})


def flow_values(A_tilde: np.ndarray, layer: int, rows: Optional[Sequence[int]] = None) -> np.ndarray:
    """``values (L, L)`` float64: the maximum flow from output node i of ``layer`` to input token j
    through the layer graph of capacities ``A_tilde (n_layers, L, L)`` (:func:`~attnscope.reference.
    attribution.flow_graph`), by networkx's :data:`FLOW_FUNC`; only the output nodes ``rows`` (default
    all), the other rows NaN.

    One maximum-flow problem per pair (i, j), as Abnar & Zuidema define flow (their code,
    ``compute_flows``): a super-source or super-sink would give only a row's total, not each input's
    share. Per output node the graph is cut to the nodes it reaches (a causal or windowed mask leaves
    out the later / farther tokens; an input it never reaches gets 0) and its residual network is
    built once for the row's L problems (each call resets the flows). The maximum flow's value is
    unique, so the algorithm changes the time only (the test compares with a hand-written
    Edmonds–Karp and with the reference's preflow-push)."""
    import networkx as nx  # type: ignore[import-untyped]  # loaded only when flow runs: it is slow to import
    from networkx.algorithms import flow as nxflow  # type: ignore[import-untyped]

    func = getattr(nxflow, FLOW_FUNC)
    g = flow_graph(A_tilde, layer)
    n = A_tilde.shape[-1]
    values = np.zeros((n, n))
    if rows is not None:
        values[:] = np.nan
    for i in (range(n) if rows is None else rows):
        values[i] = 0.0
        source = (layer + 1, i)
        sub = g.subgraph(nx.descendants(g, source) | {source})
        residual = nxflow.build_residual_network(sub, "capacity")
        for j in range(n):
            if (0, j) in sub:
                values[i, j] = nx.maximum_flow_value(sub, source, (0, j), flow_func=func, residual=residual)
    return values


def flow(model, text: str, *, layer: Optional[int] = None, target=None, stack: Optional[str] = None,
         max_tokens: int = FLOW_MAX_TOKENS, rows: Optional[Sequence[int]] = None) -> Attribution:
    """Attention flow up to ``layer`` (default the last): the maximum flow from each output node of
    ``layer`` to each input token through the layer graph with capacities Ã (:func:`flow_values`,
    networkx's maximum flow in float64), each row normalised to sum 1. ``per_layer`` = the
    capacities Ã (n_layers, L, L); ``details["values"]`` the unnormalised flows.

    It is slow (L² max-flow problems): texts longer than ``max_tokens`` (default
    :data:`FLOW_MAX_TOKENS`) are refused. ``rows``: only these output positions (negative ones count
    from the end; a decoder's next-token row is ``[-1]``), the other rows NaN — one max-flow problem
    per token a row, where the full matrix takes L a row for every row."""
    _no_target("flow", target)
    layer = _last(model, layer)
    tokens, W = layer_weights(model, text, stack)  # (n_layers, H, L, L)
    if len(tokens) > max_tokens:
        raise error(InputError, "errors.attribution_flow_long", n=len(tokens), max_tokens=max_tokens)
    n = len(tokens)
    if rows is not None:
        if isinstance(rows, (str, bytes)) or not all(isinstance(r, int) and not isinstance(r, bool) and -n <= r < n
                                                     for r in rows):
            raise error(InputError, "errors.attribution_flow_rows", rows=repr(rows), n=n, last=n - 1)
        rows = sorted({r % n for r in rows})
    A_tilde = residual_attention(W.mean(dim=1))  # (n_layers, L, L)
    values = flow_values(A_tilde.detach().to("cpu", torch.float64).numpy(), layer, rows)  # (L, L)
    sums = values.sum(axis=-1, keepdims=True)  # (L, 1); NaN for a row not computed
    scores = np.divide(values, sums, out=np.where(np.isnan(sums), np.nan, 0.0) * np.ones_like(values),
                       where=sums > 0)  # a row of zeros stays zeros, a row not computed NaN

    def back(a: np.ndarray) -> Tensor:
        return torch.from_numpy(a).to(device=W.device, dtype=W.dtype)  # (L, L)

    return Attribution("flow", "tokens", tokens, back(scores), per_layer=A_tilde, layer=layer,
                       meaning="the maximum flow from output position i after this layer to input token j "
                               "through the layer graph with capacities ½·A + ½·I, as a share of row i's "
                               "total flow (each row sums to 1)",
                       details={"values": back(values), "rows": rows})


register_method(AttributionMethod(
    "attention", "tokens", attention, "raw attention weights of one layer, averaged over the heads"))
register_method(AttributionMethod(
    "rollout", "tokens", rollout, "attention rollout: ½·A + ½·I per layer, multiplied from the first layer up",
    source="Abnar & Zuidema 2020, Quantifying Attention Flow in Transformers"))
register_method(AttributionMethod(
    "flow", "tokens", flow, "attention flow: maximum flow through the layer graph with capacities ½·A + ½·I",
    source="Abnar & Zuidema 2020, Quantifying Attention Flow in Transformers"))
