"""Head importance by ablation: zero one head's output z through a trace hook, measure the change.

For every layer l, one forward pass runs the batch H times over (``H·B`` rows); a hook on
``layers.{l}.attn.z`` (B', H, L, d_head) multiplies copy c's head c by 0, so copy c is the model
without head (l, c). Zeroing z removes the head's contribution ``z_c · W_O^(c)`` from the attention
output (the bias b_O stays), which is "the model without this head".

What is measured (per head, averaged over the sample of texts):

* sentence-embedding models (BERT/RoBERTa families): ``1 - cos(e, e_ablated)`` of the pooled
  sentence embedding (the model's own pooling, mean over real tokens for all-MiniLM-L6-v2);
  0 = the head changes nothing.
* language models (GPT-2): the change in next-token cross-entropy, ``loss_ablated - loss`` in
  nats per predicted token (> 0: the head helped).
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F

from ..tokenizer import Batch
from .batching import TokenBatch

Tensor = torch.Tensor


def is_language_model(model) -> bool:
    """True when the model has a language-model head (GPT-2), so importance is a loss change."""
    return bool(getattr(model, "has_lm_head", False))


def metric_name(model) -> str:
    return "loss_change" if is_language_model(model) else "one_minus_cosine"


def as_model_batch(tb: TokenBatch, device) -> Batch:
    """A :class:`attnscope.tokenizer.Batch` (what ``model.trace`` takes) on ``device``."""
    ids = tb.input_ids.to(device)
    return Batch(ids, tb.attention_mask.to(device), torch.zeros_like(ids), tb.tokens, [""] * len(tb))


def _token_losses(model, hidden: Tensor, ids: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """Next-token cross-entropy ``(B, L-1)`` (0 at padded targets) and the target mask."""
    logits = model.lm_logits(hidden[:, :-1])  # (B, L-1, V)
    ok = mask[:, 1:].bool()  # (B, L-1)
    ce = F.cross_entropy(logits.flatten(0, 1).float(), ids[:, 1:].flatten(), reduction="none").view_as(ok)
    return ce.masked_fill(~ok, 0.0), ok


@torch.no_grad()
def ablation_sums(model, tb: TokenBatch, layers: Optional[list[int]] = None) -> dict[int, tuple[Tensor, Tensor]]:
    """``{layer: (sum (H,), count (H,))}`` of the importance measure for one batch.

    Mean importance of head (l, h) = sum / count over all batches (count = texts for the
    cosine measure, predicted tokens for the loss measure).
    """
    H = model.config.n_heads
    dev = model.device
    batch = as_model_batch(tb, dev)
    B = batch.input_ids.shape[0]
    lm = is_language_model(model)
    clean = model.trace(batch, names=[]).output  # (B, L, d)
    if lm:
        ce0, ok = _token_losses(model, clean, batch.input_ids, batch.attention_mask)  # (B, L-1)
    else:
        e0 = model.pool(clean, batch.attention_mask)  # (B, d)

    rep = as_model_batch(TokenBatch(tb.input_ids.repeat(H, 1), tb.attention_mask.repeat(H, 1), {},
                                    tb.tokens * H, tb.indices * H), dev)  # copy c = rows c·B..(c+1)·B
    keep = torch.ones(H, B, H, dtype=clean.dtype, device=dev)  # (copy, B, head)
    keep[torch.arange(H), :, torch.arange(H)] = 0.0  # copy c loses head c
    keep = keep.reshape(H * B, H, 1, 1)  # (H·B, H, 1, 1)

    def ablate(z: Tensor, name: str) -> Tensor:
        return z * keep  # (H·B, H, L, d_head)

    out = {}
    for layer in (range(model.config.n_layers) if layers is None else layers):
        hidden = model.trace(rep, names=[], hooks={f"layers.{layer}.attn.z": ablate}).output  # (H·B, L, d)
        if lm:
            ce, _ = _token_losses(model, hidden, rep.input_ids, rep.attention_mask)  # (H·B, L-1)
            delta = (ce.view(H, B, -1) - ce0).double()  # (H, B, L-1)
            s = delta.sum(dim=(1, 2))  # (H,)
            c = ok.sum().double().expand(H)
        else:
            e = model.pool(hidden, rep.attention_mask).view(H, B, -1)  # (H, B, d)
            cos = F.cosine_similarity(e.double(), e0.double()[None], dim=-1)  # (H, B)
            s = (1.0 - cos).sum(dim=1)  # (H,)
            c = torch.full((H,), float(B), dtype=torch.float64, device=s.device)
        out[layer] = (s, c)
    return out
