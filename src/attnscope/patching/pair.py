"""A clean/corrupted prompt pair, checked, and the metric read on the last position's logits.

Activation patching copies an activation of the clean run into the corrupted run *at the same
position*, so both prompts must be the same number of tokens, and the default metric
(the logit difference of two tokens) needs each of them to be one token. Both are checked here,
with messages that show the tokens and say how to fix the input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Union

import numpy as np
import torch

from ..errors import InputError
from ..i18n import Msg, error, listing

Tensor = torch.Tensor
#: ``metric(logits (B, V)) -> (B,)``: what is measured on the logits of the last position.
Metric = Callable[[Tensor], Tensor]


@dataclass
class PatchPair:
    """Token ids ``(1, L)`` of the clean and the corrupted prompt and what is shown of them."""

    clean_ids: Tensor
    corrupted_ids: Tensor
    clean_tokens: list
    corrupted_tokens: list
    clean_text: str
    corrupted_text: str

    @property
    def length(self) -> int:
        return int(self.clean_ids.shape[1])


def require_lm(model) -> None:
    """InputError unless ``model`` is a one-stack model with a language-model head (the metric reads
    next-token logits; the patches are written into its one stack of layers)."""
    if not getattr(model, "has_lm_head", False):
        raise error(InputError, "errors.patch_no_lm_head", name=repr(getattr(model, "name", "?")),
                    family=getattr(model, "family", "?"))
    if hasattr(model, "target_batch"):  # an encoder–decoder: no single stack of layers to patch
        raise error(InputError, "errors.patch_seq2seq", name=repr(getattr(model, "name", "?")))


def _shown(tokenizer, tokens) -> list:
    return tokenizer.readable(tokens) if tokenizer is not None else list(tokens)


def encode_pair(model, clean: str, corrupted: str) -> PatchPair:
    """Tokenize both prompts (as the model reads texts: its special tokens included) and check
    that they have the same number of tokens."""
    for what, text in (("clean", clean), ("corrupted", corrupted)):
        if not isinstance(text, str) or not text.strip():
            raise error(InputError, "errors.patch_prompt_empty", what=Msg(f"errors.patch_word_{what}"), text=repr(text))
    a, b = model.encode(clean), model.encode(corrupted)
    ta, tb = _shown(model.tokenizer, a.tokens[0]), _shown(model.tokenizer, b.tokens[0])
    if len(ta) != len(tb):
        first = next((i for i, (x, y) in enumerate(zip(ta, tb)) if x != y), min(len(ta), len(tb)))
        at = (Msg("errors.patch_at_pair", a=repr(ta[first]), b=repr(tb[first])) if first < min(len(ta), len(tb))
              else Msg("errors.patch_at_end"))
        raise error(InputError, "errors.patch_lengths", la=len(ta), lb=len(tb), ta=" | ".join(map(repr, ta)),
                    tb=" | ".join(map(repr, tb)), first=first, at=at)
    return PatchPair(a.input_ids, b.input_ids, ta, tb, clean, corrupted)


def single_token(model, token: Union[str, int], what: Msg) -> tuple[int, str]:
    """``(id, shown string)`` of an answer token given as text (it must be one token, without the
    special tokens a text gets) or as an id."""
    tok = model.tokenizer
    V = int(model.config.vocab_size)
    if isinstance(token, bool):
        raise error(InputError, "errors.patch_token_kind", what=what, token=repr(token))
    if isinstance(token, (int, np.integer)):  # an id (numpy's too: argmax gives them)
        token = int(token)
        if not 0 <= token < V:
            raise error(InputError, "errors.patch_token_id", what=what, token=token, n=V, last=V - 1)
        return token, _shown(tok, [tok.id_to_token(token)])[0] if tok is not None else str(token)
    if not isinstance(token, str) or token == "":
        raise error(InputError, "errors.patch_token_empty", what=what, token=repr(token))
    if tok is None:
        raise error(InputError, "errors.patch_no_tokenizer", name=repr(model.name), what=what)
    enc = tok.backend.encode(token, add_special_tokens=False)
    shown = _shown(tok, enc.tokens)
    if len(enc.ids) != 1:
        hint = Msg("errors.patch_hint_choose")
        if not token.startswith(" "):
            alone = tok.backend.encode(" " + token, add_special_tokens=False)
            if len(alone.ids) == 1:
                hint = Msg("errors.patch_hint_space", word=repr(" " + token))
        raise error(InputError, "errors.patch_not_one_token", what=what, token=repr(token), n=len(enc.ids),
                    pieces=listing([repr(s) for s in shown], " | "), hint=hint)
    return int(enc.ids[0]), shown[0]


def logit_diff(answer_id: int, wrong_id: int) -> Metric:
    """The default metric: ``logit[answer] − logit[wrong]`` of each row, float64 ``(B,)``."""
    def metric(logits: Tensor) -> Tensor:
        return logits[:, answer_id].double() - logits[:, wrong_id].double()  # (B,)
    metric.__name__ = "logit_diff"
    return metric


def checked_metric(metric: Optional[Metric], answer, wrong, model) -> tuple[Metric, str, dict]:
    """The metric to use, its description, and the answer/wrong tokens (``{}`` for a custom metric)."""
    if metric is not None:
        if not callable(metric):
            raise error(InputError, "errors.patch_metric_callable", type=type(metric).__name__)
        if answer is not None or wrong is not None:
            raise error(InputError, "errors.patch_metric_and_tokens")
        return metric, getattr(metric, "__name__", "custom metric"), {}
    if answer is None or wrong is None:
        raise error(InputError, "errors.patch_needs_tokens")
    a, a_shown = single_token(model, answer, Msg("errors.patch_word_answer"))
    w, w_shown = single_token(model, wrong, Msg("errors.patch_word_wrong"))
    if a == w:
        raise error(InputError, "errors.patch_same_token", shown=repr(a_shown), id=a)
    name = f"logit({a_shown!r}) − logit({w_shown!r})"
    return logit_diff(a, w), name, {"answer": {"text": a_shown, "id": a}, "wrong": {"text": w_shown, "id": w}}
