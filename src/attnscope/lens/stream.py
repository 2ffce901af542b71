"""The residual stream of a language model as a list of named points, and what reads it out.

A *point* is a place in the stream that the final norm and the unembedding can read (issue 28):
``embed`` (what enters layer 0), and per layer ``layers.{i}.attn_resid`` (after the attention
block's residual sum) and ``layers.{i}.out`` (after the MLP's). Post-LN encoders have no such
stream (their residual passes through a norm at every step) and no unembedding: refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..errors import InputError
from ..i18n import error
from ..pieces import word_labels
from ..recipe import get_layer_recipe

Tensor = torch.Tensor


@dataclass(frozen=True)
class Point:
    """One readable place: ``name`` (a trace name, or ``embed``), ``layer`` (−1 for ``embed``) and
    ``after`` (``embed``, ``attn`` or ``mlp``)."""

    name: str
    layer: int
    after: str


def check_language_model(model, what: str) -> None:
    """InputError unless ``model`` is a one-stack language model with a pre-norm residual stream."""
    if hasattr(model, "target_batch") or not model.has_lm_head:
        raise error(InputError, "errors.lens_needs_lm", what=what, model=model.name)
    if model.config.norm == "post":
        raise error(InputError, "errors.lens_post_norm", what=what, model=model.name)


def check_text(text, what: str) -> None:
    """InputError for an empty text (a tokenizer that adds a start token would give that token alone)."""
    if isinstance(text, str) and not text:
        raise error(InputError, "errors.lens_empty_text", what=what)


def recipe_of(model, index: int):
    recipe = getattr(model.layers[index], "recipe", None)
    return recipe if recipe is not None else get_layer_recipe(model.config.norm)


def points(model) -> list[Point]:
    """Every readable point, in forward order: ``embed``, then per layer after attention and after the MLP."""
    out = [Point("embed", -1, "embed")]
    for i in range(model.config.n_layers):
        out += [Point(f"layers.{i}.attn_resid", i, "attn"), Point(f"layers.{i}.out", i, "mlp")]
    return out


def embed_value(tr, model) -> Tensor:
    """What enters layer 0, (B, L, d): ``embed.out``, the embedding as the stack receives it (Gemma's
    √d scale and BLOOM's embedding norm included). Not layer 0's residual sum minus its other
    operand: (x + a) − a is x only up to the rounding of the sum (1.7 % in bfloat16 on Gemma 3)."""
    return tr["embed.out"]


def stream_names(model) -> list[str]:
    """What a trace must record to read every point."""
    return ["embed.out"] + [p.name for p in points(model)[1:]]


def check_finite(tr, model, what: str) -> None:
    """InputError naming the first point whose stream (in ``tr``) has an inf or NaN: the model's own
    run overflowed (Gemma 3 in float16 does), and every number read from it would be NaN."""
    for p in points(model):
        name = "embed.out" if p.name == "embed" else p.name
        if name in tr and not bool(torch.isfinite(tr[name]).all()):
            raise error(InputError, "errors.lens_not_finite", what=what, point=p.name, dtype=str(tr[name].dtype))


def read_out(model, hidden: Tensor) -> Tensor:
    """The model's own reading of a residual point: the final norm, then the unembedding (and
    Gemma's final soft-cap where set), ``(…, d)`` → ``(…, vocab)``."""
    return model.lm_logits(model.ln_f(hidden))


def one_token_id(model, text: str) -> int:
    """The id of ``text`` when the tokenizer makes it one token (no special tokens added); else
    InputError saying how many it makes."""
    ids = model.tokenizer.backend.encode(text, add_special_tokens=False).ids
    if len(ids) != 1:
        raise error(InputError, "errors.lens_target_text", target=repr(text), n=len(ids))
    return int(ids[0])


def token_text(model, token_id: int) -> str:
    """One vocabulary entry as text for people: what it decodes to, or, where that is not whole
    characters (a byte-level piece holding part of a character decodes to '\ufffd'), its label in
    every token display (:mod:`attnscope.pieces`: the bytes in hex, ``‹e5›‹8c›``)."""
    tok = model.tokenizer
    words = tok.decode([token_id])
    return words if "\ufffd" not in words else word_labels([tok.id_to_token(token_id)], tok)[0]


def readable(model, tokens) -> list[str]:
    """Token strings for people (byte-level pieces as the characters they form)."""
    return list(model.tokenizer.readable(list(tokens)))
