"""Finished runs kept on disk as they finish, so that an interrupted experiment resumes.

A long grid (``attnscope experiment training`` trains dozens of models) must not lose its
finished runs to Ctrl-C, a ``kill`` or a batch system's SIGTERM. :class:`RunStore` writes each
run's result to its own JSON file the moment it is done (atomically: a temporary file, then a
rename), named by a hash of everything that determines the run (its spec: task, variant, d_k,
seed, every setting). Running the same grid again finds those files and trains only what is
missing; a different option changes the hash, so a stale file is never reused. The experiment
removes the folder once its full result is written.

:func:`sigterm_as_interrupt` makes SIGTERM raise KeyboardInterrupt in the main thread, as SIGINT
does, so that one ``except KeyboardInterrupt`` path stops the worker processes in order (no
leaked semaphores) and keeps what has finished.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional, Union


class Interrupted(KeyboardInterrupt):
    """KeyboardInterrupt raised by SIGTERM (``signum`` tells the CLI which exit status to use)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Interrupted` (a KeyboardInterrupt) in the main
    thread; outside the main thread (where handlers cannot be set) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise Interrupted(signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def ignore_interrupts() -> None:
    """Worker-process initializer: Ctrl-C reaches the whole process group, but only the parent
    should act on it (it terminates the workers), so the workers ignore SIGINT."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def spec_key(spec: dict) -> str:
    """A short hash of everything that determines a run (the same spec gives the same key)."""
    text = json.dumps(spec, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class RunStore:
    """One JSON file per finished run in ``folder`` (created on the first save)."""

    def __init__(self, folder: Union[str, Path]) -> None:
        self.folder = Path(folder)

    def path(self, spec: dict, label: str = "run") -> Path:
        safe = "".join(c if c.isalnum() or c in "-_=." else "_" for c in label)
        return self.folder / f"{safe}-{spec_key(spec)}.json"

    def load(self, spec: dict, label: str = "run") -> Optional[dict]:
        """The stored result of ``spec``, or None (missing, or unreadable: it is trained again)."""
        p = self.path(spec, label)
        try:
            saved = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(saved, dict) or saved.get("key") != spec_key(spec):
            return None
        return saved.get("result")

    def save(self, spec: dict, result: dict, label: str = "run") -> Path:
        """Write ``result`` for ``spec`` atomically (NaN/inf kept: Python's json reads them back)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        p = self.path(spec, label)
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_text(json.dumps({"key": spec_key(spec), "result": result}), encoding="utf-8")
        os.replace(tmp, p)
        return p

    def count(self) -> int:
        return len(list(self.folder.glob("*.json"))) if self.folder.is_dir() else 0

    def clear(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
