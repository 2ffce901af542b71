"""Read what the pictures and the viewer need out of a :class:`attnscope.trace.Trace`.

Everything here works on any object with ``trace[name]`` (a tensor, batch first), ``name in
trace``, ``trace.tokens`` (per text, no padding) and ``trace.config`` (a TransformerConfig), so
that tests can build one by hand. Index errors (layer, head, text, token) raise InputError naming
the valid range.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..errors import InputError

#: Scorings whose score is ``factor · q·k`` on the traced q and k (the viewer recomputes them).
FACTOR_SCORINGS = ("scaled", "unscaled", "inv_d")

#: As in ``attnscope explain``: exp(s) is shown as is while the row's largest score is at most
#: this, else exp(s − m) with m the row maximum (the weights are the same either way).
EXP_SHOW_LIMIT = 50.0


def n_layers(trace) -> int:
    return int(trace.config.n_layers)


def n_heads(trace) -> int:
    return int(trace.config.n_heads)


def model_name(trace) -> str:
    return str(getattr(trace, "model_name", "") or "model")


def check_index(what: str, i, n: int, unit: str) -> int:
    """``i`` as an int in ``range(n)``, else InputError("layer 7 is out of range: …")."""
    if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
        raise InputError(f"{what} must be an integer, got {i!r}")
    if not 0 <= int(i) < n:
        raise InputError(f"{what} {i} is out of range: there {'is' if n == 1 else 'are'} {n} {unit}"
                         f"{'' if n == 1 else 's'} (0..{n - 1})")
    return int(i)


def check_text(trace, index: int) -> int:
    return check_index("text", index, len(trace.tokens), "text")


def tokens(trace, index: int = 0) -> list[str]:
    return list(trace.tokens[check_text(trace, index)])


def _get(trace, name: str, index: int):
    index = check_text(trace, index)
    if name not in trace:
        raise InputError(f"the trace has no {name!r}; trace the text with names=None (everything) "
                         f"or include {name!r}")
    n = len(trace.tokens[index])
    t = trace[name][index]
    return t, n


def head_qkv(trace, layer: int, index: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q, k, v of every head of ``layer`` for text ``index``: float32 arrays (H, n, d_head)."""
    layer = check_index("layer", layer, n_layers(trace), "layer")
    out = []
    for step in ("q", "k", "v"):
        t, n = _get(trace, f"layers.{layer}.attn.{step}", index)
        out.append(t[:, :n].detach().cpu().float().numpy())  # (H, n, d_head)
    return out[0], out[1], out[2]


def score_factor(trace) -> float:
    """The number the raw scores are multiplied by: 1/√d_head for "scaled"."""
    scoring = trace.config.scoring
    d = trace.config.d_head
    if scoring == "scaled":
        return 1.0 / math.sqrt(d)
    if scoring == "unscaled":
        return 1.0
    if scoring == "inv_d":
        return 1.0 / d
    raise InputError(f"the viewer recomputes scores as factor·q·k and supports the scorings "
                     f"{', '.join(FACTOR_SCORINGS)}; this model uses {scoring!r}")


def weights(trace, layer: int, index: int = 0) -> np.ndarray:
    """Attention weights of every head of ``layer``: float64 (H, n, n), rows sum to 1.

    Taken from the trace's ``layers.{layer}.attn.weights`` when recorded, else computed in float64
    from q and k (the same arithmetic as :func:`steps`).
    """
    layer = check_index("layer", layer, n_layers(trace), "layer")
    name = f"layers.{layer}.attn.weights"
    if name in trace:
        t, n = _get(trace, name, index)
        return t[:, :n, :n].detach().cpu().double().numpy()  # (H, n, n)
    q, k, _ = head_qkv(trace, layer, index)
    return _softmax_rows(_scaled(trace, q, k))


def _scaled(trace, q: np.ndarray, k: np.ndarray) -> np.ndarray:
    scaled = np.einsum("hid,hjd->hij", q.astype(np.float64), k.astype(np.float64)) * score_factor(trace)
    if trace.config.causal:
        n = q.shape[1]
        scaled = np.where(np.triu(np.ones((n, n), dtype=bool), 1), -np.inf, scaled)
    return scaled  # (H, n, n)


def _softmax_rows(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def steps(trace, layer: int, head: int, query: int, index: int = 0) -> dict:
    """The first article's walk-through of one query row, in float64 from the traced q, k, v.

    Returns ``tokens``, ``raw`` (q·k per key), ``scaled`` (× the factor, -inf where masked),
    ``shift`` (0, or the row maximum when it exceeds :data:`EXP_SHOW_LIMIT`), ``exp``
    (exp(scaled − shift), 0 where masked), ``sum`` (Σ exp), ``weights`` (softmax of the row),
    ``out`` (Σ weight·v, d_head numbers), ``factor`` and ``d_k``. The viewer's step table shows
    these, computed the same way in JavaScript.
    """
    H = n_heads(trace)
    head = check_index("head", head, H, "head")
    q, k, v = head_qkv(trace, layer, index)
    n = q.shape[1]
    query = check_index("query token", query, n, "token")
    qi = q[head, query].astype(np.float64)  # (d_head,)
    kh = k[head].astype(np.float64)  # (n, d_head)
    raw = kh @ qi  # (n,)
    factor = score_factor(trace)
    scaled = raw * factor
    if trace.config.causal:
        scaled = np.where(np.arange(n) > query, -np.inf, scaled)
    m = float(np.max(scaled))  # finite: key 0 is never masked
    shift = m if m > EXP_SHOW_LIMIT else 0.0
    e = np.exp(scaled - shift)
    total = float(e.sum())
    stable = np.exp(scaled - m)
    w = stable / stable.sum()
    out = w @ v[head].astype(np.float64)  # (d_head,)
    return {"tokens": tokens(trace, index), "raw": raw, "scaled": scaled, "shift": shift, "exp": e,
            "sum": total, "weights": w, "out": out, "factor": factor, "d_k": int(q.shape[-1])}


def hidden_states(trace, index: int = 0) -> list[tuple[str, np.ndarray]]:
    """``[(name, (n, d) float64)]``: the embedding output, then each layer's output."""
    names = ["embed.out"] + [f"layers.{i}.out" for i in range(n_layers(trace))]
    out = []
    for name in names:
        t, n = _get(trace, name, index)
        out.append((name, t[:n].detach().cpu().double().numpy()))
    return out


def find_token(toks: list[str], token: Optional[str], other: Optional[list[str]] = None) -> int:
    """Position of ``token`` in ``toks`` (first match; "##" and "Ġ" ignored), or of the first
    non-special token also in ``other`` when ``token`` is None. InputError when there is none."""
    def norm(s: str) -> str:
        return s.removeprefix("##").removeprefix("Ġ").removeprefix("▁").lower()

    special = {"[CLS]", "[SEP]", "[PAD]", "<s>", "</s>", "<pad>", "<|endoftext|>"}
    if token is not None:
        want = norm(token)
        for i, t in enumerate(toks):
            if norm(t) == want:
                return i
        raise InputError(f"token {token!r} is not among the tokens {toks}")
    others = {norm(t) for t in (other or []) if t not in special}
    for i, t in enumerate(toks):
        if t not in special and norm(t) in others:
            return i
    raise InputError(f"the two texts share no token (tokens {toks} and {other}); "
                     "pick texts with a common word")


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.dot(a, b) / (na * nb))


def context_comparison(trace_a, trace_b=None, *, token: Optional[str] = None, index_a: int = 0,
                       index_b: int = 1) -> dict:
    """How one token's vector changes from layer to layer in two texts ("context awareness").

    Text A is ``trace_a`` text ``index_a``; text B is ``trace_b`` text 0, or ``trace_a`` text
    ``index_b`` when ``trace_b`` is None. Returns per layer (embedding output, then each layer's
    output) the cosine similarity of the token's vector in A and in B (``across``), and of each
    vector with its own embedding-layer vector (``drift_a``, ``drift_b``).
    """
    if trace_b is None:
        trace_b, ib = trace_a, index_b
    else:
        ib = 0
    ta, tb = tokens(trace_a, index_a), tokens(trace_b, ib)
    pa = find_token(ta, token, tb)
    pb = find_token(tb, token if token is not None else ta[pa])
    ha, hb = hidden_states(trace_a, index_a), hidden_states(trace_b, ib)
    layers = [name for name, _ in ha]
    across = [cosine(x[pa], y[pb]) for (_, x), (_, y) in zip(ha, hb)]
    drift_a = [cosine(x[pa], ha[0][1][pa]) for _, x in ha]
    drift_b = [cosine(y[pb], hb[0][1][pb]) for _, y in hb]
    return {"token": ta[pa], "pos_a": pa, "pos_b": pb, "tokens_a": ta, "tokens_b": tb,
            "layers": layers, "across": across, "drift_a": drift_a, "drift_b": drift_b}
