"""Trace texts with exactly what the viewer needs (shared by ``attnscope view`` and the server)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Optional, Sequence

from ..errors import InputError
from ..i18n import Msg, error, word
from . import data as _data
from .attribution_view import add_attribution
from .lens_view import add_lens

#: q, k, v of every layer; the hidden states for the context view; head 0's weights of every
#: layer, against which the page's recomputation is checked. A single head's weights are computed
#: beside the fused kernel, so every layer's output, and thus every q, k, v, is bit for bit what
#: any other trace that records no full weight matrix gets (``attnscope explain`` included).
VIEW_NAMES = ("layers.*.attn.q", "layers.*.attn.k", "layers.*.attn.v", "embed.out", "layers.*.out",
              "layers.*.attn.weights[0]")


def view_names(config) -> list:
    """:data:`VIEW_NAMES` for a model with ``config``: rotary models store q and k before the
    rotation (``q_proj``/``k_proj``, or ``q_normed``/``k_normed`` with QK-norm) instead."""
    qs, ks = _data.operand_steps(config)
    return [n.replace("attn.q", f"attn.{qs}").replace("attn.k", f"attn.{ks}") if n.endswith((".q", ".k")) else n
            for n in VIEW_NAMES]


def trace_texts(model, texts: Sequence[str]):
    """``model.trace(texts)`` recording :func:`view_names` (one padded batch)."""
    return model.trace(list(texts), names=view_names(model.config))


def trace_each(model, texts: Sequence[str]) -> list:
    """One trace per text, so that every number equals what ``attnscope explain`` computes for
    that text (a padded batch rounds differently in float32); a second text too long is named
    ``compare`` (:func:`compare_named`)."""
    traces = []
    for i, t in enumerate(texts):
        with compare_named(i):
            traces.append(model.trace([t], names=view_names(model.config)))
    return traces


@contextmanager
def compare_named(index: int) -> Iterator[None]:
    """Around the tokenizing of a page's text ``index``: past the model's limit, the second text
    (the context view's ``compare``) is named, not "the text" of the tokenizer's sentence."""
    try:
        yield
    except InputError as e:
        if index == 0 or getattr(e, "key", None) != "errors.text_too_long":
            raise
        raise error(InputError, "errors.viewer_compare_too_long", **e.values) from None


def check_token_compare(token: Optional[str], compare: Optional[str]) -> None:
    """InputError for a ``token`` without ``compare``: it picks the token the two texts share."""
    if token is not None and compare is None:
        raise error(InputError, "errors.viewer_token_needs_compare", token=repr(token))


def view_data(model, text: str, *, compare: Optional[str] = None, token: Optional[str] = None,
              decimals: int = 4, attribution: bool = False, lens: bool = False) -> dict:
    """Page data for ``text`` (and the context comparison with ``compare``); ``attribution``: with
    the matrices of the page's attribution switch (:mod:`attnscope.viewer.attribution_view`);
    ``lens``: with the lens view's grid, for a language model (:mod:`attnscope.viewer.lens_view`)."""
    check_token_compare(token, compare)
    texts = [text] if compare is None else [text, compare]
    traces = trace_each(model, texts)
    normal = getattr(getattr(model, "tokenizer", None), "normalize", None)
    data = _data.build(traces, compare=True if compare is not None else None, token=token, decimals=decimals,
                       normal=normal, special=special_tokens(model))
    for entry, tr in zip(data["texts"], traces):
        entry["tokens"] = display_tokens(model, tr.text_tokens(0))
    if attribution:
        add_attribution(data, model, texts)
    if lens:
        add_lens(data, model, texts)
    return data


def special_tokens(model) -> set:
    """The special tokens of ``model``'s tokenizer (none without one): the context view's default
    token is never one of them."""
    specials = getattr(getattr(model, "tokenizer", None), "special_tokens", None)
    return set(specials()) if callable(specials) else set()


def display_tokens(model, tokens: Sequence[str]) -> list:
    """Tokens as a person reads them (:func:`attnscope.pieces.labels_of`): byte-level BPE pieces as
    the text they form (``ĠMary`` → `` Mary``; ``喜``, cut into three pieces, on the piece that
    completes it, the two before it ``…``), bytes that are no UTF-8 as hex (``‹e6›``)."""
    from ..pieces import labels_of

    return labels_of(tokens, getattr(model, "tokenizer", None))


def unicode_problem_msg(text: str, from_bytes: bool = True) -> Optional[Msg]:
    """Why ``text`` is not valid Unicode (a message to write in any language), or None when it is.

    Python strings can hold lone surrogates: from a JSON ``"\\ud800"`` escape without its pair,
    or from command-line bytes that are not UTF-8 (decoded with surrogateescape to U+DC80..DCFF).
    No tokenizer can read them. ``from_bytes=False`` for a string that never went through
    surrogateescape (a JSON request's: its U+DC80..DCFF are escapes too, not bytes).
    """
    for i, c in enumerate(text):
        o = ord(c)
        if from_bytes and 0xDC80 <= o <= 0xDCFF:
            return Msg("errors.viewer_not_utf8", byte=f"{o - 0xDC00:02X}", i=i)
        if 0xD800 <= o <= 0xDFFF:
            return Msg("errors.viewer_surrogate", code=f"{o:04X}", i=i)
    return None


def check_dot_product(model) -> None:
    """InputError for a model whose weights are not softmax(factor·q·kᵀ) (+ a mask, ALiBi's term):
    DeBERTa, whose scores add relative-position terms. What reads q and k without the recorded
    weights (the server's /api/attention, /api/steps, its held texts) asks this first; a page
    compares with the recorded weights itself (:mod:`attnscope.viewer.data`)."""
    if getattr(model.config, "kind", "") == "deberta":
        raise error(InputError, "errors.viewer_deberta", model=model.name)


def check_text(text: str, what: str = "text", max_chars: Optional[int] = None) -> str:
    """``text`` when the viewer can show it, else InputError naming ``what`` and the problem:
    empty, longer than ``max_chars`` characters, or not valid Unicode."""
    if not text.strip():
        raise error(InputError, "errors.empty_type", what=word(what))
    if max_chars is not None and len(text) > max_chars:
        raise error(InputError, "errors.text_chars", what=word(what), n=len(text), limit=max_chars)
    problem = unicode_problem_msg(text)
    if problem:
        raise error(InputError, "errors.viewer_text_problem", what=word(what), problem=problem)
    return text
