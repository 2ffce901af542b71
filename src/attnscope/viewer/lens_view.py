"""The viewer's lens view: what each point of a language model's residual stream already predicts
(issue 28 item 1), a grid of residual points × positions.

The numbers are :func:`attnscope.lens.logit_lens`'s for the text, unchanged: at every point
(``embed``, each layer's ``attn_resid`` and ``out``) and position, the top :data:`K` tokens and
their probabilities (the stream read through the model's own final norm and unembedding), the
probability and rank of the token the model finally predicts there (rank 0 = top), and
``KL(P_final ‖ P_point)`` in nats. ``viewer_lens.js`` draws the grid: the top token in each cell,
coloured by its probability, the rest on hover.

Per text entry ``"lens"`` = ``{"ids" (P, L, k) token ids, "words" {id: text} of every id shown,
"top_probs" (P, L, k), "target_prob" (P, L), "kl" (P, L) float32 (:func:`attnscope.viewer.data.encode`),
"target_rank" (P, L) and "target_ids" (L,) integers}``, or a left-out marker the page puts in a
sentence: ``{"left_out": "too_long", "n"}`` past :data:`MAX_TOKENS` tokens (the grid and its
P·L·V read-outs: SmolLM2 reads 61 points × 49,152 logits a position), ``{"left_out": "error", "why"}``.
``data["lens"]`` = ``{"points", "k", "max_tokens"}``; absent for a model the lens cannot read
(an encoder, an encoder–decoder, a post-norm stack).
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import torch

from ..errors import InputError
from ..lens import logit_lens
from ..lens.stream import check_language_model, points
from .data import add_per_text, encode

#: Top tokens kept per point and position (the tooltip lists them).
K = 5
#: Texts longer than this carry no lens grid (the page says so).
MAX_TOKENS = 64


def reads_lens(model) -> bool:
    """Whether the logit lens can read ``model`` (a one-stack, pre-norm language model)."""
    try:
        check_language_model(model, "the lens view")
    except InputError:
        return False
    return True


def text_lens(model, text: str, n_tokens: int, k: int = K, max_tokens: int = MAX_TOKENS) -> dict:
    """One text entry's ``"lens"`` (see the module docstring); ``n_tokens``: the page's token count."""
    if n_tokens > max_tokens:
        return {"left_out": "too_long", "n": n_tokens}
    r = logit_lens(model, text, k=k)
    if len(r.tokens) != n_tokens:  # the page's tokens and the lens's must be the same positions
        raise RuntimeError(f"the lens read {len(r.tokens)} tokens, the page has {n_tokens}")
    ids = r.top_ids.cpu()  # (P, L, k)
    shown = sorted(set(ids.flatten().tolist()) | set(r.target_ids.cpu().tolist()))
    # the words of the lens table and figure: part of a character as its bytes (‹e5›), not '\ufffd'
    return {"ids": ids.tolist(), "words": {str(i): r.decode(i) for i in shown},
            "top_probs": encode(f32(r.top_probs)),  # (P, L, k)
            "target_ids": r.target_ids.cpu().tolist(),  # (L,)
            "target_prob": encode(f32(r.target_prob)),  # (P, L)
            "target_rank": r.target_rank.cpu().tolist(),  # (P, L)
            "kl": encode(f32(r.kl))}  # (P, L) nats


def f32(t: torch.Tensor) -> np.ndarray:
    """``t`` as a contiguous float32 NumPy array on the CPU (what :func:`encode` stores)."""
    return np.ascontiguousarray(t.detach().to("cpu", torch.float32).numpy())


def add_lens(data: dict, model, texts: Sequence[Optional[str]], k: int = K, max_tokens: int = MAX_TOKENS) -> dict:
    """Add the lens grid to page ``data`` (one entry per text of ``texts``, in order) when the lens
    reads ``model``; else ``data`` unchanged. A text None gets ``{"left_out": "tokens"}``."""
    if not reads_lens(model):
        return data
    data["lens"] = {"points": [p.name for p in points(model)], "k": k, "max_tokens": max_tokens}
    return add_per_text(data, "lens", texts, lambda text, n: text_lens(model, text, n, k, max_tokens))

