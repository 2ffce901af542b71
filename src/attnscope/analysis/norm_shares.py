"""Each head's share of attention to the special tokens, with raw weights and with norms (issue 27).

Kobayashi et al. 2020 ("Attention is Not Only a Weight") showed that the large attention weights
on [CLS] and [SEP] mostly vanish once each weight is multiplied by the length of the vector the
token sends, ``‖f^h(x_j)‖`` with ``f^h(x) = (x W_V^h + b_V^h) W_O^h``: those tokens' value vectors
are short. This pass measures that per head over the first texts of a corpus:

* ``raw``: the mean over query rows of ``Σ_{j∈S} α^h_ij`` (each row of α sums to 1);
* ``norm``: the mean over query rows of ``Σ_{j∈S} n^h_ij / Σ_j n^h_ij`` with
  ``n^h_ij = α^h_ij ‖f^h(x_j)‖`` (Kobayashi's per-head norms, :func:`attnscope.attribution.
  norm_methods.head_norms`; each row normalised, as the paper compares them).

``S`` is a set of positions, one per kind: for an encoder ``cls`` (position 0 when it is a special
token: [CLS], <s>) and ``sep`` (every other position holding a special token: [SEP], </s>); for a
causal model ``first`` (position 0: <bos> where the tokenizer adds one, else the text's first token,
where decoders park attention — the "sink"). Query rows that are themselves in a set are left out
(their share would count a token attending to itself; for a causal model row 0 can only see
itself). Means are over every counted query row of every text (token-weighted). Per layer the
pass also gives the share under the layer's summed vector ``‖Σ_h α^h_ij f^h(x_j)‖`` (the ``norm``
method's matrix), beside the mean of the heads' raw shares.

One text at a time (no padding enters a row), truncated to ``max_length`` tokens; float64 sums.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

import numpy as np
import torch

from ..attribution import decompose as DC
from ..attribution.norm_methods import head_norms

Tensor = torch.Tensor


def special_sets(tokens: list[str], specials: set[str], causal: bool) -> dict[str, list[int]]:
    """The positions of each kind of special token in one text (see the module docstring)."""
    if causal:
        return {"first": [0]}
    cls = [0] if tokens and tokens[0] in specials else []
    sep = [j for j, t in enumerate(tokens) if t in specials and j not in cls]
    return {"cls": cls, "sep": sep}


def kinds_of(causal: bool) -> tuple[str, ...]:
    return ("first",) if causal else ("cls", "sep")


def text_shares(weights: Tensor, norms: Tensor, summed: Tensor, sets: dict[str, list[int]]) -> dict:
    """One layer of one text: ``weights`` and ``norms`` (H, L, L), ``summed`` (L, L) →
    per kind the sums over counted query rows of the raw share (H,), the norm share (H,) and the
    summed-vector share (), with ``rows`` the number of rows counted."""
    L = weights.shape[-1]
    skip = sorted({j for js in sets.values() for j in js})
    rows = torch.tensor([i for i in range(L) if i not in skip], dtype=torch.long, device=weights.device)
    w = weights.double()[:, rows]  # (H, R, L)
    n = norms.double()[:, rows]  # (H, R, L)
    s = summed.double()[rows]  # (R, L)
    n_rows = n / n.sum(-1, keepdim=True).clamp_min(1e-300)  # (H, R, L): each row sums to 1
    s_rows = s / s.sum(-1, keepdim=True).clamp_min(1e-300)  # (R, L)
    out: dict = {"rows": int(rows.numel())}
    for kind, js in sets.items():
        cols = torch.tensor(js, dtype=torch.long, device=weights.device)
        out[kind] = {"raw": w[:, :, cols].sum((-1, -2)).cpu().numpy(),  # (H,)
                     "norm": n_rows[:, :, cols].sum((-1, -2)).cpu().numpy(),  # (H,)
                     "layer_norm": float(s_rows[:, cols].sum())}
    return out


@dataclass
class ShareSums:
    """Running sums of the shares: per kind ``raw``/``norm`` (n_layers, H), ``layer_norm`` (n_layers,),
    and the query rows counted (the same in every layer)."""

    n_layers: int
    n_heads: int
    kinds: tuple[str, ...]
    rows: int = 0
    texts: int = 0
    sums: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        for k in self.kinds:
            self.sums[k] = {"raw": np.zeros((self.n_layers, self.n_heads)), "norm": np.zeros((self.n_layers, self.n_heads)),
                            "layer_norm": np.zeros(self.n_layers)}

    def add(self, layer: int, part: dict) -> None:
        for k in self.kinds:
            for what in ("raw", "norm", "layer_norm"):
                self.sums[k][what][layer] += part[k][what]

    def means(self) -> dict:
        """``{"texts", "rows", kind: {"raw", "norm" (n_layers, H), "layer_raw", "layer_norm" (n_layers,)}}``."""
        d = max(self.rows, 1)
        out: dict = {"texts": self.texts, "rows": self.rows}
        for k in self.kinds:
            s = self.sums[k]
            out[k] = {"raw": s["raw"] / d, "norm": s["norm"] / d, "layer_raw": s["raw"].mean(1) / d,
                      "layer_norm": s["layer_norm"] / d}
        return out


@torch.no_grad()
def norm_shares(model, texts: Iterable[str], max_length: Optional[int] = None) -> dict:
    """The special-token shares of every head over ``texts`` (see the module docstring):
    :meth:`ShareSums.means` plus ``kinds`` and ``specials`` (the special tokens looked for)."""
    st = DC.stack_of(model, "norm")
    causal = bool(model.config.causal)
    specials = set(model.tokenizer.special_tokens()) if model.tokenizer is not None else set()
    acc = ShareSums(st.n_layers, st.layers[0].attn.n_heads, kinds_of(causal))
    names = [f"{st.prefix}.*.attn.weights", f"{st.prefix}.*.attn.v"]
    for text in texts:
        if not text.strip():
            continue
        batch = model.encode(text, truncate=True, max_length=max_length)
        tokens = list(batch.tokens[0])
        sets = special_sets(tokens, specials, causal)
        if len(tokens) < 2 or any(not js for js in sets.values()) or \
                len(tokens) <= len({j for js in sets.values() for j in js}):
            continue  # no special token of a kind, or no query row left
        tr = model.trace(batch, names=names)
        rows = 0
        for layer in range(st.n_layers):
            heads, summed = head_norms(st, tr, layer)  # (H, L, L), (L, L)
            weights = DC.value(tr, f"{st.prefix}.{layer}.attn.weights")  # (H, L, L)
            part = text_shares(weights, heads, summed, sets)
            acc.add(layer, part)
            rows = part["rows"]  # the same in every layer
        acc.rows += rows
        acc.texts += 1
    out = acc.means()
    out["kinds"] = list(acc.kinds)
    out["specials"] = sorted(specials) if not causal else []
    return out
