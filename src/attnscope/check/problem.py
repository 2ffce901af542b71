"""The ``problem`` section as a chain to judge along, and :func:`check` itself."""

from __future__ import annotations

import math
import os
from importlib import resources
from typing import Any, Optional

from .. import exact as E
from ..errors import AttnscopeError, InputError
from ..explain import inputs
from ..explain.multihead_input import MultiHeadProblem, is_multihead
from ..explain.places import kind
from ..explain.toy_input import ToyProblem
from ..i18n import Msg, error
from .answers import parse_answers
from .chain import row_chain, toy_chain
from .judge import Report, run
from .multihead import multihead_chain, parse_multihead_answers
from .rollout import is_rollout, parse_rollout_answers, rollout_chain

#: Built-in answers files: the articles' own numbers.
EXAMPLES = {
    "three-tokens-article": "three_tokens_article.yaml",
    "xi-row-article": "xi_row_article.yaml",
}


def problem_chain(spec: Any, source: str) -> tuple:
    """(Chain, description dict) of the ``problem`` section."""
    from ..explain import toy_problem
    where = Msg("errors.check_where_problem", source=source)
    if not isinstance(spec, dict):
        raise error(InputError, "errors.check_problem_kind", where=where, kind=kind(spec))
    spec = inputs.plain(spec)
    if is_rollout(spec):  # a hand-computed attention rollout row (check/rollout.py)
        return rollout_chain(spec, where)
    if "example" in spec:
        extra = [k for k in spec if k != "example"]
        if extra:
            raise error(InputError, "errors.check_example_alone", where=where, extra=", ".join(map(repr, extra)))
        p = toy_problem(example=spec["example"])
        return _toy_chain(p), {"kind": "toy", "example": spec["example"], "tokens": p.tokens}
    if "text" in spec:
        from ..explain.row import model_row_data
        allowed_keys = {"text", "model", "layer", "head", "token", "position"}
        extra = [k for k in spec if k not in allowed_keys]
        if extra:
            raise error(InputError, "errors.check_row_unknown_key", where=where, name=repr(extra[0]))
        try:
            d = model_row_data(spec["text"], spec.get("model"), spec.get("layer", 0), spec.get("head", 0),
                               spec.get("token"), spec.get("position"))
        except AttnscopeError as e:
            # the model's own error, keyed or not, after the place in the answers file
            message = Msg(e.key, **e.values) if e.key else str(e)
            raise error(type(e), "errors.check_where_prefix", where=where, message=message) from None
        desc = {"kind": "model", "model": d["model"].name, "text": spec["text"], "layer": d["layer"],
                "head": d["head"], "position": d["qpos"], "token": d["tokens"][d["qpos"]], "tokens": d["tokens"]}
        chain = row_chain(d["raw"], d["tokens"], d["factor"], d["allowed"], d["V"], meta=desc, source=str(where),
                          operands=d.get("decoder"), qpos=d["qpos"])
        # the exact values are float64 from the weights; an answer from the float32 model is correct
        # within that model's float32 error (explain.row_error.float32_error)
        from ..explain.row_error import float32_error
        err = float32_error(d)
        for lk in chain.links:
            lk.slack = err.get(lk.name, lk.slack)
        desc["exact"] = "float64 from the model's weights"
        desc["float32_error"] = {k: float(v.max()) for k, v in err.items()}
        return chain, desc
    if "scores" in spec:
        allowed_keys = {"scores", "tokens", "d_k", "dk", "values", "V", "query", "factor"}
        extra = [k for k in spec if k not in allowed_keys]
        if extra:
            raise error(InputError, "errors.check_scores_unknown_key", where=where, name=repr(extra[0]))
        at = lambda name: Msg("errors.check_where_sub", where=where, name=name)  # noqa: E731  (a key of the problem)
        raw = inputs.vector(spec["scores"], at("scores"))
        S = len(raw)
        toks = inputs.labels(spec["tokens"], at("tokens"), S) if "tokens" in spec else [f"k{j}" for j in range(S)]
        dk = spec.get("d_k", spec.get("dk"))
        if dk is not None and "factor" in spec:
            raise error(InputError, "errors.check_dk_and_factor", where=where, dk=dk, factor=spec["factor"])
        if dk is not None:
            if isinstance(dk, bool) or not isinstance(dk, (int, float)) or not 0 < dk < math.inf or dk != int(dk):
                raise error(InputError, "errors.check_dk", where=at("d_k"), value=repr(dk))
            factor = E.score_factor("scaled", int(dk))  # exact: 1/8 at d_k = 64
        elif "factor" in spec:
            factor = E.dec(float(inputs.number(spec["factor"], at("factor"))))
        else:
            raise error(InputError, "errors.check_dk_or_factor", where=where)
        V = None
        vkey = "values" if "values" in spec else ("V" if "V" in spec else None)
        if vkey:
            V = inputs.matrix(spec[vkey], at(vkey), rows=S)
        desc = {"kind": "scores", "tokens": toks, "d_k": dk, "scores": raw.tolist()}
        if dk is None:
            desc["factor"] = float(factor)
        if "query" in spec:  # the row's own position, for the report
            desc["query"] = inputs.check_index(at("query"), spec["query"], S, "keys")
        return row_chain(raw, toks, factor, None, V, meta=desc, source=str(where), written=True), desc
    p = (MultiHeadProblem if is_multihead(spec) else ToyProblem).from_mapping(spec, source=f"{source}, problem")
    return _toy_chain(p), {"kind": "toy", "tokens": p.tokens, "name": p.name}


def _toy_chain(p):
    """toy_chain, or the multi-head chain (check/multihead.py) for a problem with every head."""
    return multihead_chain(p) if isinstance(p, MultiHeadProblem) else toy_chain(p)


#: The answers' reader of each chain kind that reads its own (the rest: :func:`parse_answers`).
PARSERS = {"multihead": parse_multihead_answers, "rollout": parse_rollout_answers}


def check(answers: Any = None, problem: Any = None, *, example: Optional[str] = None) -> Report:
    """Judge a learner's numbers.

    Args:
        answers: path of a YAML/JSON/TOML answers file (with ``problem`` and ``answers``), or a
            mapping — either the whole file ({"problem": …, "answers": …}) or just the answers
            (then give ``problem``).
        problem: the problem mapping when ``answers`` holds only the answers.
        example: a built-in answers file ("three-tokens-article", "xi-row-article").
    Returns:
        :class:`Report`.
    """
    if example is not None:
        if answers is not None:
            raise error(InputError, "errors.check_example_and_answers")
        if example not in EXAMPLES:
            raise error(InputError, "errors.check_unknown_example", name=repr(example), names=", ".join(sorted(EXAMPLES)))
        answers = example_path(example)
    source = "answers"
    if isinstance(answers, (str, os.PathLike)):
        source = str(answers)
        data = inputs.load_mapping(source, keep_text=True)
    elif isinstance(answers, dict):
        data = answers if problem is None else {"problem": problem, "answers": answers}
    else:
        raise error(InputError, "errors.check_answers_type", type=type(answers).__name__)
    if problem is not None and isinstance(answers, (str, os.PathLike)):
        data = dict(data, problem=problem)
    for key in ("problem", "answers"):
        if key not in data:
            raise error(InputError, "errors.check_missing_key", source=source, name=repr(key))
    extra = [k for k in data if k not in ("problem", "answers", "title", "note", "notes", "source", "lang")]
    if extra:
        raise error(InputError, "errors.check_unknown_top_key", source=source, name=repr(extra[0]))
    chain, desc = problem_chain(data["problem"], source)
    given = PARSERS.get(chain.kind, parse_answers)(data["answers"], chain, source)
    return run(chain, given, source=source if example is None else f"example {example}", problem=desc)


def example_path(name: str) -> str:
    return str(resources.files("attnscope") / "data" / EXAMPLES[name])
