"""The ``problem`` section as a chain to judge along, and :func:`check` itself."""

from __future__ import annotations

import os
from importlib import resources
from typing import Any, Optional

from .. import exact as E
from ..errors import AttnscopeError, InputError
from ..explain import inputs
from ..explain.toy_input import ToyProblem
from .answers import parse_answers
from .chain import row_chain, toy_chain
from .judge import Report, run

#: Built-in answers files: the articles' own numbers.
EXAMPLES = {
    "three-tokens-article": "three_tokens_article.yaml",
    "xi-row-article": "xi_row_article.yaml",
}


def problem_chain(spec: Any, source: str) -> tuple:
    """(Chain, description dict) of the ``problem`` section."""
    from ..explain import toy_problem
    where = f"{source}, key problem"
    if not isinstance(spec, dict):
        raise InputError(f"{where}: expected a mapping (example: three-tokens, or X/W_Q/W_K/W_V, or scores, "
                         f"or text/layer/head/token), got {inputs.kind_of(spec)}")
    spec = inputs.plain(spec)
    if "example" in spec:
        extra = [k for k in spec if k != "example"]
        if extra:
            raise InputError(f"{where}: 'example' stands alone; remove {', '.join(map(repr, extra))}")
        p = toy_problem(example=spec["example"])
        return _toy_chain(p), {"kind": "toy", "example": spec["example"], "tokens": p.tokens}
    if "text" in spec:
        from ..explain.row import model_row_data
        allowed_keys = {"text", "model", "layer", "head", "token", "position"}
        extra = [k for k in spec if k not in allowed_keys]
        if extra:
            raise InputError(f"{where}: unknown key {extra[0]!r}; a model row has text, layer, head, token "
                             "or position, and optionally model")
        try:
            d = model_row_data(spec["text"], spec.get("model"), spec.get("layer", 0), spec.get("head", 0),
                               spec.get("token"), spec.get("position"))
        except AttnscopeError as e:
            raise type(e)(f"{where}: {e}") from None
        desc = {"kind": "model", "model": d["model"].name, "text": spec["text"], "layer": d["layer"],
                "head": d["head"], "position": d["qpos"], "token": d["tokens"][d["qpos"]], "tokens": d["tokens"]}
        chain = row_chain(d["raw"], d["tokens"], d["factor"], d["allowed"], d["V"], meta=desc, source=where,
                          operands=d.get("decoder"), qpos=d["qpos"])
        # the exact values are float64 from the weights; an answer from the float32 model is correct
        # within that model's float32 error (explain.row.float32_error)
        from ..explain.row import float32_error
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
            raise InputError(f"{where}: unknown key {extra[0]!r}; a row of given scores has scores, tokens, "
                             "d_k (or factor), and optionally values and query")
        raw = inputs.vector(spec["scores"], f"{where}.scores")
        S = len(raw)
        toks = inputs.labels(spec["tokens"], f"{where}.tokens", S) if "tokens" in spec else [f"k{j}" for j in range(S)]
        dk = spec.get("d_k", spec.get("dk"))
        if dk is not None:
            if isinstance(dk, bool) or not isinstance(dk, (int, float)) or dk <= 0 or float(dk) != int(dk):
                raise InputError(f"{where}.d_k: expected a positive integer, got {dk!r}")
            factor = E.score_factor("scaled", int(dk))  # exact: 1/8 at d_k = 64
        elif "factor" in spec:
            factor = E.dec(float(inputs.number(spec["factor"], f"{where}.factor")))
        else:
            raise InputError(f"{where}: give d_k (the scores are divided by √d_k) or factor")
        V = None
        vkey = "values" if "values" in spec else ("V" if "V" in spec else None)
        if vkey:
            V = inputs.matrix(spec[vkey], f"{where}.{vkey}", rows=S)
        desc = {"kind": "scores", "tokens": toks, "d_k": dk, "scores": raw.tolist()}
        return row_chain(raw, toks, factor, None, V, meta=desc, source=where, written=True), desc
    from ..explain.multihead_input import MultiHeadProblem, is_multihead
    p = (MultiHeadProblem if is_multihead(spec) else ToyProblem).from_mapping(spec, source=f"{source}, problem")
    return _toy_chain(p), {"kind": "toy", "tokens": p.tokens, "name": p.name}


def _toy_chain(p):
    """toy_chain, or the multi-head chain (check/multihead.py) for a problem with every head."""
    from ..explain.multihead_input import MultiHeadProblem
    if isinstance(p, MultiHeadProblem):
        from .multihead import multihead_chain
        return multihead_chain(p)
    return toy_chain(p)


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
            raise InputError("give an answers file or an example, not both")
        if example not in EXAMPLES:
            raise InputError(f"unknown example {example!r}; choose one of {', '.join(sorted(EXAMPLES))}")
        answers = example_path(example)
    source = "answers"
    if isinstance(answers, (str, os.PathLike)):
        source = str(answers)
        data = inputs.load_mapping(source, keep_text=True)
    elif isinstance(answers, dict):
        data = answers if problem is None else {"problem": problem, "answers": answers}
    else:
        raise InputError(f"answers must be a file path or a mapping, got {type(answers).__name__}")
    if problem is not None and isinstance(answers, (str, os.PathLike)):
        data = dict(data, problem=problem)
    for key in ("problem", "answers"):
        if key not in data:
            raise InputError(f"{source}: missing key {key!r}; an answers file has 'problem' (what is calculated) "
                             f"and 'answers' (your numbers)")
    extra = [k for k in data if k not in ("problem", "answers", "title", "note", "notes", "source", "lang")]
    if extra:
        raise InputError(f"{source}: unknown top-level key {extra[0]!r}; expected problem and answers")
    chain, desc = problem_chain(data["problem"], source)
    if chain.kind == "multihead":
        from .multihead import parse_multihead_answers as parse
    else:
        parse = parse_answers
    given = parse(data["answers"], chain, source)
    return run(chain, given, source=source if example is None else f"example {example}", problem=desc)


def example_path(name: str) -> str:
    return str(resources.files("attnscope") / "data" / EXAMPLES[name])
