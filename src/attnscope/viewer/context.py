"""The viewer's context view: how one token's vector changes from layer to layer in two texts
("context awareness"), read from a trace's ``embed.out`` and ``layers.{i}.out``."""

from __future__ import annotations

from typing import Callable, Collection, Optional

import numpy as np

from ..errors import InputError
from ..i18n import error, listing

#: Tokens a comparison never picks by itself (the first token two texts share is compared), with
#: the tokenizer's own special tokens when it is known: a start token (Gemma's ``<bos>``) is in
#: every text and, in a causal model, sees only itself, so its cosine is 1 at every layer.
SPECIAL = {"[CLS]", "[SEP]", "[PAD]", "<s>", "</s>", "<pad>", "<|endoftext|>", "<bos>", "<eos>",
           "<|begin_of_text|>"}


def hidden_states(trace, text: int = 0) -> list[tuple[str, np.ndarray]]:
    """``[(name, (n, d) float64)]``: the embedding output, then each layer's output, of text ``text``.

    (A candidate for the Trace read API: it reads names the trace may lack, and says which.)
    """
    text = trace.check_text(text)
    n = trace.length(text)
    names = ["embed.out"] + [f"layers.{i}.out" for i in range(trace.n_layers)]
    require_names(trace, names)
    return [(name, trace[name][text][:n].detach().cpu().double().numpy()) for name in names]


def require_names(trace, names: list[str]) -> None:
    """InputError naming the first of ``names`` the trace lacks (the page needs them all)."""
    for name in names:
        if name not in trace:
            raise error(InputError, "errors.viewer_trace_lacks", name=repr(name))


def find_token(toks: list[str], token: Optional[str], other: Optional[list[str]] = None,
               labels: Optional[list[str]] = None, normal: Optional[Callable[[str], str]] = None,
               special: Collection[str] = (), other_labels: Optional[list[str]] = None) -> int:
    """Position of ``token`` in ``toks`` (first match; "##" and "Ġ" ignored, and a piece's label
    matches too: `` cat`` or ``cat`` for ``Ġcat``, ``喜`` for the byte piece that completes it), or
    of the first non-special token also in ``other`` when ``token`` is None. InputError when there is none.
    ``normal``: the tokenizer's normaliser, to find ``token`` as it is typed (``，`` for the piece ``,``);
    ``special``: the tokenizer's special tokens, never picked by themselves (nor :data:`SPECIAL`);
    ``other_labels``: ``other`` as shown, for the error (``我``, not the byte pieces ``æĪ ĳ``)."""
    from ..pieces import Pieces, find

    def norm(s: str) -> str:
        return s.removeprefix("##").removeprefix("Ġ").removeprefix("▁").lower()

    shown = list(labels) if labels is not None else list(toks)
    if token is not None:
        match = find(Pieces(tuple(toks), tuple(shown), normal=normal), token)
        if match.spans:
            return match.spans[0][1]
        raise error(InputError, "errors.viewer_token_not_among", token=repr(token),
                    shown=listing([repr(t) for t in shown], ", "))
    skip = SPECIAL.union(special)
    others = {norm(t) for t in (other or []) if t not in skip}
    for i, t in enumerate(toks):
        if t not in skip and norm(t) in others:
            return i
    raise error(InputError, "errors.viewer_no_shared_token", shown=listing([repr(t) for t in shown], ", "),
                other=listing([repr(t) for t in ((other or []) if other_labels is None else other_labels)], ", "))


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """cos(a, b); 0 when either vector is 0."""
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.dot(a, b) / (na * nb))


def context_comparison(trace_a, trace_b=None, *, token: Optional[str] = None, index_a: int = 0,
                       index_b: int = 1, normal: Optional[Callable[[str], str]] = None,
                       special: Collection[str] = ()) -> dict:
    """How one token's vector changes from layer to layer in two texts.

    Text A is ``trace_a`` text ``index_a``; text B is ``trace_b`` text 0, or ``trace_a`` text
    ``index_b`` when ``trace_b`` is None. Returns per layer (embedding output, then each layer's
    output) the cosine similarity of the token's vector in A and in B (``across``), and of each
    vector with its own embedding-layer vector (``drift_a``, ``drift_b``). ``normal``: the
    tokenizer's normaliser (:meth:`attnscope.tokenizer.Tokenizer.normalize`), so that ``token`` is
    found as it is typed in the text; ``special``: its special tokens, which the default token is never.
    """
    if trace_b is None:
        trace_b, ib = trace_a, index_b
    else:
        ib = 0
    ta, tb = trace_a.text_tokens(index_a), trace_b.text_tokens(ib)
    la, lb = trace_a.text_labels(index_a), trace_b.text_labels(ib)  # as shown (byte-level pieces decoded)
    pa = find_token(ta, token, tb, la, normal, special, lb)
    pb = find_token(tb, token if token is not None else ta[pa], labels=lb, normal=normal)
    ha, hb = hidden_states(trace_a, index_a), hidden_states(trace_b, ib)
    layers = [name for name, _ in ha]
    across = [cosine(x[pa], y[pb]) for (_, x), (_, y) in zip(ha, hb)]
    drift_a = [cosine(x[pa], ha[0][1][pa]) for _, x in ha]
    drift_b = [cosine(y[pb], hb[0][1][pb]) for _, y in hb]
    return {"token": la[pa], "pos_a": pa, "pos_b": pb, "tokens_a": la, "tokens_b": lb,
            "layers": layers, "across": across, "drift_a": drift_a, "drift_b": drift_b}
