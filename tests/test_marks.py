"""The marks' rules (tests/marks.py) and the guard that fails a test the rules missed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from tests.marks import Guard, names_a_model_package

ROOT = Path(__file__).resolve().parents[1]


def test_names_of_model_packages():
    assert names_a_model_package("attnscope explain --model smollm2-135m --text x")
    assert names_a_model_package("attnscope.load('Gemma-3-270M')")
    # the tiny random checkpoints of tests/models/decoders share the bare family names
    assert not names_a_model_package('decoder_dirs["gemma3"], hf_decoders("smollm2")')
    assert not names_a_model_package("attnscope.load()")


def _collected(*args: str) -> set[str]:
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only", *args],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return {ln.strip() for ln in r.stdout.splitlines() if "::" in ln}


def test_the_rules_mark_real_model_and_browser_tests():
    files = ["tests/models/test_decoder_real.py", "tests/explain/test_path.py", "tests/browser/test_cjk_glyphs.py",
             "tests/docs/test_site.py"]
    fast = _collected("-m", "not real_model and not browser", *files)
    real = _collected("-m", "real_model", *files)
    # by parameter (the model's name), by the function's source, and none of the tiny-model tests
    assert "tests/models/test_decoder_real.py::test_smollm2_answers_paris[smollm2-135m]" in real
    assert "tests/explain/test_path.py::test_smollm2_path_equals_its_float64_torch_model" in real
    assert not any(t.startswith("tests/models/test_decoder_real.py") for t in fast)
    assert any(t.startswith("tests/explain/test_path.py") for t in fast)
    # by folder (tests/browser) and by fixture (the site's Chromium), the site's build checks stay
    assert not any(t.startswith("tests/browser/") for t in fast)
    assert "tests/docs/test_site.py::test_strict_build_has_no_warning" in fast
    assert not any("test_chinese_text_is_drawn_with_the_sites_font" in t for t in fast)


class _Outcome:
    def __init__(self, report):
        self.report = report

    def get_result(self):
        return self.report


def _run(guard: Guard, marks: set[str], body) -> SimpleNamespace:
    """One fake test through the guard's hooks: ``body`` runs as the test; the teardown report."""
    item = SimpleNamespace(get_closest_marker=lambda m: m if m in marks else None)
    protocol = guard.pytest_runtest_protocol(item, None)
    next(protocol)
    body()
    report = SimpleNamespace(outcome="passed", longrepr=None)
    hook = guard.pytest_runtest_makereport(item, SimpleNamespace(when="teardown"))
    next(hook)
    try:
        hook.send(_Outcome(report))
    except StopIteration:
        pass
    try:
        next(protocol)
    except StopIteration:
        pass
    return report


def test_the_guard_fails_an_unmarked_test_that_opens_a_package_file(tmp_path):
    package = tmp_path / "llm_model_package"
    package.mkdir()
    (package / "model.gguf").write_bytes(b"GGUF")
    guard = Guard(prefixes=(str(package) + os.sep,))
    read = lambda: (package / "model.gguf").read_bytes()  # noqa: E731
    report = _run(guard, set(), read)
    assert report.outcome == "failed" and "not marked 'real_model'" in report.longrepr
    assert str(package / "model.gguf") in report.longrepr
    assert _run(guard, {"real_model"}, read).outcome == "passed"
    assert _run(guard, set(), lambda: (tmp_path / "other.txt").write_text("x")).outcome == "passed"
    # a command that names a model package (a CLI subprocess) counts too
    cmd = lambda: subprocess.run([sys.executable, "-c", "pass", "--model", "smollm2-135m"], check=True)  # noqa: E731
    report = _run(guard, set(), cmd)
    assert report.outcome == "failed" and "runs" in report.longrepr
    assert guard.item is None  # outside a test the hook does nothing
    read()


def test_the_guarded_folders_are_the_packages_not_their_metadata():
    """importlib.metadata reads every installed *.dist-info (transformers scans entry points): a
    test that does so touches no model."""
    from tests.marks import _package_prefixes

    prefixes = _package_prefixes()
    assert not any(".dist-info" in p or ".egg-info" in p for p in prefixes), prefixes
