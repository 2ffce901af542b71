"""Peak memory and time of every test module, per pytest process: ``ATTNSCOPE_MEMORY_REPORT=DIR``.

Turned on by the environment variable (tests/conftest.py registers :class:`MemoryReport`), with
or without xdist::

    ATTNSCOPE_MEMORY_REPORT=artifacts/memory .venv/bin/python -m pytest -q -n 2

What is measured (Linux ``/proc``; elsewhere the plugin says it cannot and does nothing):

* per test, in the process that runs it (an xdist worker, or pytest alone): the kernel's high-water
  mark of the process's resident memory (``VmHWM``), reset before the test by writing ``5`` to
  ``/proc/self/clear_refs`` and read after its teardown, so a test's peak includes its fixtures'
  set-up and teardown (a module's fixtures end in its last test's teardown); and ``VmRSS`` after
  it (what the process still holds: models kept by session fixtures or module globals show here);
* per module: the largest peak of its tests, the resident memory after its last test, its time;
* the largest finished child process (``RUSAGE_CHILDREN``: CLI subprocesses, servers), and the
  test during which it grew (that figure cannot be reset, so only growth is seen);
* the whole run: the process that started pytest samples, once a second, the proportional set
  size (``Pss``, shared library pages counted once) of itself and every process under it (xdist
  workers, Chromium, servers, notebook kernels); the largest sum is the suite's footprint.

Each process appends one JSON line per test to ``DIR/<worker>.jsonl`` as it goes (a worker killed
for memory leaves what it measured); the process that started pytest writes ``DIR/summary.md``
and prints it at the end.
"""

from __future__ import annotations

import json
import os
import resource
import threading
import time
from pathlib import Path

import pytest

ENV = "ATTNSCOPE_MEMORY_REPORT"
#: The pid of the pytest that writes the summary (set by it; its children inherit it).
OWNER = "ATTNSCOPE_MEMORY_REPORT_OWNER"


def _status() -> dict[str, int]:
    """``VmHWM`` and ``VmRSS`` of this process in kB (empty off Linux)."""
    out: dict[str, int] = {}
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmHWM", "VmRSS"):
                    out[key] = int(value.split()[0])
    except OSError:
        pass
    return out


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _children_kb() -> int:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # kB on Linux


def _tree_pss(root: int) -> tuple[int, list[tuple[int, str, int]]]:
    """Sum of Pss (kB; VmRSS where smaps_rollup cannot be read) of ``root`` and its descendants."""
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as f:
                    stat = f.read()
                parent[int(entry)] = int(stat[stat.rfind(")") + 2:].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    tree, frontier = {root}, [root]
    while frontier:
        p = frontier.pop()
        for child, par in parent.items():
            if par == p and child not in tree:
                tree.add(child)
                frontier.append(child)
    parts = []
    for pid in tree:
        kb = 0
        try:
            with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as f:
                kb = sum(int(line.split()[1]) for line in f if line.startswith("Pss:"))
        except (OSError, ValueError):
            try:
                with open(f"/proc/{pid}/status", encoding="ascii") as f:
                    kb = next((int(line.split()[1]) for line in f if line.startswith("VmRSS:")), 0)
            except (OSError, ValueError):
                continue
        try:
            with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as f:
                name = f.read().strip()
        except OSError:
            name = "?"
        parts.append((pid, name, kb))
    return sum(kb for _, _, kb in parts), sorted(parts, key=lambda t: -t[2])


class _Sampler(threading.Thread):
    """The footprint of the process tree under ``root``, sampled every ``interval`` seconds."""

    def __init__(self, root: int, interval: float = 1.0):
        super().__init__(daemon=True, name="attnscope-memory-sampler")
        self.root, self.interval = root, interval
        self.peak_kb, self.at_peak, self.when = 0, [], 0.0
        self.start_time = time.monotonic()
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            total, parts = _tree_pss(self.root)
            if total > self.peak_kb:
                self.peak_kb, self.at_peak, self.when = total, parts, time.monotonic() - self.start_time

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=5)


def _mb(kb: int) -> str:
    return f"{kb / 1024:,.0f} MB"


class MemoryReport:
    """The plugin (see the module docstring); ``folder`` receives the per-process files."""

    def __init__(self, config: pytest.Config, folder: Path):
        self.folder = folder
        self.worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.is_main = not hasattr(config, "workerinput")
        self.file = folder / f"{self.worker}.jsonl"
        self.children_kb = _children_kb()
        self.first = True
        self.resettable = True
        self.summary = ""
        self.sampler = _Sampler(os.getpid()) if self.is_main and os.path.isdir("/proc/self") else None
        folder.mkdir(parents=True, exist_ok=True)
        if self.is_main:
            for old in folder.glob("*.jsonl"):
                old.unlink()
        if self.sampler is not None:
            self.sampler.start()

    def _write(self, record: dict) -> None:
        with open(self.file, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        if self.first:  # imports and collection, before the first test
            self.first = False
            self._write({"test": "(imports and collection)", "module": "(imports and collection)",
                         "peak_kb": _status().get("VmHWM", 0), "rss_kb": _status().get("VmRSS", 0),
                         "seconds": 0.0, "pid": os.getpid()})
        self.resettable = _reset_peak() and self.resettable
        t0 = time.perf_counter()
        yield
        seconds = time.perf_counter() - t0
        st = _status()
        record = {"test": item.nodeid, "module": item.nodeid.split("::")[0], "peak_kb": st.get("VmHWM", 0),
                  "rss_kb": st.get("VmRSS", 0), "seconds": round(seconds, 3), "pid": os.getpid()}
        children = _children_kb()
        if children > self.children_kb:
            self.children_kb = record["child_kb"] = children
        if not self.resettable:
            record["since_start"] = True
        self._write(record)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session):
        if not self.is_main:
            return
        if self.sampler is not None:
            self.sampler.stop()
        self.summary = summarize(self.folder, self.sampler)
        (self.folder / "summary.md").write_text(self.summary, encoding="utf-8")

    def pytest_terminal_summary(self, terminalreporter):
        if self.summary:
            terminalreporter.write_sep("-", f"memory ({self.folder / 'summary.md'})")
            terminalreporter.write_line(self.summary)


def summarize(folder: Path, sampler: _Sampler | None = None, top: int = 12) -> str:
    """The Markdown summary of the ``*.jsonl`` files in ``folder``."""
    records: list[dict] = []
    for f in sorted(folder.glob("*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.strip():
                records.append(dict(json.loads(line), worker=f.stem))
    if not records:
        return "no test ran in a process that measured memory"
    modules: dict[tuple[str, str], dict] = {}
    for r in records:
        m = modules.setdefault((r["worker"], r["module"]), {"peak_kb": 0, "seconds": 0.0, "tests": 0, "rss_kb": 0,
                                                             "peak_test": ""})
        if r["peak_kb"] >= m["peak_kb"]:
            m["peak_kb"], m["peak_test"] = r["peak_kb"], r["test"]
        m["seconds"] += r["seconds"]
        m["tests"] += 1
        m["rss_kb"] = r["rss_kb"]  # after the module's last test in this process
    lines = []
    if sampler is not None and sampler.peak_kb:
        big = ", ".join(f"{name} {_mb(kb)}" for _, name, kb in sampler.at_peak[:6])
        lines += [f"Whole run (pytest and every process under it, Pss sampled each second): peak "
                  f"{_mb(sampler.peak_kb)} at {sampler.when:,.0f} s ({big}).", ""]
    lines += ["| process | peak | tests | time | largest child process |", "|---|---:|---:|---:|---:|"]
    for w in sorted({r["worker"] for r in records}):
        rs = [r for r in records if r["worker"] == w]
        child = max((r.get("child_kb", 0) for r in rs), default=0)
        since = " (peaks since start: no reset)" if any(r.get("since_start") for r in rs) else ""
        tests = sum(r["test"] != "(imports and collection)" for r in rs)
        lines.append(f"| {w}{since} | {_mb(max(r['peak_kb'] for r in rs))} | {tests} | "
                     f"{sum(r['seconds'] for r in rs):,.0f} s | {_mb(child) if child else '-'} |")
    by_peak = sorted(modules.items(), key=lambda kv: -kv[1]["peak_kb"])[:top]
    lines += ["", f"Largest module peaks (of {len(modules)} module runs):", "",
              "| module | process | peak | held after | time | peak in |", "|---|---|---:|---:|---:|---|"]
    for (w, mod), m in by_peak:
        lines.append(f"| {mod} | {w} | {_mb(m['peak_kb'])} | {_mb(m['rss_kb'])} | {m['seconds']:,.1f} s | "
                     f"{m['peak_test'].split('::', 1)[-1]} |")
    by_time = sorted(modules.items(), key=lambda kv: -kv[1]["seconds"])[:top]
    lines += ["", "Slowest modules:", "", "| module | process | time | tests | peak |", "|---|---|---:|---:|---:|"]
    for (w, mod), m in by_time:
        lines.append(f"| {mod} | {w} | {m['seconds']:,.1f} s | {m['tests']} | {_mb(m['peak_kb'])} |")
    grew = [r for r in records if r.get("child_kb")]
    if grew:
        r = max(grew, key=lambda r: r["child_kb"])
        lines += ["", f"Largest child process: {_mb(r['child_kb'])}, during {r['test']} ({r['worker']})."]
    return "\n".join(lines) + "\n"


def register(config: pytest.Config) -> None:
    """Register the plugin when ``ATTNSCOPE_MEMORY_REPORT`` names a folder (in the pytest that the
    user started and its xdist workers; not in a pytest that a test runs, which would clear the
    folder and write its own summary)."""
    folder = os.environ.get(ENV)
    if not folder or config.pluginmanager.has_plugin("attnscope-memory-report"):
        return
    is_worker = hasattr(config, "workerinput")
    if not is_worker:
        if os.environ.get(OWNER, str(os.getpid())) != str(os.getpid()):
            return  # a pytest started by a test
        os.environ[OWNER] = str(os.getpid())
    config.pluginmanager.register(MemoryReport(config, Path(folder)), "attnscope-memory-report")


def resident_kb() -> int:
    """This process's resident memory now (kB; 0 off Linux)."""
    return _status().get("VmRSS", 0)


def trim_heap() -> None:
    """Give the C heap's free pages back to the system (glibc ``malloc_trim``; elsewhere nothing)."""
    import ctypes

    try:  # not ctypes.util.find_library: it forks (ldconfig), a copy of a process holding GBs
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to trim
        pass


def release_memory() -> None:
    """Collect garbage and give the C heap's free pages back to the system (glibc ``malloc_trim``).

    After a model is freed, glibc keeps most of its pages: its mmap threshold has grown past the
    weights' sizes, so they came from the heap, which is not trimmed on its own (SmolLM2 freed:
    903 MB still resident, 269 MB after the trim). Called between test modules and after a real
    model is let go.
    """
    import gc
    import sys

    # pytest keeps the last failure's traceback (sys.last_traceback, for pdb.pm()): its frames hold
    # the failed test's fixtures, a real model among them, until the next failure
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):
        if hasattr(sys, name):
            setattr(sys, name, None)
    # FastAPI classifies each route's function once, in lru_caches that live as long as the process
    # (fastapi.dependencies.models): the routes of ``create_app(model)`` are closures over the model,
    # so every app a test built kept its model (SmolLM2 from tests/test_pieces.py: 540 MB)
    fastapi_models = sys.modules.get("fastapi.dependencies.models")
    for value in list(vars(fastapi_models).values()) if fastapi_models is not None else []:
        if callable(getattr(value, "cache_clear", None)) and getattr(value, "__module__", "") == fastapi_models.__name__:
            value.cache_clear()
    gc.collect()
    trim_heap()
