"""``attnscope serve`` for long texts: the page data of a held text, and the endpoints that read it.

``POST /api/view`` answers a text of at most ``ship_up_to`` tokens (by default those whose q, k, v
fit in 16 MB: 512 tokens of all-MiniLM-L6-v2, 145 of SmolLM2-135M) as before: the page carries
q, k, v and computes everything itself. A longer text (up to the model's context
length; a longer one is refused with its token count and the limit, never cut) is traced once and
held by the server (:class:`attnscope.viewer.held.TextStore`); its page entry carries the tokens
and ``remote: {"id", "n", "thumb", "api"}``, and the page asks, one layer and head at a time:

==========================  =================================================================
``POST /api/held/rows``     ``{id, layer, heads, q0, q1}`` → weights (heads, q1 − q0, n) float64
``POST /api/held/steps``    ``{id, layer, head, query}`` → one row's walk-through (float64)
``POST /api/held/vectors``  ``{id, layer, head, positions}`` → q, k before/after the rotation
``POST /api/held/heatmap``  ``{id, layer, head, q0, q1, k0, k1, rows, cols}`` → max-pooled cells
``POST /api/held/lines``    ``{id, layer, heads}`` → the head view's lines (page's rule)
``POST /api/held/thumbs``   ``{id, layer}`` → that layer's model-view thumbnails (uint8)
==========================  =================================================================

Arrays travel as ``{"dtype", "shape", "b64"}``: little-endian raw bytes in base64 (float64,
float32, int32 or uint8). An id the server no longer holds (it keeps the most recent texts within
its byte budget) is 410 with a sentence saying to show the text again.
"""

# no "from __future__ import annotations": FastAPI reads the local request classes from the signatures

import base64
from typing import Optional

import numpy as np
from fastapi.responses import JSONResponse
from pydantic import Field

from ..config import is_seq2seq
from ..errors import InputError
from ..fonts import font_face_css
from ..i18n import error, text
from . import data as view_data_mod
from .attribution_view import MAX_TOKENS as ATTRIBUTION_TOKENS
from .attribution_view import header as attribution_header
from .context import context_comparison
from .held import THUMB, HeldText
from .held_store import TextStore, text_id
from .run import check_dot_product, check_token_compare, compare_named, display_tokens, special_tokens, view_data, view_names

#: Texts whose q, k, v take at most this many bytes (float32) travel whole in the page; longer
#: ones are held: all-MiniLM-L6-v2 ships up to its 512 tokens (14 MB), SmolLM2-135M (30 layers ×
#: (9 + 3 + 3) heads × 64) up to 145 tokens.
SHIP_BYTES = 16 << 20


def ship_up_to(config) -> int:
    """The longest text (tokens) whose q, k, v fit in :data:`SHIP_BYTES`."""
    kv = int(getattr(config, "kv_heads", config.n_heads))
    per_token = config.n_layers * (config.n_heads + 2 * kv) * config.d_head * 4
    return max(1, SHIP_BYTES // per_token)
#: Bytes of held texts (q, k, v float32) the server keeps before dropping the least recent.
HELD_BYTES = 2 << 30


class Gone(Exception):
    """The held text of an id was dropped (or never existed)."""


def array(a: np.ndarray) -> dict:
    """``{"dtype", "shape", "b64"}``: raw little-endian bytes (float64, float32, int32, uint8)."""
    a = np.ascontiguousarray(a)
    kind = {np.dtype(np.float64): "<f8", np.dtype(np.float32): "<f4", np.dtype(np.int32): "<i4",
            np.dtype(np.uint8): "u1"}.get(a.dtype)
    if kind is None:
        raise TypeError(f"array: float64, float32, int32 or uint8 only, got {a.dtype}")
    return {"dtype": str(a.dtype), "shape": list(a.shape), "b64": base64.b64encode(a.astype(kind).tobytes()).decode("ascii")}


def from_array(d: dict) -> np.ndarray:
    """Inverse of :func:`array` (for tests and tools)."""
    kind = {"float64": "<f8", "float32": "<f4", "int32": "<i4", "uint8": "u1"}[d["dtype"]]
    return np.frombuffer(base64.b64decode(d["b64"]), kind).reshape(d["shape"]).copy()


def held_view_data(model, store: TextStore, text: str, *, compare: Optional[str] = None, token: Optional[str] = None,
                   decimals: int = 4, ship: Optional[int] = None, api: str = "api/held/",
                   attribution: bool = False) -> dict:
    """The page data of ``text`` (and ``compare``): shipped whole when every text has at most
    ``ship`` tokens (default :func:`ship_up_to`; :func:`attnscope.viewer.run.view_data`), else each text held in
    ``store`` and its entry marked ``remote``. The model's context length is checked by the trace
    (InputError with the token count and the limit). ``attribution``: with the attribution switch's
    matrices (:mod:`attnscope.viewer.attribution_view`) for shipped texts; a held text's entry says
    why it has none (``too_long`` past the switch's limit, else ``held``)."""
    check_token_compare(token, compare)
    texts = [text] if compare is None else [text, compare]
    lengths = []
    for i, t in enumerate(texts):
        with compare_named(i):
            lengths.append(len(model.encode(t).tokens[0]))
    if max(lengths) <= (ship_up_to(model.config) if ship is None else ship):
        return view_data(model, text, compare=compare, token=token, decimals=decimals, attribution=attribution)
    check_dot_product(model)  # a held text's weights are softmax(factor·q′·k′ᵀ), as a page's
    if isinstance(decimals, bool) or not isinstance(decimals, int) or not 0 <= decimals <= view_data_mod.MAX_DECIMALS:
        raise error(InputError, "errors.viewer_decimals", most=view_data_mod.MAX_DECIMALS, value=repr(decimals))
    qs, ks = view_data_mod.operand_steps(model.config)
    names = [f"layers.*.attn.{s}" for s in (qs, ks, "v")]
    if compare is not None:  # the context view's hidden states: read once, then dropped
        names += [n for n in view_names(model.config) if not n.startswith("layers.*.attn.")]
    ids = [text_id(model.name, t) for t in texts]
    held = [store.get(i) for i in ids]
    traces = [model.trace([t], names=names) if h is None or compare is not None else None
              for t, h in zip(texts, held)]
    for k, tr in enumerate(traces):
        if tr is not None:
            held[k] = HeldText(tr, display_tokens(model, tr.text_tokens(0)))
    ready = [h for h in held if h is not None]
    assert len(ready) == len(held)  # each text was held already or traced just now
    data = view_data_mod.page_header([(_Lengths(h, model), 0) for h in ready], decimals)
    for t, key, h in zip(texts, ids, ready):
        store.put(key, h, keep=ids)  # a small budget must not drop the page's other text before it arrives
        data["texts"].append({"text": t, "tokens": h.tokens,
                              "remote": {"id": key, "n": h.n, "thumb": min(h.n, THUMB), "api": api}})
    if compare is not None:
        data["compare"] = context_comparison(traces[0], traces[1], token=token,
                                             normal=getattr(getattr(model, "tokenizer", None), "normalize", None),
                                             special=special_tokens(model))
    if attribution:
        data["attribution"] = attribution_header()
        for entry in data["texts"]:
            n = entry["remote"]["n"]
            entry["attribution"] = {"left_out": "too_long" if n > ATTRIBUTION_TOKENS else "held", "n": n}
    return data


class _Lengths:
    """What :func:`attnscope.viewer.data.page_header` reads of a trace, from a held text."""

    def __init__(self, held: HeldText, model):
        self.held, self.config, self.model_name = held, held.config, model.name
        self.family = getattr(model, "family", None)

    def length(self, _index: int) -> int:
        return self.held.n

    def window(self, layer: int):
        return self.held.windows[layer]


def add_routes(app, model, worker, store: TextStore, base) -> None:
    """Register the ``/api/held/*`` endpoints on ``app`` (``worker``: the server's model thread;
    ``base``: its strict pydantic request class); none for an encoder–decoder model, whose page
    reads two texts (:mod:`attnscope.viewer.seq2seq_server`)."""
    if is_seq2seq(model):
        return

    class HeldRequest(base):
        id: str = Field(description="The held text's id (the page data's texts[i].remote.id).")
        layer: int = Field(0, description="Layer index, 0-based.")

    class RowsRequest(HeldRequest):
        heads: list[int] = Field(description="Query heads, 0-based.")
        q0: int = Field(description="First query row.")
        q1: int = Field(description="One past the last query row.")

    class StepsRequest(HeldRequest):
        head: int = 0
        query: int = Field(0, description="Position of the query token.")

    class VectorsRequest(HeldRequest):
        head: int = 0
        positions: list[int] = Field(description="Token positions whose q and k to return (at most 64).")

    class HeatmapRequest(HeldRequest):
        head: int = 0
        q0: int
        q1: int
        k0: int
        k1: int
        rows: int = Field(description="Cells down at most (the canvas height in device pixels).")
        cols: int = Field(description="Cells across at most.")

    class LinesRequest(HeldRequest):
        heads: list[int]

    def held(req) -> HeldText:
        h = store.get(req.id)
        if h is None:
            raise Gone()
        return h

    @app.exception_handler(Gone)
    async def _on_gone(request, exc):
        return JSONResponse(status_code=410, content={"detail": text("errors.core_server_gone",
                                                                     getattr(app.state, "lang", "en"))})

    def check_heads(heads: list) -> list:
        if not heads:
            raise error(InputError, "errors.viewer_heads_empty")
        if len(set(heads)) != len(heads):  # the head, not the list: a body may hold 100,000 of them
            head = next(h for i, h in enumerate(heads) if h in heads[:i])
            raise error(InputError, "errors.viewer_heads_repeat", head=head, k=heads.count(head))
        return heads

    @app.post("/api/held/rows", summary="Weights of some query rows of a held text (float64)")
    async def rows(req: RowsRequest) -> dict:
        h = held(req)
        w = await worker.run(h.rows, req.layer, check_heads(req.heads), req.q0, req.q1)
        return {"layer": req.layer, "heads": req.heads, "q0": req.q0, "q1": req.q1, "weights": array(w)}

    @app.post("/api/held/steps", summary="One row's walk-through of a held text: raw, scaled, exp, Σ, weights, out")
    async def steps(req: StepsRequest) -> dict:
        h = held(req)
        s = await worker.run(h.steps, req.layer, req.head, req.query)
        out = {k: array(v) if isinstance(v, np.ndarray) else v for k, v in s.items()}
        return {"layer": req.layer, "head": req.head, "query": req.query, **out}

    @app.post("/api/held/vectors", summary="q and k of a held text at some positions, before and after the rotation")
    async def vectors(req: VectorsRequest) -> dict:
        if not 1 <= len(req.positions) <= 64:
            raise error(InputError, "errors.viewer_positions_count", n=len(req.positions))
        h = held(req)
        v = await worker.run(h.vectors, req.layer, req.head, req.positions)
        return {"layer": req.layer, "head": req.head, "positions": req.positions, **{k: array(x) for k, x in v.items()}}

    @app.post("/api/held/heatmap", summary="A region of one head's weights, max-pooled to at most rows × cols cells")
    async def heatmap(req: HeatmapRequest) -> dict:
        h = held(req)
        m = await worker.run(h.heatmap, req.layer, req.head, req.q0, req.q1, req.k0, req.k1, req.rows, req.cols)
        return {"layer": req.layer, "head": req.head, "grid": array(m["grid"]), "row_edges": m["row_edges"],
                "col_edges": m["col_edges"]}

    @app.post("/api/held/lines", summary="The head view's lines of a held text (at most 8,000 pairs)")
    async def lines(req: LinesRequest) -> dict:
        h = held(req)
        m = await worker.run(h.lines, req.layer, check_heads(req.heads))
        return {"layer": req.layer, "heads": req.heads, "minw": m["minw"],
                **{k: array(m[k]) for k in ("head", "query", "key", "weight")}}

    @app.post("/api/held/thumbs", summary="One layer's model-view thumbnails of a held text (uint8)")
    async def thumbs(req: HeldRequest) -> dict:
        h = held(req)
        t = await worker.run(h.thumbnails, req.layer)
        return {"layer": req.layer, "thumbs": array(t)}

    def view(text, compare, token, decimals, ship, attribution=False):
        d = held_view_data(model, store, text, compare=compare, token=token, decimals=decimals, ship=ship,
                           attribution=attribution)
        d["font_css"] = font_face_css(view_data_mod.all_text(d))
        return d

    app.state.held = store
    app.state.held_view = view
