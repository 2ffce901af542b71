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

The target is read as every output method reads it (:mod:`.target`, one definition): a decoder's
next-token logit at the last position (default the top prediction; ``target=token_id`` or
``target=(a, b)`` a logit difference), an encoder–decoder's first decoder prediction from its start
token, an encoder's pooled embedding before normalisation (default its length along its own
direction, held fixed; ``target=k`` feature k). Score = target(full) − target(without j): positive =
token j supports it. Encoders also get ``details["cosine_distance"]``: 1 − cos between the pooled
embeddings of the text and of the text without j. The text is read as given (E5: no ``query: ``
prefix is added; write it into the text).
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F

from ..errors import InputError
from ..i18n import error
from .base import Attribution, AttributionMethod, register_method
from .target import outputs, read, resolve_target
from .weights import text_ids

Tensor = torch.Tensor

#: shortened texts run together in one batch of at most this many
CHUNK = 32


def _without_each(ids: Tensor) -> Tensor:
    """``(L, L − 1)``: row j = ``ids`` (L,) with token j removed."""
    n = ids.shape[0]
    keep = ~torch.eye(n, dtype=torch.bool, device=ids.device)  # (L, L)
    return ids.unsqueeze(0).expand(n, n)[keep].view(n, n - 1)  # (L, L − 1)


def _outputs_in_chunks(model, rows: Tensor) -> Tensor:
    """The vector a target reads (:func:`.target.outputs`) for each row of ``rows (N, L′)``, a chunk of
    :data:`CHUNK` at a time: ``(N, V or d)``."""
    parts = []
    for s in range(0, rows.shape[0], CHUNK):
        chunk = rows[s:s + CHUNK]  # (n, L′)
        parts.append(outputs(model, chunk, torch.ones_like(chunk), torch.zeros_like(chunk)))
    return torch.cat(parts)


def leave_one_out(model, text: str, *, layer: Optional[int] = None, target=None) -> Attribution:
    """Scores ``(L,)``: the change of the target when each token is removed (module docstring)."""
    if layer is not None:
        raise error(InputError, "errors.attribution_loo_layer")
    tokens, ids = text_ids(model, text)  # ids (L,)
    if len(tokens) < 2:
        raise error(InputError, "errors.attribution_loo_short", text=repr(text), n=len(tokens))
    one = ids.unsqueeze(0)  # (1, L)
    t = resolve_target(model, one, torch.ones_like(one), torch.zeros_like(one), target)
    with torch.no_grad():
        full = outputs(model, one, torch.ones_like(one), torch.zeros_like(one))  # (1, V or d)
        without = _outputs_in_chunks(model, _without_each(ids))  # (L, V or d)
        scores = read(t, full) - read(t, without)  # (L,)
    details: dict = {"full": read(t, full)[0]}
    if t.kind == "encoder":
        details["cosine_distance"] = 1.0 - F.cosine_similarity(without, full, dim=-1)  # (L,)
    meaning = f"how much {t.words} drops when the token is removed (full − without it; positive = the token supports it)"
    return Attribution("leave_one_out", "output", tokens, scores, meaning=meaning, target=t.value, details=details)


register_method(AttributionMethod(
    "leave_one_out", "output", leave_one_out,
    "leave-one-out: remove each token and measure the change of the target (the ground truth)",
    source="Li, Monroe & Jurafsky 2016; DeYoung et al. 2020 (ERASER)"))
