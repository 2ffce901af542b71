"""What bounds ``attnscope serve``'s work: one model thread with a short queue (:class:`ModelWorker`,
503 at once when it is full) and an ASGI middleware that refuses bodies over the limit (413) and
requests beyond the number in progress (503) before the app reads them (:class:`Limits`)."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

#: Largest request body in bytes by default, or 12 bytes a character of the limit (\\uXXXX
#: escapes of astral characters) plus 64 KB when that is more: room for anything valid.
MAX_BODY = 1_000_000
#: Requests that may wait for the model while one runs; more get 503 at once.
MAX_WAITING = 16
#: Requests in progress (reading a body, waiting, running) before new ones get 503 at once: each
#: holds at most MAX_BODY bytes, so this bounds the memory requests can take.
MAX_ACTIVE = 64


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
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *headers]})
    await send({"type": "http.response.body", "body": body})


class Limits:
    """ASGI middleware that bounds what requests can take before the app sees them.

    413 for a body over ``max_body`` bytes, decided from Content-Length before reading anything,
    else while counting the streamed chunks (never holding more than ``max_body``); 503 at once
    when ``max_active`` requests are already in progress.
    """

    def __init__(self, app, max_body: int = MAX_BODY, max_active: int = MAX_ACTIVE):
        self.app, self.limit, self.max_active = app, max_body, max_active
        self.active = 0

    async def _refuse(self, send, size: str) -> None:
        await _send_json(send, 413, f"request body is {size}; the limit is {self.limit:,} bytes "
                                    "(the longest valid text needs less)", ((b"connection", b"close"),))

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if self.active >= self.max_active:
            return await _send_json(send, 503, f"the server is busy ({self.active} requests in progress); "
                                               "try again in a moment", ((b"retry-after", b"1"),))
        self.active += 1
        try:
            await self._call(scope, receive, send)
        finally:
            self.active -= 1

    async def _call(self, scope, receive, send):
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            return await self._refuse(send, f"{int(length):,} bytes")
        chunks, size = [], 0
        while True:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                return
            chunk = msg.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                return await self._refuse(send, f"over {self.limit:,} bytes")
            chunks.append(chunk)
            if not msg.get("more_body"):
                break
        replay = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]

        async def receive_again():
            return replay.pop() if replay else await receive()

        await self.app(scope, receive_again, send)
