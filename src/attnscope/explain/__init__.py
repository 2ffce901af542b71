"""Worked calculations that a learner can follow.

    >>> import attnscope
    >>> w = attnscope.explain(example="three-tokens")        # a Worked object
    >>> print(w.render("markdown", lang="zh", decimals=4))

:func:`explain` returns a :class:`~.doc.Worked` (the numbers and the steps, no formatting);
``w.render(format, lang, decimals)`` turns it into text ("rich", "markdown", "latex", "json").

Kinds:

* toy inputs (``example=``, ``source=`` a YAML/JSON/TOML file or a mapping, or ``X=, W_Q=, …``):
  :func:`.toy.explain_toy`; every head of a multi-head toy (``W_QKV``, or ``n_heads`` with
  ``W_O``; ``example="multi-head"``): :mod:`.multihead`;
* one query row — of a real model (``text=, layer=, head=, token=|position=``, from the trace)
  or of given raw scores (``scores=``, the first article's row of 喜): :mod:`.row`;
* the scaling lesson (``lesson="scaling"``): :mod:`.scaling`;
* positions (``lesson="positions"``, ``scheme="sinusoidal"|"rotary"|"t5"``): :mod:`.positions_worked`.
"""

from __future__ import annotations

from typing import Optional

from ..errors import InputError
from ..i18n import Msg, error
from .doc import Worked
from .inputs import loaded
from .places import INPUT, Where
from .toy import compute, explain_toy
from .toy_input import ToyProblem


def toy_problem(source=None, *, example: Optional[str] = None, **matrices):
    """A :class:`ToyProblem` from a built-in example name, a file path, a mapping or keyword matrices
    (a :class:`~.multihead_input.MultiHeadProblem` when the mapping asks for every head: W_QKV, or
    n_heads with W_O; see :func:`.multihead_input.is_multihead`)."""
    from ..examples import EXAMPLES
    given = [x for x in (source is not None, example is not None, bool(matrices)) if x]
    if len(given) > 1:
        raise error(InputError, "errors.explain_give_one")
    if example is not None:
        if not isinstance(example, str) or example not in EXAMPLES:  # ([] is no name; it cannot be looked up)
            raise error(InputError, "errors.explain_unknown_example", name=repr(example),
                        choices=", ".join(sorted(EXAMPLES)))
        return _problem(dict(EXAMPLES[example]), Msg("errors.explain_source_example", example=example))
    if isinstance(source, dict):
        return _problem(source, INPUT)
    if isinstance(source, ToyProblem) or type(source).__name__ == "MultiHeadProblem":
        return source
    if isinstance(source, str):
        from .inputs import load_mapping
        mapping = load_mapping(source)
        if "problem" in mapping and "answers" in mapping:  # what exercise writes and check reads
            raise error(InputError, "errors.explain_answers_file", path=source)
        return _problem(mapping, source)
    if matrices:
        clean = {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in matrices.items() if v is not None}
        return _problem(clean, Msg("errors.explain_source_matrices"))
    raise error(InputError, "errors.explain_nothing")


def _problem(mapping, source: Where):
    from .multihead_input import MultiHeadProblem, is_multihead
    if is_multihead(mapping):
        return MultiHeadProblem.from_mapping(mapping, source=source)
    return ToyProblem.from_mapping(mapping, source=source)


def explain_problem(p, expand: str = "auto") -> Worked:
    """The worked calculation of a toy problem: every head of a multi-head one, else :func:`explain_toy`."""
    if type(p).__name__ == "MultiHeadProblem":
        from .multihead import explain_multihead
        return explain_multihead(p, expand=expand)
    return explain_toy(p, expand=expand)


def explain(source=None, *, example: Optional[str] = None, lesson: Optional[str] = None,
            text: Optional[str] = None, model=None, layer: Optional[int] = None, head: Optional[int] = None,
            token: Optional[str] = None, position: Optional[int] = None, dims: Optional[int] = None,
            scores=None, values=None, tokens=None, d_k: Optional[int] = None, query: Optional[int] = None,
            target: Optional[str] = None, attention: Optional[str] = None,
            expand: str = "auto", seed: Optional[int] = None, samples: Optional[int] = None, path: bool = False,
            attribution: Optional[str] = None, **matrices) -> Worked:
    """A worked calculation.

    Args:
        source: toy input — path of a YAML/JSON/TOML file, a mapping, or a ToyProblem.
        example: a built-in toy input ("three-tokens", "multi-head", "grouped-query").
        lesson: "scaling" for the √d_k lesson (``d_k`` defaults to 64; ``seed``, ``samples``);
            "positions" for sinusoidal, rotary and T5 positions worked out (``scheme=``, ``position``,
            ``dim``, ``offset``, ``d_model``, ``base``, ``model``, ``layer``, ``d_k``, ``pairing``,
            ``vector``, ``buckets``, ``max_distance``, ``causal``: :mod:`.positions_worked`).
        text, model, layer, head, token, position, dims: one query row of a real model — the
            model (an ``attnscope`` Model or a path; None = the default), the text, the layer and
            head (0-based), the query by token string or 0-based position, and how many leading
            dimensions of V to write out.
        path: with ``text``: the token's whole path through the layer instead of the row alone —
            tokens and ids, embedding rows, norms, ``q = x W_Q + b``, the row, the heads and ``W_O``,
            residuals, the feed-forward and the layer's output (:func:`.path.explain_path`); any family:
            DeBERTa's three terms, and for T5/BART a source token through an encoder layer or, with
            ``target``, a target token through a decoder layer (self- and cross-attention).
        scores, values, tokens, d_k, query: one row from given raw scores (and optional V rows),
            e.g. the first article's row of 喜.
        target, attention: encoder–decoder models (T5, BART): ``text`` is the source, ``target``
            the decoder's text, ``attention`` "encoder" (default), "self" or "cross" (T5 rows show
            their bias buckets, DeBERTa rows their three score terms: :mod:`.row_relative`).
        expand: "auto" | "always" | "never" — write out products and weighted sums.
        attribution: "rollout" | "norm" | "alti" — with ``text`` and ``token``/``position``: that token's
            attribution row worked out (:mod:`.attribution_doc`); ``layer`` is the top layer (rollout,
            ALTI) or the layer (norm), default the last (every other lesson: layer 0).
        **matrices: X, W_Q, W_K, W_V, W_O, mask, causal, scoring, tokens for a toy input.
    An argument the chosen lesson does not read is an InputError naming it (it would change nothing).
    Returns:
        :class:`Worked`; ``.render(format, lang, decimals)`` formats it.
    """
    # read only by another lesson: with a model's text they are refused rather than dropped
    other = {"source": source, "example": example, "lesson": lesson, "scores": scores, "values": values,
             "tokens": tokens, "d_k": d_k, "query": query, "seed": seed, "samples": samples, **matrices}
    given = [k for k, v in other.items() if v is not None and v is not False]
    if attribution is not None:
        from .attribution_doc import explain_attribution
        if given:
            raise error(InputError, "errors.attribution_lesson_other", option=given[0])
        return explain_attribution(text, attribution, model=model, token=token, position=position, layer=layer,
                                   dims=3 if dims is None else dims, expand=expand, target=target,
                                   attention=attention, path=path)
    if matrices and head is not None and text is None and scores is None and lesson is None:
        matrices["head"], head = head, None  # a toy's shown head (n_heads): a key of its mapping
    row = {"text": text, "model": model, "layer": layer, "head": head, "token": token, "position": position,
           "dims": dims, "target": target, "attention": attention, "path": path}
    if lesson is not None or (target is None and attention is None and not path):  # else: their sentences below
        _refuse_unread({**other, **row}, lesson, text, scores, matrices)
    layer, head, dims = 0 if layer is None else layer, 0 if head is None else head, 3 if dims is None else dims
    if lesson is not None:
        if lesson == "positions":
            from .positions_lesson import explain_positions
            return explain_positions(position=position, model=model, layer=layer, d_k=d_k, **matrices)
        if lesson != "scaling":
            raise error(InputError, "errors.explain_unknown_lesson", lesson=repr(lesson))
        from .scaling import SAMPLES, SEED, explain_scaling
        return explain_scaling(d_k=64 if d_k is None else d_k, seed=SEED if seed is None else seed,
                               samples=SAMPLES if samples is None else samples,
                               vectors=scores if scores is not None else None)
    if text is None and (target is not None or attention is not None):
        raise error(InputError, "errors.explain_target_needs_text")
    if path and text is None:
        raise error(InputError, "errors.explain_path_needs_text")
    if text is not None:
        if given:
            raise error(InputError, "errors.explain_text_other", option=given[0])
        # an empty text or target would reach the model loader or the tokenizer as "no input"
        if isinstance(text, str) and not text.strip():
            raise error(InputError, "errors.text_empty")
        if isinstance(target, str) and not target.strip():
            raise error(InputError, "errors.explain_target_empty")
        if path:
            from .path import explain_path
            return explain_path(text, model=model, layer=layer, head=head, token=token, position=position,
                                dims=dims, expand=expand, target=target, attention=attention)
        from .row_relative import explain_relative_row, handles
        if isinstance(text, str) and text.strip():
            model = loaded(model)  # once: its config says which row this is, and the row reads it
        if target is not None or attention is not None or handles(model):
            return explain_relative_row(text, model, target=target, attention=attention, layer=layer, head=head,
                                        token=token, position=position, dims=dims, expand=expand)
        from .row import explain_model_row
        return explain_model_row(text, model=model, layer=layer, head=head, token=token,
                                 position=position, dims=dims, expand=expand)
    if scores is not None:
        from .row import explain_scores_row
        return explain_scores_row(scores, tokens=tokens, d_k=d_k, values=values, query=query,
                                  dims=dims, expand=expand)
    if tokens is not None:
        matrices["tokens"] = tokens
    return explain_problem(toy_problem(source, example=example, **matrices), expand=expand)


#: What each lesson reads of explain()'s arguments (a toy and the positions lesson: their **matrices too).
_READS = {"toy": ("source", "example", "tokens"), "scores": ("scores", "values", "tokens", "d_k", "query", "dims"),
          "scaling": ("lesson", "d_k", "seed", "samples", "scores"),
          "positions": ("lesson", "position", "model", "layer", "d_k")}


def _refuse_unread(passed: dict, lesson, text, scores, matrices: dict) -> None:
    """InputError naming the first argument given that the lesson chosen does not read (a model's
    row checks its own, in explain)."""
    kind = lesson if lesson in ("scaling", "positions") else None if (text is not None or lesson is not None) \
        else "scores" if scores is not None else "toy"
    if kind is None:
        return
    reads = set(_READS[kind]) | (set(matrices) if kind in ("toy", "positions") else set())
    given = [k for k, v in passed.items() if k not in reads and v is not None and v is not False]
    if given:
        raise error(InputError, "errors.explain_lesson_other", option=given[0], lesson=Msg(f"errors.explain_lesson_{kind}"))


__all__ = ["explain", "explain_toy", "explain_problem", "toy_problem", "ToyProblem", "compute", "Worked"]

