"""``attnscope serve``: the viewer as a local web app with a text box, and its JSON API.

    attnscope serve --port 8000        # then open http://127.0.0.1:8000/

The model is loaded once, when the app is created, and runs on one worker thread (a trace attaches
recorders to the model's hook points, so two traces must not overlap). What bounds the work (a
queue of at most ``max_waiting`` for the model, then 503 at once with Retry-After; 413 for a body
over :data:`MAX_BODY`, 408 for one that stalls; at most :data:`MAX_ACTIVE` requests in progress;
``/healthz`` always answers) is :mod:`attnscope.server_limits`, the request and answer types
:mod:`attnscope.server_schema`. The OpenAPI schema is at ``/openapi.json`` and browsable offline at
``/docs`` (Swagger UI, from files that ship in a Python package, fastapi-offline; never from a
CDN. No ReDoc page: its sidebar loads a logo from the network).

Errors are JSON ``{"detail": "<one clear sentence>"}``, in the language ``serve --lang`` names:
400 for a body that is not JSON, 413 for a body over the limit, 408 for a body that stalls, 422
for a request that is JSON but wrong (empty, over-long or invalid-Unicode text, a value of the
wrong type, a layer, head or query token out of range, an unknown field), 404 for an unknown path,
405 for a wrong method, 503 when busy. Types are strict: ``"head": true``, ``"layer": 1.0`` and
``"decimals": "4"`` are 422, not coerced. The server keeps serving after any of them.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
from typing import Callable, Optional

import numpy as np
from fastapi import Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from . import __version__
from . import reference as R
from .config import is_seq2seq
from .errors import AttnscopeError, InputError
from .i18n import check_lang, error, error_message, text
from .server_limits import BODY_TIMEOUT, MAX_ACTIVE, MAX_BODY, MAX_WAITING, Busy, Limits, ModelWorker
from .server_schema import (
    EXAMPLE_BODY,
    EXAMPLE_PAIR,
    Attention,
    HeadRequest,
    ModelInfo,
    StepRequest,
    Steps,
    StrictRequest,
    ViewRequest,
    body_error_message,
    error_response,
    validation_message,
    with_error_schema,
)
from .trace.read import check_index
from .viewer.held_api import HELD_BYTES
from .viewer.held_api import add_routes as add_held_routes
from .viewer.held_store import TextStore
from .viewer.html import render_server_page
from .viewer.run import check_dot_product, check_text

__all__ = ["create_app", "serve", "bind", "is_loopback", "Busy", "Limits", "ModelWorker", "ViewRequest", "MAX_BODY",
           "MAX_WAITING", "MAX_ACTIVE", "BODY_TIMEOUT", "CHARS_PER_TOKEN", "MAX_MATRIX_TOKENS", "uvicorn_config"]

#: Default limit on the characters of one text, per token of the model's context length (the
#: model's own limit on tokens applies too): 512 tokens → 4,096 characters, 8,192 → 65,536.
CHARS_PER_TOKEN = 8
#: /api/attention answers a text's whole n × n matrix for at most this many tokens (4M numbers).
MAX_MATRIX_TOKENS = 2048


def create_app(model=None, *, model_path: Optional[str] = None, max_chars: Optional[int] = None,
               max_waiting: int = MAX_WAITING, max_body: Optional[int] = None, ship_up_to: Optional[int] = None,
               held_bytes: int = HELD_BYTES, body_timeout: float = BODY_TIMEOUT, lang: str = "en"):
    """The ASGI app. ``model``: an attnscope Model (loaded from ``model_path`` when None).

    ``max_chars``: longest text (default :data:`CHARS_PER_TOKEN` × the context length);
    ``ship_up_to``: texts of at most this many tokens travel whole in the page (default: those
    whose q, k, v fit in 16 MB), longer ones are held and read on demand within ``held_bytes``
    (:mod:`attnscope.viewer.held_api`); ``body_timeout``: seconds a request has to send its body (408 after);
    ``lang``: the language the page's own words start in (en, zh; the page has a switch) and that
    of every error the API answers.
    Returns a FastAPI app (``app.state.model``, ``app.state.worker``, ``app.state.held``) wrapped
    in the body limit.
    """
    from fastapi_offline import FastAPIOffline

    check_lang(lang)  # one sentence now, not a failing page later
    if model is None:
        from .models import load
        model = load(model_path)
    worker = ModelWorker(max_waiting)
    cfg = model.config
    if max_chars is None:
        max_chars = CHARS_PER_TOKEN * int(cfg.max_positions)
    if max_body is None:
        max_body = max(MAX_BODY, 12 * max_chars + 65536)
    app = FastAPIOffline(title="attnscope", version=__version__, redoc_url=None,
                         description="Attention of a Transformer, every number visible. The page at / is the "
                                     "interactive viewer; these endpoints return the same numbers as JSON.")
    app.state.model = model
    app.state.worker = worker
    app.state.lang = lang  # every error the API answers is in this language
    fastapi_openapi = app.openapi
    app.openapi = lambda: with_error_schema(fastapi_openapi())  # type: ignore[method-assign]  # 422: {"detail": "…"}

    @app.exception_handler(RequestValidationError)
    async def _on_validation(request: Request, exc: RequestValidationError):
        path = request.url.path
        example = (None if path.startswith("/api/held/") else EXAMPLE_PAIR if is_seq2seq(model) else EXAMPLE_BODY)
        status, msg = validation_message(exc, request.headers.get("content-type"), example, lang)
        return error_response(status, msg)

    @app.exception_handler(StarletteHTTPException)
    async def _on_http(request: Request, exc: StarletteHTTPException):
        known = body_error_message(exc, lang)  # "error parsing the body": say why (a body that is not UTF-8)
        path = repr(request.url.path)
        if exc.status_code == 404:  # Starlette's "Not Found", "Method Not Allowed": one sentence in --lang
            known = 404, text("errors.core_server_not_found", lang, path=path)
        elif exc.status_code == 405:
            allowed = (exc.headers or {}).get("Allow", "")
            known = 405, text("errors.core_server_method", lang, method=request.method, path=path, allowed=allowed)
        return error_response(*known, headers=dict(exc.headers or {})) if known else await http_exception_handler(request, exc)

    @app.exception_handler(AttnscopeError)
    async def _on_attnscope(request: Request, exc: AttnscopeError):
        return error_response(422, error_message(exc, lang))

    @app.exception_handler(Busy)
    async def _on_busy(request: Request, exc: Busy):
        return error_response(503, text("errors.core_server_busy", lang, n=worker.pending), headers={"Retry-After": "1"})

    add_held_routes(app, model, worker, TextStore(held_bytes), StrictRequest)  # long texts, read on demand

    def check_head(req: HeadRequest) -> None:
        check_dot_product(model)  # these answers are softmax(factor·q·kᵀ) of the traced q, k
        check_text(req.text, max_chars=max_chars)
        check_index("layer", req.layer, cfg.n_layers, "layer")
        check_index("head", req.head, cfg.n_heads, "head")

    def trace_layer(text: str, layer: int):
        """The text's trace with q, k, v of ``layer``: bit for bit those of the viewer's trace
        (no trace that records no full weight matrix changes a layer's numbers)."""
        return model.trace([text], names=[f"layers.{layer}.attn.{s}" for s in ("q", "k", "v")])

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index() -> str:
        return render_server_page(model.name, max_chars=max_chars, lang=lang, seq2seq=is_seq2seq(model))

    @app.get("/api/model", response_model=ModelInfo, response_model_exclude_none=True,
             summary="The loaded model and the input limits")
    def info() -> ModelInfo:
        return ModelInfo(name=model.name, family=getattr(model, "family", None), n_layers=cfg.n_layers,
                         n_decoder_layers=cfg.n_decoder_layers if is_seq2seq(model) else None,
                         n_heads=cfg.n_heads, d_model=cfg.d_model, d_head=cfg.d_head,
                         max_tokens=cfg.max_positions, max_chars=max_chars, version=__version__)

    @app.post("/api/view", summary="Page data for the viewer (the format of attnscope view's HTML file)")
    async def view(req: ViewRequest) -> JSONResponse:
        check_text(req.text, max_chars=max_chars)
        if req.compare is not None:
            check_text(req.compare, "compare", max_chars)

        return JSONResponse(await worker.run(app.state.held_view, req.text, req.compare, req.token, req.decimals,
                                             ship_up_to, req.attribution))

    @app.post("/api/attention", response_model=Attention, summary="One head's attention weights")
    async def attention(req: HeadRequest) -> Attention:
        check_head(req)

        def work():
            n = len(model.encode(req.text).tokens[0])
            if n > MAX_MATRIX_TOKENS:  # the answer is n² numbers as JSON text
                raise error(InputError, "errors.core_server_matrix", n=n, limit=f"{MAX_MATRIX_TOKENS:,}")
            tr = trace_layer(req.text, req.layer)
            q, k, _ = tr.qkv(req.layer, req.head, text=0)  # (n, d_head): the head and the k/v head it reads
            allowed = tr.mask(req.layer, text=0)[0].cpu().numpy()  # (n, n)
            bias = R.position_bias(tr, req.layer)  # (H, n, n): ALiBi's slope · key position, or None
            if bias is not None:  # added to the scaled scores where the query may look, as /api/steps does
                allowed = np.where(allowed, bias[req.head], -np.inf)  # (n, n) additive
            w = R.attention_weights(q, k, R.trace_factor(tr), mask=allowed)  # (n, n) float64
            return Attention(tokens=tr.text_labels(0), layer=req.layer, head=req.head, weights=w.tolist())
        return await worker.run(work)

    @app.post("/api/steps", response_model=Steps,
              summary="The walk-through of one query row: raw score, scaled, exp, weight, weighted sum")
    async def steps(req: StepRequest) -> Steps:
        check_head(req)

        def work():
            tr = trace_layer(req.text, req.layer)
            s = R.trace_row(tr, req.layer, req.head, req.query)
            return Steps(tokens=s["tokens"], layer=req.layer, head=req.head, query=req.query, d_k=s["d_k"],
                         factor=s["factor"], raw=s["raw"].tolist(),
                         scaled=[None if x == float("-inf") else x for x in s["scaled"].tolist()],
                         shift=s["shift"], exp=s["exp"].tolist(), sum=s["sum"], weights=s["weights"].tolist(),
                         out=s["out"].tolist())
        return await worker.run(work)

    @app.get("/assets/attnscope-cjk.otf", include_in_schema=False)
    def cjk_font() -> Response:
        from fastapi.responses import FileResponse

        from .fonts import CJK_FONT_PATH
        return FileResponse(CJK_FONT_PATH, media_type="font/otf", headers={"Cache-Control": "max-age=86400"})

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> Response:
        return Response(status_code=204)  # browsers ask for it; nothing to show, no 404 in the console

    @app.get("/healthz", include_in_schema=False)
    def health() -> dict:
        return {"ok": True}

    from .viewer.seq2seq_server import add_routes
    add_routes(app, model, worker, max_chars, StrictRequest)  # T5, BART: their own /api/view
    app.add_middleware(Limits, max_body=max_body, body_timeout=body_timeout, lang=lang)
    return app


def is_loopback(host: str) -> bool:
    """True when every address ``host`` resolves to is this machine's loopback."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return False
    return bool(infos) and all(ipaddress.ip_address(str(i[4][0]).split("%")[0]).is_loopback for i in infos)


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port``; InputError with one sentence when that fails."""
    import errno

    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror:
        raise error(InputError, "errors.core_server_host", host=repr(host)) from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart may reuse the port at once
    try:
        sock.bind(addr)
        sock.listen(128)
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise error(InputError, "errors.core_server_port_used", port=port) from None
        if e.errno == errno.EACCES:
            raise error(InputError, "errors.core_server_port_root", port=port) from None
        if e.errno == errno.EADDRNOTAVAIL:
            raise error(InputError, "errors.core_server_host_here", host=host) from None
        raise error(InputError, "errors.core_server_listen", host=host, port=port, why=e.strerror or str(e)) from None
    return sock


def uvicorn_config(app, log_level: str = "warning", **kw):
    """How ``attnscope serve`` runs ``app`` under uvicorn (tests serve a tiny model the same way)."""
    import uvicorn

    # uvicorn's own limit on connections is only a backstop behind Limits' clear JSON 503 and 408
    return uvicorn.Config(app, log_level=log_level, limit_concurrency=4 * MAX_ACTIVE, timeout_keep_alive=5, **kw)


def serve(host: str = "127.0.0.1", port: int = 8000, *, model_path: Optional[str] = None,
          max_chars: Optional[int] = None, held_bytes: int = HELD_BYTES, ship_up_to: Optional[int] = None,
          log_level: str = "warning", lang: str = "en",
          say: Callable[[str], None] = print) -> None:
    """Check the address, load the model, then run the app with uvicorn until interrupted.

    The socket is bound first, so a port in use is one sentence before the model loads; ``say``
    gets "serving http://…" only once uvicorn accepts requests. What it says and the API's errors
    are in ``lang``.
    """
    import uvicorn

    sock = bind(host, port)
    port = sock.getsockname()[1]  # the real one when port is 0
    if not is_loopback(host):
        print(text("cli.serve_open", lang, host=host), file=sys.stderr, flush=True)
    say(text("cli.serve_loading", lang))
    try:
        app = create_app(model_path=model_path, max_chars=max_chars, held_bytes=held_bytes, ship_up_to=ship_up_to,
                         lang=lang)
    except BaseException:
        sock.close()
        raise
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/"

    class Server(uvicorn.Server):
        async def startup(self, sockets=None):
            await super().startup(sockets=sockets)
            if not self.should_exit:
                say(text("cli.serve_serving", lang, url=url))

    try:
        Server(uvicorn_config(app, log_level)).run(sockets=[sock])
    finally:
        sock.close()
