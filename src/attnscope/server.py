"""``attnscope serve``: the viewer as a local web app with a text box, and its JSON API.

    attnscope serve --port 8000        # then open http://127.0.0.1:8000/

The model is loaded once, when the app is created. Every request runs under one lock (a trace
attaches recorders to the model's hook points, so two traces must not overlap). The OpenAPI
schema is at ``/openapi.json`` and browsable at ``/docs``.

Errors are JSON ``{"detail": "<one clear sentence>"}``: 400 for a body that is not JSON, 422 for
a request that is JSON but wrong (empty or over-long text, a layer, head or query token out of
range, an unknown field), 404 for an unknown path. The server keeps serving after any of them.
"""

from __future__ import annotations

import threading
from typing import Optional

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from . import __version__
from .errors import AttnscopeError, InputError
from .fonts import font_face_css
from .viewer import data as view_data_mod
from .viewer import source
from .viewer.html import render_server_page
from .viewer.run import trace_texts, view_data

#: Default limit on the characters of one text (the model's own limit on tokens applies too).
MAX_CHARS = 2000


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ViewRequest(_Strict):
    text: str = Field(description="The text to look at.", examples=["The bank of the river."])
    compare: Optional[str] = Field(None, description="A second text for the context view.",
                                   examples=["I deposited money at the bank."])
    token: Optional[str] = Field(None, description="The token the two texts share (default: the first shared one).")
    decimals: int = Field(4, ge=0, le=12, description="Decimals the page starts with.")


class HeadRequest(_Strict):
    text: str = Field(examples=["The bank of the river."])
    layer: int = Field(0, description="Layer index, 0-based.")
    head: int = Field(0, description="Head index, 0-based.")


class StepRequest(HeadRequest):
    query: int = Field(0, description="Position of the query token (0 is [CLS] in BERT models).")


class ModelInfo(BaseModel):
    name: str
    family: Optional[str]
    n_layers: int
    n_heads: int
    d_model: int
    d_head: int
    max_tokens: int
    max_chars: int
    version: str


class Attention(BaseModel):
    tokens: list[str]
    layer: int
    head: int
    weights: list[list[float]] = Field(description="(n, n): row = query, column = key; rows sum to 1.")


class Steps(BaseModel):
    tokens: list[str]
    layer: int
    head: int
    query: int
    d_k: int
    factor: float = Field(description="Raw scores are multiplied by this (1/√d_k).")
    raw: list[float] = Field(description="q·k for every key.")
    scaled: list[Optional[float]] = Field(description="raw × factor; null where masked (causal models).")
    shift: float = Field(description="Subtracted before exp when the row maximum exceeds 50, else 0.")
    exp: list[float]
    sum: float
    weights: list[float]
    out: list[float] = Field(description="Σ weight · v: this head's part of the query's new vector.")


def _error(status: int, detail: str) -> JSONResponse:
    return JSONResponse(status_code=status, content={"detail": detail})


def _validation_message(exc: RequestValidationError) -> tuple[int, str]:
    errors = exc.errors()
    for e in errors:
        if e.get("type") == "json_invalid":
            ctx = e.get("ctx") or {}
            return 400, f"request body is not valid JSON: {ctx.get('error', e.get('msg'))}"
    parts = []
    for e in errors:
        loc = [str(x) for x in e.get("loc", ()) if x != "body"]
        where = ".".join(loc) or "body"
        if e.get("type") == "extra_forbidden":
            parts.append(f"unknown field {where!r}")
        elif e.get("type") == "missing":
            parts.append(f"missing field {where!r}")
        elif e.get("type") in ("model_attributes_type", "dict_type") and not loc:
            parts.append("request body must be a JSON object")
        else:
            parts.append(f"{where}: {e.get('msg')}")
    return 422, "; ".join(parts) or "invalid request"


def create_app(model=None, *, model_path: Optional[str] = None, max_chars: int = MAX_CHARS) -> FastAPI:
    """The ASGI app. ``model``: an attnscope Model (loaded from ``model_path`` when None)."""
    if model is None:
        from .models import load
        model = load(model_path)
    lock = threading.Lock()
    cfg = model.config
    app = FastAPI(title="attnscope", version=__version__,
                  description="Attention of a Transformer, every number visible. The page at / is the "
                              "interactive viewer; these endpoints return the same numbers as JSON.")
    app.state.model = model

    @app.exception_handler(RequestValidationError)
    async def _on_validation(request: Request, exc: RequestValidationError):
        status, msg = _validation_message(exc)
        return _error(status, msg)

    @app.exception_handler(AttnscopeError)
    async def _on_attnscope(request: Request, exc: AttnscopeError):
        return _error(422, str(exc))

    def check_text(text: str, what: str = "text") -> str:
        if not text.strip():
            raise InputError(f"{what} is empty; type a sentence")
        if len(text) > max_chars:
            raise InputError(f"{what} has {len(text)} characters; the limit is {max_chars}")
        return text

    def traced(texts: list[str]):
        with lock:
            return trace_texts(model, texts)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index() -> str:
        return render_server_page(model.name)

    @app.get("/api/model", response_model=ModelInfo, summary="The loaded model and the input limits")
    def info() -> ModelInfo:
        return ModelInfo(name=model.name, family=getattr(model, "family", None), n_layers=cfg.n_layers,
                         n_heads=cfg.n_heads, d_model=cfg.d_model, d_head=cfg.d_head,
                         max_tokens=cfg.max_positions, max_chars=max_chars, version=__version__)

    @app.post("/api/view", summary="Page data for the viewer (the format of attnscope view's HTML file)")
    def view(req: ViewRequest) -> JSONResponse:
        check_text(req.text)
        if req.compare is not None:
            check_text(req.compare, "compare")
        with lock:
            d = view_data(model, req.text, compare=req.compare, token=req.token, decimals=req.decimals)
        d["font_css"] = font_face_css(view_data_mod.all_text(d))
        return JSONResponse(d)

    @app.post("/api/attention", response_model=Attention, summary="One head's attention weights")
    def attention(req: HeadRequest) -> Attention:
        check_text(req.text)
        source.check_index("layer", req.layer, cfg.n_layers, "layer")
        source.check_index("head", req.head, cfg.n_heads, "head")
        tr = traced([req.text])
        w = source.weights(tr, req.layer)[req.head]  # (n, n) float64 from the traced q, k
        return Attention(tokens=source.tokens(tr), layer=req.layer, head=req.head, weights=w.tolist())

    @app.post("/api/steps", response_model=Steps,
              summary="The walk-through of one query row: raw score, scaled, exp, weight, weighted sum")
    def steps(req: StepRequest) -> Steps:
        check_text(req.text)
        source.check_index("layer", req.layer, cfg.n_layers, "layer")
        source.check_index("head", req.head, cfg.n_heads, "head")
        tr = traced([req.text])
        s = source.steps(tr, req.layer, req.head, req.query)
        return Steps(tokens=s["tokens"], layer=req.layer, head=req.head, query=req.query, d_k=s["d_k"],
                     factor=s["factor"], raw=s["raw"].tolist(),
                     scaled=[None if x == float("-inf") else x for x in s["scaled"].tolist()],
                     shift=s["shift"], exp=s["exp"].tolist(), sum=s["sum"], weights=s["weights"].tolist(),
                     out=s["out"].tolist())

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> Response:
        return Response(status_code=204)  # browsers ask for it; nothing to show, no 404 in the console

    @app.get("/healthz", include_in_schema=False)
    def health() -> dict:
        return {"ok": True}

    return app


def serve(host: str = "127.0.0.1", port: int = 8000, *, model_path: Optional[str] = None,
          max_chars: int = MAX_CHARS, log_level: str = "info") -> None:
    """Load the model and run the app with uvicorn until interrupted."""
    import uvicorn

    app = create_app(model_path=model_path, max_chars=max_chars)
    uvicorn.run(app, host=host, port=port, log_level=log_level)

