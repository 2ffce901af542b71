"""The checker on a multi-head problem (:class:`~attnscope.explain.multihead_input.MultiHeadProblem`).

The chain is the problem's own links — the fused product ``QKV`` (with W_QKV) and ``Q``, ``K``, ``V``
(every head side by side) — then each head's single-head chain (:func:`.chain.toy_chain` on the
head's q, k, v) with its steps named ``scores[h]``, ``weights[h]``, …, then ``concat`` and
``projected``. A head's links read the head's columns of the learner's Q, K, V, so a slip in Q is
carried into exactly the heads and entries it reaches.

Answers name a head's steps in a section or with the head in brackets::

    answers:
      Q: [[…], …]                 # every head side by side (L × n_heads·d_head)
      head 0: {scores: …, weights: …, output: …}   # or 头 0 (as the Chinese report writes it)
      weights[1]: [[…], …]
      concat: [[…], …]
      projected: [[…], …]
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import exact as E
from ..errors import InputError
from ..explain import inputs
from ..explain.multihead import compute_multihead, fused_slices
from ..explain.multihead_input import MultiHeadProblem
from ..explain.places import kind
from ..explain.toy_input import norm_key
from ..i18n import Msg, error
from .answers import ALIASES, parse_answers
from .chain import Chain, Link, toy_chain

#: The steps of the whole problem (the rest belong to a head).
TOP = ("QKV", "Q", "K", "V", "concat", "projected")


class _HeadView(Mapping):
    """What a head's links see: the head's columns of Q, K, V and its own steps without ``[h]``."""

    def __init__(self, world: dict, h: int, cols: dict) -> None:
        self.world, self.h, self.cols = world, h, cols

    def __getitem__(self, key):
        if key in self.cols:
            return self.world[key][:, self.cols[key]]
        return self.world[f"{key}[{self.h}]"]

    def __iter__(self):
        return iter([k for k in self.world if k in self.cols or k.endswith(f"[{self.h}]")])

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _head_link(lk: Link, h: int, cols: dict, shift) -> Link:
    def name(n: str) -> str:
        return n if n in cols else f"{n}[{h}]"

    def recompute(w: dict) -> np.ndarray:
        return lk.recompute(_HeadView(w, h, cols))

    def depends(T: dict) -> dict:
        return {name(k): a for k, a in lk.depends(_HeadView(T, h, cols)).items()}

    extra = {"shift": shift, "scaled": f"scaled[{h}]"} if lk.by_shift else {}  # e^s' or e^(s' − m), per head
    return dataclasses.replace(lk, name=name(lk.name), recompute=recompute, depends=depends, **extra)


def multihead_chain(p: MultiHeadProblem) -> Chain:
    """The chain of every step of ``p`` (see the module doc)."""
    v = compute_multihead(p)
    ex = v["exact"]  # Decimal arrays: the chain's exact values and worlds are exact (attnscope.exact)
    L, H, dv = p.L, p.n_heads, p.d_v
    rows = [f"{i} ({tk})" for i, tk in enumerate(p.tokens)]
    dims = lambda n: [str(c) for c in range(n)]  # noqa: E731
    links = []
    if p.fused:
        links.append(Link("QKV", ex["QKV"], lambda w: ex["QKV"], lambda T: {}, rows, dims(ex["QKV"].shape[1])))
        for name, c in zip("QKV", fused_slices(p)):  # re-indexing: the learner's own fused numbers, no arithmetic
            links.append(Link(name, ex[name], lambda w, c=c: w["QKV"][:, c], lambda T, c=c: {"QKV": T["QKV"][:, c]},
                              rows, dims(c.stop - c.start)))
    else:
        for name in "QKV":
            links.append(Link(name, ex[name], lambda w, name=name: ex[name], lambda T: {}, rows, dims(ex[name].shape[1])))
    for h in range(H):
        c = p.columns(h)
        cols = {"Q": c["Q"], "K": c["K"], "V": c["V"]}
        sub = toy_chain(p.head_problem(h, v["Q"], v["K"], v["V"]))
        links += [_head_link(lk, h, cols, sub.shift) for lk in sub.links if lk.name not in cols]

    def concat_taint(T):
        out = {}
        for h in range(H):
            a = np.zeros((L, H * dv), dtype=bool)
            a[:, p.columns(h)["concat"]] = T[f"output[{h}]"]
            out[f"output[{h}]"] = a
        return out

    links.append(Link("concat", ex["concat"], lambda w: np.concatenate([w[f"output[{h}]"] for h in range(H)], axis=1),
                      concat_taint, rows, [f"z{h}.{f}" for h in range(H) for f in range(dv)]))
    if p.W_O is not None:
        d_o, WO = p.W_O.shape[1], E.array(p.W_O)
        links.append(Link("projected", ex["projected"], lambda w: E.matmul(w["concat"], WO),
                          lambda T: {"concat": np.repeat(T["concat"].any(1, keepdims=True), d_o, 1)}, rows, dims(d_o)))
    return Chain("multihead", links, meta={"tokens": list(p.tokens), "name": p.name, "L": L, "n_heads": H})


#: A head's section: "head 1", "head_1", or "头 1" as the Chinese report names it.
_HEAD = re.compile(r"(?:head|头)\s*[_ -]?\s*(\d+)", re.IGNORECASE)
_BRACKET = re.compile(r"(.+?)\s*\[\s*(\d+)\s*\]")


def _canon(key) -> str:
    return ALIASES.get(norm_key(key), str(key))


def parse_multihead_answers(raw: Any, chain: Chain, source: str) -> dict:
    """The ``answers`` mapping of a multi-head problem → {link name: object array of Written/None}."""
    if not isinstance(raw, dict):
        raise error(InputError, "errors.check_mh_answers_kind", source=source, kind=kind(raw))
    H = chain.meta["n_heads"]
    top: dict = {}
    heads: dict = {h: {} for h in range(H)}

    def head_index(text, where) -> int:
        text = str(inputs.plain(text)).strip()
        if not text.isdecimal():  # isdigit() passes "²", int() refuses it
            raise error(InputError, "errors.check_head_not_number", where=where, text=repr(text), last=H - 1)
        h = int(text)
        if not 0 <= h < H:
            raise error(InputError, "errors.check_head_range", where=where, head=h, n=H, last=H - 1)
        return h

    def add(h: int, key, value, where: Msg) -> None:
        step = _canon(key)
        if any(_canon(k) == step for k in heads[h]):
            raise error(InputError, "errors.check_head_step_twice", where=where, canon=step, head=h)
        heads[h][key] = value

    def add_section(h: int, section, where: Msg) -> None:
        if not isinstance(section, dict):
            raise error(InputError, "errors.check_head_section_kind", where=where, kind=kind(section))
        for step, answer in section.items():
            add(h, step, answer, where)

    for key, value in raw.items():
        k = str(key).strip()
        where = Msg("errors.check_where_key", source=source, name=k)
        m_head, m_br = _HEAD.fullmatch(k), _BRACKET.fullmatch(k)
        if k.lower() == "heads":
            items = enumerate(value) if isinstance(value, list) else value.items() if isinstance(value, dict) else None
            if items is None:
                raise error(InputError, "errors.check_heads_kind", where=where, kind=kind(value))
            for hk, sec in items:
                hk = inputs.plain(hk)
                m = _HEAD.fullmatch(str(hk).strip())
                at = Msg("errors.check_where_head", where=where, head=hk)
                add_section(head_index(m.group(1) if m else hk, at), sec, at)
        elif m_head:
            add_section(head_index(m_head.group(1), where), value, where)
        elif m_br:
            add(head_index(m_br.group(2), where), m_br.group(1), value, where)
        else:
            if _canon(k) not in TOP and f"{_canon(k)}[0]" in chain.names():
                raise error(InputError, "errors.check_step_of_one_head", where=where, canon=_canon(k))
            top[key] = value
    out: dict = {}
    if top:
        out.update(parse_answers(top, Chain(chain.kind, [lk for lk in chain.links if lk.name in TOP]), source))
    for h, sec in heads.items():
        if sec:
            suffix = f"[{h}]"
            plain = [dataclasses.replace(lk, name=lk.name[:-len(suffix)]) for lk in chain.links if lk.name.endswith(suffix)]
            got = parse_answers(sec, Chain("toy", plain), Msg("errors.check_where_head", where=source, head=h))
            out.update({f"{n}{suffix}": a for n, a in got.items()})
    if not out:
        raise error(InputError, "errors.answers_empty", source=source, names=", ".join(chain.names()))
    return out
