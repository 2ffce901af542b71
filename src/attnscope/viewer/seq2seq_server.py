"""``attnscope serve`` for an encoder–decoder model (T5, BART): its ``/api/view``.

The served page has a source box and a target box; ``POST /api/view`` takes
``{"source": …, "target": …, "decimals": 4}`` and answers the page data of
:func:`attnscope.viewer.seq2seq.seq2seq_view_data` (with ``font_css``). Each missing or misplaced
text is one 422 sentence: a target without its source, a source without a target, or the
one-text field ``text`` sent to this model.

:func:`add_routes` is called at the end of :func:`attnscope.server.create_app`: for such a model it
replaces the one-text routes (``/api/view``, and ``/api/attention``, ``/api/steps``, which read one
text) with this one; nothing changes for other models. Its page is the server's own
(:func:`attnscope.viewer.html.render_server_page` with ``seq2seq=True``).
"""

# no "from __future__ import annotations": FastAPI reads the local request class from the signature

from typing import Optional

from fastapi.responses import JSONResponse
from pydantic import Field

from ..config import is_seq2seq
from ..errors import InputError
from ..fonts import font_face_css
from ..i18n import error
from .data import MAX_DECIMALS, all_text
from .run import check_text
from .seq2seq import seq2seq_view_data


def add_routes(app, model, worker, max_chars: int, base) -> bool:
    """Register ``/api/view`` of an encoder–decoder ``model`` on ``app`` (``worker``: the server's
    model thread; ``base``: its strict pydantic request class). False, and nothing registered, for
    other models."""
    if not is_seq2seq(model):
        return False
    one_text = ("/api/view", "/api/attention", "/api/steps")
    app.router.routes[:] = [r for r in app.router.routes if getattr(r, "path", None) not in one_text]

    class Seq2SeqViewRequest(base):
        source: Optional[str] = Field(None, description="The source text (what the encoder reads).",
                                      examples=["translate English to German: The house is wonderful."])
        target: Optional[str] = Field(None, description="The target text (what the decoder reads and writes).",
                                      examples=["Das Haus ist wunderbar."])
        text: Optional[str] = Field(None, description="Not for this model: an encoder–decoder model reads a source "
                                    "and a target.")
        decimals: int = Field(4, ge=0, le=MAX_DECIMALS, description="Decimals the page starts with.")

    @app.post("/api/view", summary="Page data for the encoder–decoder viewer (encoder, decoder and cross views)")
    async def seq2seq_view(req: Seq2SeqViewRequest) -> JSONResponse:
        if req.text is not None:
            raise error(InputError, "errors.viewer_send_not_text", name=model.name)
        if req.source is None and req.target is not None:
            raise error(InputError, "errors.viewer_target_needs_source")
        if req.source is None:
            raise error(InputError, "errors.viewer_send_source")
        check_text(req.source, "source", max_chars)
        if req.target is None:
            raise error(InputError, "errors.viewer_send_target")
        check_text(req.target, "target", max_chars)
        source, target = str(req.source), str(req.target)

        def work():
            d = seq2seq_view_data(model, source, target, decimals=req.decimals)
            d["font_css"] = font_face_css(all_text(d))
            return d
        return JSONResponse(await worker.run(work))

    return True
