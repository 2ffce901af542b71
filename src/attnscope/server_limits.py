"""What bounds ``attnscope serve``'s work: one model thread with a short queue (:class:`ModelWorker`,
503 at once when it is full) and an ASGI middleware (:class:`Limits`) that refuses bodies over the
limit (413), bodies that do not arrive whole within :data:`BODY_TIMEOUT` seconds (408, connection
closed), and requests beyond the number in progress (503) before the app sees them."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Optional

from .i18n import text

#: Largest request body in bytes by default, or 12 bytes a character of the limit (\\uXXXX
#: escapes of astral characters) plus 64 KB when that is more: room for anything valid.
MAX_BODY = 1_000_000
#: Requests that may wait for the model while one runs; more get 503 at once.
MAX_WAITING = 16
#: Requests in progress (their body read: waiting for the model or running) before new ones get
#: 503 at once: each holds at most MAX_BODY bytes, so this bounds the memory they can take. A
#: request still sending its body does not count: a few clients that stop halfway must not lock
#: everyone out (they are cut off after BODY_TIMEOUT instead).
MAX_ACTIVE = 64
#: Seconds a request has to send its whole body after its headers; then it gets 408 and its
#: connection is closed. A valid body is at most a few MB, seconds even on a slow network.
BODY_TIMEOUT = 10.0
#: Paths answered without reading a body or counting against MAX_ACTIVE (a liveness probe must
#: answer while the server is busy).
ALWAYS_ANSWERED = ("/healthz",)


class Busy(Exception):
    """Every place in the model's queue is taken."""


class ModelWorker:
    """Runs model work on one thread, with at most ``max_waiting`` calls queued behind the running
    one; :meth:`run` raises :class:`Busy` at once when the queue is full. The count follows the
    thread's own futures, so a client that disconnects frees its place only when its work is done
    or was cancelled before it started."""

    def __init__(self, max_waiting: int = MAX_WAITING):
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="attnscope-model")
        self.limit = max_waiting + 1
        self.pending = 0

    async def run(self, fn: Callable, *args):
        if self.pending >= self.limit:
            raise Busy()
        loop = asyncio.get_running_loop()
        fut = self.pool.submit(fn, *args)
        self.pending += 1
        fut.add_done_callback(lambda _: loop.call_soon_threadsafe(self._done))
        return await asyncio.wrap_future(fut)

    def _done(self) -> None:
        self.pending -= 1


async def _send_json(send, status: int, detail: str, headers: tuple = ()) -> None:
    body = json.dumps({"detail": detail}, ensure_ascii=False).encode()  # readable as sent, as the app's own answers
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *headers]})
    await send({"type": "http.response.body", "body": body})


class Limits:
    """ASGI middleware that bounds what requests can take before the app sees them.

    413 for a body over ``max_body`` bytes, decided from Content-Length before reading anything,
    else while counting the streamed chunks (never holding more than ``max_body``); 408 (and the
    connection closed) when the body has not arrived whole ``body_timeout`` seconds after the
    headers; 503 at once when ``max_active`` requests whose body was read are already in progress.
    :data:`ALWAYS_ANSWERED` paths (``/healthz``) skip all of it.
    """

    def __init__(self, app, max_body: int = MAX_BODY, max_active: int = MAX_ACTIVE,
                 body_timeout: float = BODY_TIMEOUT, lang: str = "en"):
        self.app, self.limit, self.max_active, self.body_timeout = app, max_body, max_active, body_timeout
        self.lang = lang  # of the refusals' sentences (serve --lang)
        self.active = 0

    async def _refuse(self, send, size: Optional[int] = None) -> None:
        """413 for a body of ``size`` bytes (None: over the limit, counted while it streamed)."""
        limit = f"{self.limit:,}"
        msg = text("errors.core_server_body_over", self.lang, limit=limit) if size is None else \
            text("errors.core_server_body_size", self.lang, size=f"{size:,}", limit=limit)
        await _send_json(send, 413, msg, ((b"connection", b"close"),))

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("path") in ALWAYS_ANSWERED:
            return await self.app(scope, receive, send)
        body = await self._read_body(scope, receive, send)
        if body is None:  # refused (413, 408) or the client left
            return
        if self.active >= self.max_active:
            return await _send_json(send, 503, text("errors.core_server_busy_active", self.lang, n=self.active),
                                    ((b"retry-after", b"1"),))
        replay = [{"type": "http.request", "body": body, "more_body": False}]

        async def receive_again():
            return replay.pop() if replay else await receive()

        self.active += 1
        try:
            await self.app(scope, receive_again, send)
        finally:
            self.active -= 1

    async def _read_body(self, scope, receive, send):
        """The whole body, or None once a refusal is sent (or the client left)."""
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            return await self._refuse(send, int(length))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.body_timeout
        chunks, size = [], 0
        while True:
            try:
                msg = await asyncio.wait_for(receive(), max(deadline - loop.time(), 0.0))
            except asyncio.TimeoutError:
                await _send_json(send, 408, text("errors.core_server_body_slow", self.lang, seconds=f"{self.body_timeout:g}",
                                                 size=f"{size:,}"), ((b"connection", b"close"),))
                return None
            if msg["type"] == "http.disconnect":
                return None
            chunk = msg.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                return await self._refuse(send)
            chunks.append(chunk)
            if not msg.get("more_body"):
                return b"".join(chunks)
