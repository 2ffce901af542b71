"""What a request can take from the server is bounded: body size (413 before the body is read),
requests in progress and waiting for the model (503 at once), and memory under load."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time

import pytest

from attnscope.server import MAX_BODY, Busy, Limits, ModelWorker


def run_async(coro):
    """asyncio.run on a thread of its own: Playwright's sync API (tests/browser, same worker) keeps
    an event loop running on this one."""
    out = {}

    def target():
        try:
            out["value"] = asyncio.run(coro)
        except BaseException as e:  # re-raised below, in the test's thread
            out["error"] = e
    t = threading.Thread(target=target)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


async def _echo_app(scope, receive, send):
    msg = await receive()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": str(len(msg["body"])).encode()})


def _drive(mw, headers, chunks):
    """Run the middleware on one request; return (status, body, chunks pulled from the client)."""
    pulled, sent = [], []

    async def receive():
        i = len(pulled)
        pulled.append(i)
        if i < len(chunks):
            return {"type": "http.request", "body": chunks[i], "more_body": i < len(chunks) - 1}
        return {"type": "http.disconnect"}

    async def send(msg):
        sent.append(msg)

    scope = {"type": "http", "method": "POST", "path": "/api/view", "headers": headers}
    run_async(mw(scope, receive, send))
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:]), len(pulled)


def test_413_from_content_length_reads_nothing():
    mw = Limits(_echo_app)
    status, body, pulled = _drive(mw, [(b"content-length", b"300000000")], [b"x" * 65536] * 5000)
    assert status == 413 and pulled == 0
    assert json.loads(body)["detail"] == ("request body is 300,000,000 bytes; the limit is 1,000,000 bytes "
                                          "(the longest valid text needs less)")


def test_413_while_streaming_stops_at_the_limit():
    mw = Limits(_echo_app)
    status, body, pulled = _drive(mw, [], [b"x" * 65536] * 5000)  # chunked, no length: 327 MB offered
    assert status == 413 and pulled == MAX_BODY // 65536 + 1  # read up to the limit, not one chunk more
    assert "over 1,000,000 bytes" in json.loads(body)["detail"]


def test_bodies_up_to_the_limit_pass_whole():
    mw = Limits(_echo_app)
    assert _drive(mw, [], [b"x" * 500_000, b"y" * 500_000]) == (200, b"1000000", 2)


def test_503_when_too_many_requests_are_in_progress():
    mw = Limits(_echo_app, max_active=2)
    mw.active = 2
    status, body, pulled = _drive(mw, [], [b"{}"])  # its body is read (within BODY_TIMEOUT), then refused
    assert status == 503 and pulled == 1 and "the server is busy (2 requests in progress)" in json.loads(body)["detail"]


def test_model_worker_queue_is_bounded_and_frees_its_places():
    gate = threading.Event()
    started = []

    def slow(i):
        started.append((i, threading.current_thread().name))
        gate.wait(5)
        return i

    async def main():
        w = ModelWorker(max_waiting=2)
        tasks = [asyncio.ensure_future(w.run(slow, i)) for i in range(3)]  # 1 running + 2 waiting
        await asyncio.sleep(0.05)
        with pytest.raises(Busy):
            await w.run(slow, 99)
        tasks[2].cancel()  # a client that left before its turn frees its place
        await asyncio.sleep(0.05)
        extra = asyncio.ensure_future(w.run(slow, 3))
        gate.set()
        done = await asyncio.gather(*tasks[:2], extra)
        await asyncio.sleep(0.05)
        return done, w.pending

    done, pending = run_async(main())
    assert done == [0, 1, 3] and pending == 0
    assert {name for _, name in started} == {"attnscope-model_0"}  # one thread runs the model
    assert [i for i, _ in started] == [0, 1, 3]


def _raw(url: str, data: bytes, timeout: float = 10) -> bytes:
    host, port = url.split("//")[1].strip("/").split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


@pytest.mark.slow
def test_real_server_refuses_big_bodies_and_levels_off_under_load():
    """A bounded load test on loopback: bursts of 200 concurrent requests, RSS after each burst."""
    import httpx

    from tests.server.live import live_server

    with live_server() as (url, proc):
        # 300 MB announced, nothing sent: 413 at once, the connection closed
        t0 = time.monotonic()
        answer = _raw(url, b"POST /api/view HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                           b"Content-Length: 300000000\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 413") and time.monotonic() - t0 < 5
        assert b"the limit is 1,000,000 bytes" in answer

        texts = ["The bank of the river was muddy. " * 4, "I deposited money at the bank.", "word " * 60]

        async def burst(client, n=200):
            reqs = [client.post(url + ("api/view" if i % 3 == 0 else "api/steps"),
                                json={"text": texts[i % 3]} | ({} if i % 3 == 0 else {"layer": 2, "head": 1, "query": 1}))
                    for i in range(n)]
            return [r.status_code for r in await asyncio.gather(*reqs)]

        async def load(rounds=6):
            limits = httpx.Limits(max_connections=200, max_keepalive_connections=0)
            async with httpx.AsyncClient(limits=limits, timeout=60) as client:
                rss, codes = [], []
                for _ in range(rounds):
                    codes.append(await burst(client))
                    rss.append(_rss_mb(proc.pid))
                return rss, codes

        rss0 = _rss_mb(proc.pid)
        t0 = time.monotonic()
        rss, codes = run_async(load())
        elapsed = time.monotonic() - t0
        print(f"\nRSS before {rss0:.0f} MB, after each burst of 200: {[round(x) for x in rss]} MB; "
              f"200/503 per burst: {[(c.count(200), c.count(503)) for c in codes]}; {elapsed:.1f} s")
        assert all(set(c) <= {200, 503} and 200 in c and 503 in c for c in codes), codes  # never a 500
        assert max(rss[2:]) - rss[1] < 40, rss  # levels off after the first bursts
        assert max(rss) - rss0 < 400, (rss0, rss)
        # and it still serves
        assert httpx.post(url + "api/attention", json={"text": "still here"}).status_code == 200


def test_a_body_that_stalls_gets_408_and_frees_nothing_it_did_not_take():
    async def stalled(scope, receive, send):  # never called: the body never comes whole
        raise AssertionError("the app must not see a partial body")

    mw = Limits(stalled, body_timeout=0.2)
    sent = []

    async def receive():
        if not sent and not getattr(receive, "given", False):
            receive.given = True
            return {"type": "http.request", "body": b'{"text": "ha', "more_body": True}
        await asyncio.sleep(3600)  # the client stopped sending and keeps the connection open

    async def send(msg):
        sent.append(msg)

    t0 = time.monotonic()
    run_async(mw({"type": "http", "method": "POST", "path": "/api/view", "headers": []}, receive, send))
    assert 0.2 <= time.monotonic() - t0 < 2
    assert sent[0]["status"] == 408 and (b"connection", b"close") in sent[0]["headers"]
    assert json.loads(sent[1]["body"])["detail"] == ("the request body did not arrive whole within 0.2 seconds "
                                                     "(12 bytes came); send it at once")
    assert mw.active == 0


def test_requests_still_reading_their_body_do_not_take_the_slots():
    mw = Limits(_echo_app, max_active=1)
    mw.active = 0
    assert _drive(mw, [], [b"x" * 10, b"y" * 10])[:2] == (200, b"20")
    mw.active = 1  # one request at the model: the next is 503 once its body is read; /healthz still answers
    assert _drive(mw, [], [b"{}"])[0] == 503
    pulled, sent = [], []

    async def receive():
        pulled.append(1)
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(msg):
        sent.append(msg)
    run_async(mw({"type": "http", "method": "GET", "path": "/healthz", "headers": []}, receive, send))
    assert sent[0]["status"] == 200 and b"".join(m.get("body", b"") for m in sent[1:]) == b"0"


class _Served:
    """A tiny model served by uvicorn as `attnscope serve` runs it, on a thread of this process."""

    def __init__(self, model, **kw):
        import uvicorn

        from attnscope.server import create_app, uvicorn_config
        from tests.server.live import free_port
        self.port = free_port()
        self.server = uvicorn.Server(uvicorn_config(create_app(model, **kw), port=self.port))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(10)

    def request(self, data: bytes) -> bytes:
        return _raw(f"http://127.0.0.1:{self.port}/", data)


def test_clients_that_stop_halfway_through_their_bodies_lock_no_one_out(tiny_models):
    """The issue's attack on real sockets: 70 connections (more than MAX_ACTIVE = 64) each send half
    a body and stay open. /healthz and a whole request are answered meanwhile; the stalled ones get
    408 and are closed after the body timeout."""
    from attnscope.server import MAX_ACTIVE

    timeout = 2.0
    with _Served(tiny_models["bert-chinese"], body_timeout=timeout) as served:
        stalled = []
        t0 = time.monotonic()
        for _ in range(MAX_ACTIVE + 6):
            s = socket.create_connection(("127.0.0.1", served.port), timeout=10)
            s.sendall(b"POST /api/attention HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 100\r\n\r\n{\"text\": \"")
            stalled.append(s)
        try:
            time.sleep(0.3)
            assert served.request(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").startswith(
                b"HTTP/1.1 200")
            body = json.dumps({"text": "我喜欢", "layer": 0, "head": 0}).encode()
            answer = served.request(b"POST /api/attention HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                    b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            assert answer.startswith(b"HTTP/1.1 200") and b'"weights"' in answer, answer[:300]
            assert time.monotonic() - t0 < timeout  # answered while every stalled body was still open
            for s in stalled:
                got = b""
                while chunk := s.recv(65536):  # the server closes the connection after its answer
                    got += chunk
                assert got.startswith(b"HTTP/1.1 408") and b"did not arrive whole within 2 seconds" in got, got
            assert timeout <= time.monotonic() - t0 < timeout + 5
        finally:
            for s in stalled:
                s.close()
