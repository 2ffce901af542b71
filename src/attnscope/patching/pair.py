"""A clean/corrupted prompt pair, checked, and the metric read on the last position's logits.

Activation patching copies an activation of the clean run into the corrupted run *at the same
position*, so both prompts must be the same number of tokens, and the default metric
(the logit difference of two tokens) needs each of them to be one token. Both are checked here,
with messages that show the tokens and say how to fix the input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Union

import torch

from ..errors import InputError

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
    """InputError unless ``model`` has a language-model head (the metric reads next-token logits)."""
    if not getattr(model, "has_lm_head", False):
        raise InputError(f"model {getattr(model, 'name', '?')!r} ({getattr(model, 'family', '?')}) has no "
                         f"language-model head: patching measures next-token logits, so it needs a causal "
                         f"language model (GPT-2, Llama, Qwen2, Mistral, Gemma 3; e.g. --model smollm2-135m)")


def _shown(tokenizer, tokens) -> list:
    return tokenizer.readable(tokens) if tokenizer is not None else list(tokens)


def encode_pair(model, clean: str, corrupted: str) -> PatchPair:
    """Tokenize both prompts (as the model reads texts: its special tokens included) and check
    that they have the same number of tokens."""
    for what, text in (("clean", clean), ("corrupted", corrupted)):
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"the {what} prompt must be a non-empty text, got {text!r}")
    a, b = model.encode(clean), model.encode(corrupted)
    ta, tb = _shown(model.tokenizer, a.tokens[0]), _shown(model.tokenizer, b.tokens[0])
    if len(ta) != len(tb):
        first = next((i for i, (x, y) in enumerate(zip(ta, tb)) if x != y), min(len(ta), len(tb)))
        at = (f"{ta[first]!r} vs {tb[first]!r}" if first < min(len(ta), len(tb))
              else "one prompt ends there")
        raise InputError(
            f"the clean and corrupted prompts tokenize to different lengths ({len(ta)} vs {len(tb)} tokens); "
            f"patching copies activations position by position, so both need the same number of tokens.\n"
            f"  clean     ({len(ta)}): {' | '.join(map(repr, ta))}\n"
            f"  corrupted ({len(tb)}): {' | '.join(map(repr, tb))}\n"
            f"  They first differ at position {first} ({at}). Fix: replace each word by one that is as many "
            f"tokens long (e.g. names that are one token each, written with their leading space).")
    return PatchPair(a.input_ids, b.input_ids, ta, tb, clean, corrupted)


def single_token(model, token: Union[str, int], what: str) -> tuple[int, str]:
    """``(id, shown string)`` of an answer token given as text (it must be one token, without the
    special tokens a text gets) or as an id."""
    tok = model.tokenizer
    V = int(model.config.vocab_size)
    if isinstance(token, bool):
        raise InputError(f"{what} must be a token (text or id), got {token!r}")
    if isinstance(token, int):
        if not 0 <= token < V:
            raise InputError(f"{what}: token id {token} is out of range; the vocabulary has {V} ids (0..{V - 1})")
        return token, _shown(tok, [tok.id_to_token(token)])[0] if tok is not None else str(token)
    if not isinstance(token, str) or token == "":
        raise InputError(f"{what} must be a non-empty text or a token id, got {token!r}")
    if tok is None:
        raise InputError(f"model {model.name!r} has no tokenizer: give {what} as a token id")
    enc = tok.backend.encode(token, add_special_tokens=False)
    shown = _shown(tok, enc.tokens)
    if len(enc.ids) != 1:
        hint = ""
        if not token.startswith(" "):
            alone = tok.backend.encode(" " + token, add_special_tokens=False)
            if len(alone.ids) == 1:
                hint = f" With a leading space, {' ' + token!r} is one token: the word as it follows another."
        raise InputError(f"{what} {token!r} is {len(enc.ids)} tokens ({' | '.join(map(repr, shown))}), not one: "
                         f"the metric reads the logit of a single token.{hint or ' Choose a word that is one token.'}")
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
            raise InputError(f"metric must be a callable metric(logits (B, V)) -> (B,), got {type(metric).__name__}")
        if answer is not None or wrong is not None:
            raise InputError("give either a metric or answer and wrong tokens, not both")
        return metric, getattr(metric, "__name__", "custom metric"), {}
    if answer is None or wrong is None:
        raise InputError("the default metric (logit difference) needs an answer and a wrong token "
                         "(--answer ' Mary' --wrong ' John')")
    a, a_shown = single_token(model, answer, "the answer")
    w, w_shown = single_token(model, wrong, "the wrong token")
    if a == w:
        raise InputError(f"the answer and the wrong token are the same token ({a_shown!r}, id {a}): "
                         f"their logit difference is always 0")
    name = f"logit({a_shown!r}) − logit({w_shown!r})"
    return logit_diff(a, w), name, {"answer": {"text": a_shown, "id": a}, "wrong": {"text": w_shown, "id": w}}
