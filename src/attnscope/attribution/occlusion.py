"""``leave_one_out``: the ground truth the other attribution methods are judged against.

For each input token j, the text is run again **with token j removed** from its token ids (the
sequence gets one token shorter, later tokens move one position up), and the score is how much the
target changes. Removing the token, rather than zeroing its embedding, is what the faithfulness
literature does (ERASER, DeYoung et al. 2020, measures comprehensiveness and sufficiency by deleting
tokens; leave-one-out as in Li, Monroe & Jurafsky 2016 "Understanding Neural Networks through
Representation Erasure" and Jain & Wallace 2019 erases the word): a zero vector is itself an input
the model never saw, and it would keep its position row. Every token counts, special ones
([CLS], [SEP], <bos>) included; the ids are edited, not the text re-tokenised, so the other tokens
stay exactly as they were.

Targets:

* **decoders** (a language-model head): the next-token logit at the last position;
  ``target=None`` → the full text's top prediction, ``target=token_id``, or ``target=(a, b)`` the
  logit difference a − b. Score = target(full) − target(without j): positive = token j supports it.
* **encoder–decoder models** (T5, BART): the text is the source; the target is the decoder's first
  next-token logit (after its start token), as for decoders.
* **encoders** (a pooled sentence embedding, ``model.sentence_embedding``): ``target=None`` → the
  cosine distance 1 − cos(e_full, e_without_j); ``target=k`` → the change of feature k of the
  pooled embedding, full − without j. The text is read as given (E5: no ``query: `` prefix is
  added; write it into the text).
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F

from ..errors import InputError
from .base import Attribution, AttributionMethod, register_method
from .weights import text_ids

Tensor = torch.Tensor

#: shortened texts run together in one batch of at most this many
CHUNK = 32


def _is_index(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _check_index(k, n: int, what: str) -> int:
    if not _is_index(k) or not 0 <= k < n:
        raise InputError(f"target {k!r} is out of range: {what} (0..{n - 1})")
    return k


def _without_each(ids: Tensor) -> Tensor:
    """``(L, L − 1)``: row j = ``ids`` (L,) with token j removed."""
    n = ids.shape[0]
    keep = ~torch.eye(n, dtype=torch.bool, device=ids.device)  # (L, L)
    return ids.unsqueeze(0).expand(n, n)[keep].view(n, n - 1)  # (L, L − 1)


def _in_chunks(fn, rows: Tensor) -> Tensor:
    """``fn`` on ``rows`` (N, L′) a chunk of :data:`CHUNK` at a time, concatenated."""
    return torch.cat([fn(rows[s:s + CHUNK]) for s in range(0, rows.shape[0], CHUNK)])


def _lm_runner(model):
    """``ids (B, L′) → next-token logits (B, V)`` at the position the target is read from."""
    seq2seq = getattr(model.config, "kind", "") == "seq2seq"

    def run(ids: Tensor) -> Tensor:
        mask = torch.ones_like(ids)  # (B, L′)
        if seq2seq:
            dec, dec_mask, _ = model.target_batch([""] * ids.shape[0], ids.shape[0])  # (B, T) each
            h = model(ids, mask, decoder_input_ids=dec.to(ids.device),
                      decoder_attention_mask=dec_mask.to(ids.device))  # (B, T, d)
            return model.lm_logits(h)[:, 0]  # (B, V): the first prediction after the start token
        return model.lm_logits(model(ids, mask, torch.zeros_like(ids)))[:, -1]  # (B, V)
    return run


def _pooled_runner(model):
    """``ids (B, L′) → pooled sentence embedding (B, d)`` as ``model.sentence_embedding`` pools."""
    def run(ids: Tensor) -> Tensor:
        mask = torch.ones_like(ids)  # (B, L′)
        pooled = model.pool(model(ids, mask, torch.zeros_like(ids)), mask)  # (B, d)
        return F.normalize(pooled, p=2, dim=-1) if model.normalize else pooled
    return run


def leave_one_out(model, text: str, *, layer: Optional[int] = None, target=None) -> Attribution:
    """Scores ``(L,)``: the change of the target when each token is removed (module docstring)."""
    if layer is not None:
        raise InputError("leave_one_out explains the model's output, not a layer; leave layer unset")
    tokens, ids = text_ids(model, text)  # ids (L,)
    if len(tokens) < 2:
        raise InputError(f"leave_one_out needs at least two tokens (removing the only one leaves nothing); "
                         f"the text {text!r} has {len(tokens)}")
    shorter = _without_each(ids)  # (L, L − 1)
    with torch.no_grad():
        if model.has_lm_head:
            run = _lm_runner(model)
            full = run(ids.unsqueeze(0))[0]  # (V,)
            V = full.shape[-1]
            if target is None:
                target = int(full.argmax())
            if isinstance(target, tuple):
                if len(target) != 2:
                    raise InputError(f"target {target!r}: a logit difference is a pair of token ids (a, b)")
                a = _check_index(target[0], V, f"the vocabulary has {V} token ids")
                b = _check_index(target[1], V, f"the vocabulary has {V} token ids")

                def value(logits: Tensor) -> Tensor:
                    return logits[..., a] - logits[..., b]  # (…,)
                what = f"the logit difference of token ids {a} − {b} at the next position"
            else:
                k = _check_index(target, V, f"the vocabulary has {V} token ids")

                def value(logits: Tensor) -> Tensor:
                    return logits[..., k]  # (…,)
                what = f"the next-token logit of token id {k}"
            scores = value(full) - value(_in_chunks(run, shorter))  # (L,)
            meaning = (f"how much {what} drops when the token is removed (full − without it; "
                       f"positive = the token supports it)")
            details = {"full": value(full)}
        elif hasattr(model, "pool"):
            run = _pooled_runner(model)
            full = run(ids.unsqueeze(0))  # (1, d)
            without = _in_chunks(run, shorter)  # (L, d)
            if target is None:
                scores = 1.0 - F.cosine_similarity(without, full, dim=-1)  # (L,)
                meaning = ("the cosine distance between the pooled sentence embedding of the text and of the "
                           "text without the token (larger = the token matters more)")
            else:
                d = full.shape[-1]
                k = _check_index(target, d, f"the pooled embedding has {d} features")
                scores = full[0, k] - without[:, k]  # (L,)
                meaning = f"how much feature {k} of the pooled embedding drops when the token is removed"
            details = {"full": full[0]}
        else:
            raise InputError(f"leave_one_out needs a language-model head or a pooled sentence embedding; "
                             f"{model.name} ({model.family}) has neither")
    return Attribution("leave_one_out", "output", tokens, scores, meaning=meaning, target=target,
                       details=details)


register_method(AttributionMethod(
    "leave_one_out", "output", leave_one_out,
    "leave-one-out: remove each token and measure the change of the target (the ground truth)",
    source="Li, Monroe & Jurafsky 2016; DeYoung et al. 2020 (ERASER)"))
