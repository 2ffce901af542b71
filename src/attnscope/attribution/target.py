"""What an output attribution explains: one scalar per text, the *target* (issue 27).

The one place where ``target=`` is read and turned into a number, for every output method
(gradient × input, integrated gradients, leave-one-out) and for gradient-weighted rollout:

* **decoder** (a language model: GPT-2, Llama, Qwen, Gemma, …): the next-token logit at the
  last position. ``target=None`` → the model's top prediction there; ``target=token_id`` → that
  token's logit; ``target=(a, b)`` → the logit difference ``logit[a] − logit[b]``.
* **encoder–decoder** (T5, BART): the same logits, of the first token the decoder predicts from
  its start token alone, given the source text (the attributed tokens are the source's).
* **encoder** (BERT, MiniLM, DeBERTa, …): the pooled sentence embedding ``p`` (the model's own
  pooling, *before* any L2 normalisation: a normalised embedding projected on its own direction
  has zero gradient). ``target=None`` → ``p · û`` with ``û = p(text) / ‖p(text)‖`` held fixed (its
  length along its own direction; at the text itself, ``‖p‖``); ``target=k`` → feature ``k`` of
  ``p``; ``target=(a, b)`` → ``p[a] − p[b]``.

:func:`resolve_target` reads ``target`` once for a text (one forward pass, no gradient);
:func:`target_values` evaluates it for a batch of (possibly changed) copies of that text.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Optional

import torch

from ..config import is_seq2seq
from ..errors import InputError
from ..i18n import Msg, error

Tensor = torch.Tensor


def model_kind(model) -> str:
    """"seq2seq", "decoder" (a one-stack language model) or "encoder" (pooled embedding)."""
    if is_seq2seq(model):
        return "seq2seq"
    return "decoder" if model.has_lm_head else "encoder"


@dataclass(frozen=True)
class Target:
    """A resolved target: ``ids`` = (token or feature,) or (a, b) for a difference; ``direction``
    (d,) the fixed unit vector of an encoder's default target (else None); ``words`` says what it is."""

    kind: str                     # "seq2seq", "decoder" or "encoder"
    ids: tuple
    direction: Optional[Tensor]   # (d,)
    words: str

    @property
    def value(self):
        """What ``Attribution.target`` shows: the token/feature id, the pair, or None (encoder default)."""
        if self.direction is not None:
            return None
        return self.ids[0] if len(self.ids) == 1 else self.ids


def outputs(model, input_ids: Tensor, attention_mask: Tensor, token_type_ids: Optional[Tensor] = None) -> Tensor:
    """The vector a target reads, per text: next-token logits ``(B, V)`` at the last position of a
    decoder (of the decoder's start token for T5/BART), or the pooled embedding ``(B, d)`` of an encoder.
    Runs under the caller's grad mode and hooks."""
    kind = model_kind(model)
    if kind == "seq2seq":
        start = torch.full((input_ids.shape[0], 1), model.config.decoder_start_token_id,
                           dtype=torch.long, device=input_ids.device)  # (B, 1)
        hidden = model(input_ids, attention_mask, decoder_input_ids=start,
                       decoder_attention_mask=torch.ones_like(start))  # (B, 1, d)
        return model.lm_logits(hidden[:, -1])  # (B, V)
    hidden = model(input_ids, attention_mask, token_type_ids)  # (B, L, d)
    if kind == "decoder":
        # one text, no padding: the last position is the last token (right-padded batches are not used here)
        return model.lm_logits(hidden[:, -1])  # (B, V)
    return model.pool(hidden, attention_mask)  # (B, d)


#: what a target id counts, as the errors name it (one and several), by its English words
WHAT_KEYS = {"token id": "token_id", "embedding feature": "feature"}


def what_word(what: str, plural: bool = False) -> Msg:
    """``what`` ("token id" or "embedding feature") as a catalogue word, ``plural`` for several."""
    return Msg(f"errors.attribution_what{'s' if plural else ''}_{WHAT_KEYS[what]}")


def _index(x, n: int, what: str) -> int:
    if isinstance(x, bool) or not hasattr(x, "__index__"):
        raise error(InputError, "errors.attribution_target_int", what=what_word(what), value=repr(x))
    x = operator.index(x)
    if not 0 <= x < n:
        raise error(InputError, "errors.attribution_target_range", value=x, whats=what_word(what, plural=True), last=n - 1)
    return x


def resolve_target(model, input_ids: Tensor, attention_mask: Tensor, token_type_ids: Optional[Tensor],
                   target) -> Target:
    """``target`` (None, an id, or a pair of ids) checked against the model and read for one text
    (``input_ids (1, L)``); InputError in one sentence for a bad one."""
    kind = model_kind(model)
    what = "token id" if kind != "encoder" else "embedding feature"
    with torch.no_grad():
        out = outputs(model, input_ids, attention_mask, token_type_ids)[0]  # (V,) or (d,)
    n = out.shape[-1]
    if target is None:
        if kind == "encoder":
            norm = out.norm()
            if not norm > 0:
                raise error(InputError, "errors.attribution_zero_embedding")
            return Target(kind, (), (out / norm).detach(), "the pooled embedding's length along its own direction")
        top = int(out.argmax())
        return Target(kind, (top,), None, f"the logit of the top prediction, token {top}")
    if isinstance(target, (tuple, list)):
        if len(target) != 2:
            raise error(InputError, "errors.attribution_target_pair", what=what_word(what), n=len(target))
        a, b = (_index(t, n, what) for t in target)
        if a == b:
            raise error(InputError, "errors.attribution_target_same", whats=what_word(what, plural=True), a=a, b=b)
        name = "logit" if kind != "encoder" else "pooled feature"
        return Target(kind, (a, b), None, f"the {name} difference {a} − {b}")
    k = _index(target, n, what)
    return Target(kind, (k,), None, f"the logit of token {k}" if kind != "encoder" else f"pooled feature {k}")


def read(t: Target, out: Tensor) -> Tensor:
    """The target's value ``(B,)`` from :func:`outputs` ``(B, V or d)``."""
    if t.direction is not None:
        return out @ t.direction.to(out.dtype)  # (B,)
    if len(t.ids) == 2:
        return out[:, t.ids[0]] - out[:, t.ids[1]]  # (B,)
    return out[:, t.ids[0]]  # (B,)


def target_values(model, t: Target, input_ids: Tensor, attention_mask: Tensor,
                  token_type_ids: Optional[Tensor] = None) -> Tensor:
    """The target of each text of a batch ``(B, L)`` → ``(B,)``, under the caller's grad mode and hooks."""
    return read(t, outputs(model, input_ids, attention_mask, token_type_ids))
