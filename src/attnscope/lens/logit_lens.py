"""The logit lens: each point of the residual stream read out as if it were the last (issue 28).

nostalgebraist's logit lens (2020) and what TransformerLens' ``accumulated_resid`` +
``apply_ln_to_stack`` give: the stream after the embedding and after every attention block and MLP
is put through the model's own final norm and unembedding, ``logits_p = W_U · norm_f(h_p)``. For
each point and position the result keeps the top tokens, the target token's probability and rank,
and the KL divergence from the final distribution, ``KL(P_final ‖ P_p)`` in nats (Belrose et al.
2023 report the same direction). Computed one point at a time in the model's dtype: nothing of
size (points × positions × vocab) is held.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Union

import numpy as np
import torch

from ..errors import InputError
from ..i18n import error
from .stream import (
    Point,
    check_finite,
    check_language_model,
    check_text,
    embed_value,
    one_token_id,
    points,
    read_out,
    readable,
    stream_names,
    token_text,
)

Tensor = torch.Tensor


@dataclass
class LensResult:
    """What each point predicts. P points (:attr:`points`, forward order), L positions, k tops.

    ``top_ids``/``top_probs`` (P, L, k); ``target_ids`` (L,): the token followed at each position
    (the final top-1 unless a target was given); ``target_prob``, ``target_rank`` (P, L) (rank 0 =
    top); ``kl`` (P, L) nats, ``KL(P_final ‖ P_point)``; ``logits`` (P, L, V) only when asked."""

    tokens: list[str]
    points: list[Point]
    top_ids: Tensor
    top_probs: Tensor
    target_ids: Tensor
    target_prob: Tensor
    target_rank: Tensor
    kl: Tensor
    decode: Callable[[int], str] = field(repr=False, default=str)
    logits: Optional[Tensor] = None

    def top_tokens(self, point: int, position: int) -> list[str]:
        """The top tokens' texts at one point and position."""
        return [self.decode(int(i)) for i in self.top_ids[point, position]]

    def first_point(self, position: int, top: int = 1) -> Optional[Point]:
        """The first point at which the target is within the top ``top`` tokens at ``position`` (None if never)."""
        hits = (self.target_rank[:, position] < top).nonzero()
        return self.points[int(hits[0])] if len(hits) else None

    def settled_point(self, position: int, top: int = 1) -> Optional[Point]:
        """The point from which the target stays within the top ``top`` at ``position`` to the end (None
        if it is not even at the last point); later than :meth:`first_point` when it was in and fell out."""
        out = (self.target_rank[:, position] >= top).nonzero()
        last = int(out[-1]) if len(out) else -1
        return self.points[last + 1] if last + 1 < len(self.points) else None

    def to_dict(self) -> dict:
        """Plain numbers for JSON: per point, per position."""
        return {"tokens": self.tokens, "points": [p.name for p in self.points],
                "target_ids": self.target_ids.tolist(),
                "target_prob": self.target_prob.tolist(), "target_rank": self.target_rank.tolist(),
                "kl": self.kl.tolist(), "top_ids": self.top_ids.tolist(), "top_probs": self.top_probs.tolist()}


def _target_ids(model, target, final_logits: Tensor) -> Tensor:
    """(L,): the final top-1 at every position, or one given token id (an int, or a text that is one token)."""
    L, V = final_logits.shape
    if target is None:
        return final_logits.argmax(-1)
    if isinstance(target, str):
        target = one_token_id(model, target)
    if isinstance(target, bool) or not isinstance(target, (int, np.integer)) or not 0 <= target < V:
        raise error(InputError, "errors.lens_target_id", target=repr(target), last=V - 1)
    return torch.full((L,), int(target), dtype=torch.long, device=final_logits.device)


@torch.no_grad()
def logit_lens(model, text: str, *, target: Union[None, int, str] = None, k: int = 5,
               keep_logits: bool = False, maps: Optional[Callable[[int, Tensor], Tensor]] = None) -> LensResult:
    """Read every point of ``text``'s residual stream through the final norm and the unembedding.

    ``target``: None (each position's final top-1), a token id, or a text that is one token;
    ``k``: how many top tokens to keep; ``keep_logits``: also return all logits (P, L, V);
    ``maps``: ``maps(p, h)`` (L, d) → (L, d), applied to point p before the read-out (the tuned
    lens, :mod:`attnscope.lens.tuned`); the final distribution the KL compares with stays the model's own."""
    check_language_model(model, "logit_lens")
    check_text(text, "logit_lens")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise error(InputError, "errors.lens_k", k=repr(k))
    tr = model.trace([text], names=stream_names(model))
    check_finite(tr, model, "logit_lens")
    L = tr.lengths[0]
    pts = points(model)
    final_logits = read_out(model, tr[pts[-1].name][0, :L])  # (L, V)
    V = final_logits.shape[-1]
    k = min(k, V)
    targets = _target_ids(model, target, final_logits)  # (L,)
    final_logp = torch.log_softmax(final_logits.float(), -1)  # (L, V)
    rows = torch.arange(L, device=final_logits.device)
    tops, probs, t_prob, t_rank, kls, kept = [], [], [], [], [], []
    for j, p in enumerate(pts):
        h = embed_value(tr, model)[0, :L] if p.name == "embed" else tr[p.name][0, :L]  # (L, d)
        if maps is not None:
            h = maps(j, h)  # (L, d)
        logits = read_out(model, h) if p is not pts[-1] or maps is not None else final_logits  # (L, V)
        logp = torch.log_softmax(logits.float(), -1)  # (L, V)
        top = logp.topk(k, dim=-1)
        tops.append(top.indices)
        probs.append(top.values.exp())
        t_logit = logits[rows, targets]  # (L,)
        t_prob.append(logp[rows, targets].exp())
        t_rank.append((logits > t_logit[:, None]).sum(-1))
        kls.append((final_logp.exp() * (final_logp - logp)).sum(-1).clamp_min(0))
        if keep_logits:
            kept.append(logits)
    return LensResult(tokens=readable(model, tr.tokens[0]), points=pts, top_ids=torch.stack(tops), top_probs=torch.stack(probs),
                      target_ids=targets, target_prob=torch.stack(t_prob), target_rank=torch.stack(t_rank),
                      kl=torch.stack(kls), decode=lambda i: token_text(model, i),
                      logits=torch.stack(kept) if keep_logits else None)
