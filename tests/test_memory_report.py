"""tests/memory_report.py: a test's peak is its own (the high-water mark is reset), and the summary
adds up per process and per module."""

from __future__ import annotations

import json

from tests.memory_report import _reset_peak, _status, release_memory, summarize


def test_the_peak_is_reset_between_tests():
    block = bytearray(300 * 2**20)  # 300 MB, every page written
    for i in range(0, len(block), 4096):
        block[i] = 1
    high = _status()["VmHWM"]
    del block
    release_memory()
    assert _reset_peak()
    after = _status()
    assert after["VmHWM"] <= high - 250 * 1024, (high, after)  # kB
    assert after["VmHWM"] >= after["VmRSS"] - 1024


def test_summary_per_process_and_module(tmp_path):
    def rec(test, peak_mb, rss_mb, seconds, **kw):
        return json.dumps({"test": test, "module": test.split("::")[0], "peak_kb": peak_mb * 1024,
                           "rss_kb": rss_mb * 1024, "seconds": seconds, "pid": 1, **kw})
    (tmp_path / "gw0.jsonl").write_text("\n".join([
        rec("(imports and collection)", 300, 300, 0.0),
        rec("tests/a.py::t1", 1200, 900, 2.0),
        rec("tests/a.py::t2", 2100, 500, 3.0),
        rec("tests/b.py::t1", 600, 500, 40.0, child_kb=700 * 1024)]) + "\n")
    (tmp_path / "gw1.jsonl").write_text(rec("tests/c.py::t[x]", 800, 700, 1.5) + "\n")
    text = summarize(tmp_path)
    rows = {ln.split("|")[1].strip(): ln for ln in text.splitlines() if ln.startswith("| ")}
    assert "| 2,100 MB | 3 | 45 s | 700 MB |" in rows["gw0"] and "| 800 MB | 1 |" in rows["gw1"]
    assert "| tests/a.py | gw0 | 2,100 MB | 500 MB | 5.0 s | t2 |" in text  # largest peak, held after t2
    slowest = text.split("Slowest modules:")[1]
    assert slowest.index("tests/b.py") < slowest.index("tests/a.py") < slowest.index("tests/c.py")
    assert "Largest child process: 700 MB, during tests/b.py::t1 (gw0)." in text


def test_release_memory_lets_go_of_what_a_fastapi_route_closed_over():
    # FastAPI's lru_caches keep every route function they classified; create_app's routes close over
    # the model, so without clearing them a test's server kept its model for the rest of the run
    import gc
    import weakref

    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    class Held:
        pass

    def make_app(held: Held) -> FastAPI:
        app = FastAPI()

        @app.get("/x")
        def x() -> dict:
            return {"held": type(held).__name__}
        return app

    held = Held()
    ref = weakref.ref(held)
    assert TestClient(make_app(held)).get("/x").json() == {"held": "Held"}
    del held
    gc.collect()
    release_memory()
    assert ref() is None
