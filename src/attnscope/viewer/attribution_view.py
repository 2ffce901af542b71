"""The viewer's attribution switch: the matrices a page carries beside q, k, v (issue 27 item 3).

The toolbar's switch (raw / norm / rollout / ALTI / value zeroing, ``viewer_attribution.js``) makes
the head, model and matrix views and the generation view draw one of these instead of the raw
weights the page recomputes. Per text, as float32 (:func:`attnscope.viewer.data.encode`), the arrays of
:func:`attnscope.attribution.shown.shown_matrices` (what ``plot --attribution`` draws too): ``norm``
``(n_layers, H, L, L)``, Kobayashi's per-head ‖α·f(x)‖ with each row divided by its sum; ``rollout``,
``alti``, ``value_zeroing`` ``(n_layers, L, L)``, each layer's matrix accumulated from layer 0
(``model.attribute(text, method, layer=l).scores``; no heads).

Page size is bounded: a text of more than :data:`MAX_TOKENS` tokens carries none of them
(``{"left_out": "too_long", "n": L}``: the page says so and offers raw weights only). The norm
matrices are ``n_layers·H·L²`` floats: 4.4 MB raw for SmolLM2 (30 layers × 9 heads) at 64 tokens.
Value zeroing runs ``⌈L/16⌉`` partial passes a layer and is left out past
:data:`MAX_ZEROING_LAYER_PASSES` (``{"costly": {"value_zeroing": passes, "limit": …}}``: the page
says so); all four methods cover what :mod:`attnscope.attribution.norm_methods` covers (an
encoder–decoder's encoder stack).

``data["attribution"]`` = ``{"methods", "per_head", "max_tokens"}``; each text entry's
``"attribution"`` = ``{method: encoded array}`` or the left-out marker.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..attribution import decompose as DC
from ..attribution.shown import PER_HEAD, SHOWN, shown_matrices
from .data import add_per_text, encode

#: What the switch offers besides the raw weights, in its order.
METHODS = SHOWN
#: Texts longer than this carry no attribution matrices (page size and value zeroing's passes).
MAX_TOKENS = 64
#: Value zeroing runs, for each layer l, ⌈L/16⌉ passes through layers 0..l: ``⌈L/16⌉·n(n+1)/2``
#: layer passes for n layers. Above this many it is left out (the page says so): MiniLM (6 layers)
#: at 64 tokens needs 84, SmolLM2 (30 layers) already 465 at 16 tokens — 3 minutes on a busy CPU.
MAX_ZEROING_LAYER_PASSES = 100


def zeroing_passes(model, n_tokens: int) -> int:
    """Layer passes value zeroing runs for a text of ``n_tokens`` (see :data:`MAX_ZEROING_LAYER_PASSES`)."""
    n = DC.stack_of(model, "value_zeroing").n_layers
    return -(-n_tokens // 16) * n * (n + 1) // 2


def text_attribution(model, text: str, n_tokens: int, methods: Sequence[str] = METHODS,
                     max_tokens: int = MAX_TOKENS, max_zeroing: int = MAX_ZEROING_LAYER_PASSES) -> dict:
    """One text entry's ``"attribution"``: the encoded matrices (``"costly"``: value zeroing's layer
    passes when it was left out), or the left-out marker."""
    if n_tokens > max_tokens:
        return {"left_out": "too_long", "n": n_tokens}
    out: dict = {}
    for m in methods:
        if m == "value_zeroing" and zeroing_passes(model, n_tokens) > max_zeroing:
            out["costly"] = {"value_zeroing": zeroing_passes(model, n_tokens), "limit": max_zeroing}
        else:
            out[m] = encode(shown_matrices(model, text, m))
    return out


def header(methods: Sequence[str] = METHODS, max_tokens: int = MAX_TOKENS) -> dict:
    """``data["attribution"]``: the methods the switch offers, those with one matrix a head, the limit."""
    return {"methods": list(methods), "per_head": [m for m in methods if m in PER_HEAD], "max_tokens": max_tokens}


def add_attribution(data: dict, model, texts: Sequence[Optional[str]], methods: Sequence[str] = METHODS,
                    max_tokens: int = MAX_TOKENS, max_zeroing: int = MAX_ZEROING_LAYER_PASSES) -> dict:
    """Add the switch's matrices to page ``data`` (one entry per text of ``texts``, in order).
    A text None (its ids are not what the text tokenizes to: a generation's, sometimes) gets
    ``{"left_out": "tokens"}``; one a method refuses, ``{"left_out": "error", "why": …}``."""
    data["attribution"] = header(methods, max_tokens)
    return add_per_text(data, "attribution", texts,
                        lambda text, n: text_attribution(model, text, n, methods, max_tokens, max_zeroing))


def same_ids(model, text: str, ids: Sequence[int]) -> bool:
    """Whether ``text`` tokenizes to exactly ``ids`` (a generation's prompt and output can tokenize
    otherwise once joined; the methods take text)."""
    got = model.encode(text, truncate=True).input_ids[0].tolist()
    return got[:len(ids)] == list(ids) and len(got) == len(ids)
