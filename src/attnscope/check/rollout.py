"""The checker on a hand-computed attention rollout row (``problem: {text, token, attribution: rollout}``).

The chain follows the lesson (``explain --text … --token … --attribution rollout``,
:mod:`attnscope.explain.attribution_doc`) from the top layer T down: ``mixed[T]`` (the query's row of
Ã_T = ½·A_T + ½·I, rows renormalised), then for each layer l below ``mixed[l]`` (the rows of Ã_l the
product needs, in order: every row in an encoder, rows 0 … i under a causal mask) and ``product[l]``
= Σ_j u_{l+1, j} · Ã_l[j, :] (u_T = the row of ``mixed[T]``), and last ``rollout`` (the product of
layer 0, the row itself). The head means A come from the float64 forward and enter by their exact
binary values; every step is recomputed exactly (:mod:`attnscope.exact`) from the learner's own
earlier numbers, so a slip in ``mixed[3]`` is carried into ``product[3]`` and below, and the first
wrong step is where the calculation went wrong.

An answers file::

    problem:
      text: The cat sat.
      token: cat
      attribution: rollout          # model: a folder (default MiniLM); layer: the top layer (default last)
    answers:
      mixed[5]: [0.2450, 0.0274, 0.6326, 0.0607, 0.0156, 0.0186]
      layer 4:
        mixed: [[…], …]             # one row per token the product needs
        product: [0.5593, …]
      rollout: [0.7173, …]

Steps may be written ``mixed[4]`` / ``product[4]`` or inside a ``layer 4:`` section; blanks count as missing.
"""

from __future__ import annotations

import re
from decimal import localcontext
from typing import Any

import numpy as np

from .. import exact as E
from ..errors import InputError
from ..explain import inputs
from ..explain.attribution_values import query_of, rollout_values, stack_layers
from ..explain.numbers import Written, parse_written
from ..i18n import error
from .chain import Chain, Link

#: The keys of a rollout problem.
PROBLEM_KEYS = ("text", "token", "position", "attribution", "model", "layer")

_STEP = re.compile(r"(mixed|product)\s*\[\s*(\d+)\s*\]", re.IGNORECASE)
_LAYER = re.compile(r"layer\s*[_ -]?\s*(\d+)", re.IGNORECASE)
_FINAL = {"rollout", "final", "row", "result"}


def is_rollout(spec: Any) -> bool:
    """True for a problem mapping that asks for an attribution row."""
    return isinstance(spec, dict) and "attribution" in spec


def _mixed(A: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Rows ``rows`` of Ã = (½·A + ½·I) / row sums, exactly (Decimals) from A's binary values (k, L)."""
    a = E.array(A[rows], binary=True)  # (k, L)
    half = E.dec("0.5")
    out = np.empty(a.shape, dtype=object)
    with localcontext(E.CTX):
        for r, i in enumerate(rows):
            t = [half * x + (half if j == i else E.ZERO) for j, x in enumerate(a[r])]
            s = sum(t, E.ZERO)
            out[r] = [x / s for x in t]
    return out


def rollout_chain(spec: dict, where: Any) -> tuple:
    """(Chain, description) of a rollout problem (see the module doc)."""
    extra = [k for k in spec if k not in PROBLEM_KEYS]
    if extra:
        raise error(InputError, "errors.rollout_problem_key", where=where, name=repr(extra[0]))
    if spec.get("attribution") != "rollout":
        raise error(InputError, "errors.rollout_problem_method", where=where, method=repr(spec.get("attribution")))
    from ..models import load
    model = load(spec.get("model"))
    text = spec.get("text")
    if not isinstance(text, str) or not text.strip():
        raise error(InputError, "errors.text_empty")
    n = stack_layers(model)
    top = n - 1 if spec.get("layer") is None else inputs.check_index("layer", spec["layer"], n, "layers")
    tokens, labels, qpos, _ = query_of(model, text, spec.get("token"), spec.get("position"))
    v = rollout_values(model, text, qpos, top)
    names = [f"{j} ({x})" for j, x in enumerate(labels)]
    links = []
    exact_top = _mixed(v["A"][top], np.array([qpos]))  # (1, L)
    links.append(Link(f"mixed[{top}]", exact_top, lambda w, x=exact_top: x, lambda T: {}, ["-"], names, vector="row"))
    prev = f"mixed[{top}]"
    for l in range(top - 1, -1, -1):
        rows = v["rows"][l]
        ex = _mixed(v["A"][l], rows)  # (k, L)
        mixed = f"mixed[{l}]"
        links.append(Link(mixed, ex, lambda w, x=ex: x, lambda T: {}, [names[j] for j in rows], names))
        name = f"product[{l}]" if l > 0 else "rollout"

        def recompute(w, prev=prev, mixed=mixed, rows=rows):
            return E.matmul(np.asarray(w[prev], dtype=object)[:, rows], w[mixed])  # (1, L)

        def depends(T, prev=prev, mixed=mixed, rows=rows):
            return {prev: np.full((1, len(names)), bool(T[prev][0, rows].any())), mixed: T[mixed].any(0)[None, :]}

        world = {lk.name: lk.exact for lk in links}
        links.append(Link(name, recompute(world), recompute, depends, ["-"], names, vector="row"))
        prev = name
    if top == 0:  # one layer: the row is Ã_0's own row
        links.append(Link("rollout", exact_top, lambda w: w[f"mixed[{top}]"], lambda T: {f"mixed[{top}]": T[f"mixed[{top}]"]},
                          ["-"], names, vector="row"))
    desc = {"kind": "rollout", "model": model.name, "text": text, "layer": top, "position": qpos,
            "token": labels[qpos], "tokens": tokens, "exact": "exact from the float64 forward's head means"}
    return Chain("rollout", links, meta=dict(desc, keys=labels)), desc


def _written(x, where: str):
    x = inputs.number(x, where, allow_none=True, allow_inf=False)
    if x is None or isinstance(x, Written):
        return x
    return parse_written(repr(float(x)))


def _parse(value, lk: Link, where: str) -> np.ndarray:
    n_rows, n_cols = lk.exact.shape
    if value is None:
        return np.full((n_rows, n_cols), None, dtype=object)
    if lk.vector == "row":
        cells = inputs.vector(value, where, allow_none=True, raw=True, size=n_cols)
        return np.array([[_written(c, f"{where}, entry {j} (from 0)") for j, c in enumerate(cells)]], dtype=object)
    if not isinstance(value, (list, tuple)) or len(value) != n_rows:
        raise error(InputError, "errors.rollout_answers_rows", where=where, n=n_rows, rows=", ".join(lk.rows))
    out = np.full((n_rows, n_cols), None, dtype=object)
    for i, r in enumerate(value):
        if r is not None:
            cells = inputs.vector(r, f"{where}, row {i} (from 0)", allow_none=True, raw=True, size=n_cols)
            out[i] = [_written(c, f"{where}, row {i}, column {j} (from 0)") for j, c in enumerate(cells)]
    return out


def parse_rollout_answers(raw: Any, chain: Chain, source: str) -> dict:
    """The ``answers`` mapping → {step: object array of Written/None} (steps as ``mixed[l]``,
    ``product[l]``, ``rollout``, or ``layer l: {mixed: …, product: …}``)."""
    names = chain.names()
    if not isinstance(raw, dict):
        raise error(InputError, "errors.rollout_answers_key", source=source, name=repr(raw), names=", ".join(names))
    flat: list = []
    for key, value in raw.items():
        k = str(key).strip()
        m = _LAYER.fullmatch(k)
        if m and isinstance(value, dict):
            flat += [(f"{str(sk).strip().lower()}[{m.group(1)}]", sv, f"{source}, key {k}, {sk}") for sk, sv in value.items()]
        else:
            flat.append((k, value, f"{source}, key {k}"))
    out: dict = {}
    for k, value, where in flat:
        m = _STEP.fullmatch(k)
        step = f"{m.group(1).lower()}[{int(m.group(2))}]" if m else ("rollout" if k.lower() in _FINAL else k)
        if step == "product[0]":
            step = "rollout"  # the product of layer 0 is the row
        if step not in names:
            raise error(InputError, "errors.rollout_answers_key", source=source, name=repr(k), names=", ".join(names))
        if step in out:
            raise error(InputError, "errors.answers_key_twice", source=source, name=repr(k), canon=step)
        out[step] = _parse(value, chain.link(step), where)
    if not out:
        raise error(InputError, "errors.answers_empty", source=source, names=", ".join(names))
    return out
