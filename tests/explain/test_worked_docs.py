"""docs/multi-head.md and docs/positions.md hold what the tool prints now (no stale numbers): they
are written by tools/make_worked_docs.py, which this test runs in memory; and the toy input and
answers files under docs/examples/ are the built-in example and a check report with one slip."""

import importlib.util
from pathlib import Path

import pytest

import attnscope

ROOT = Path(__file__).resolve().parents[2]


def _tool():
    spec = importlib.util.spec_from_file_location("make_worked_docs", ROOT / "tools" / "make_worked_docs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("page", ["docs/multi-head.md", "docs/positions.md"])
def test_page_is_current(page):
    want = _tool().PAGES[page]()
    assert (ROOT / page).read_text(encoding="utf-8") == want, f"{page} is stale: run tools/make_worked_docs.py"


def test_example_files():
    a = attnscope.explain(str(ROOT / "docs" / "examples" / "multi-head.yaml"))
    assert a.render("markdown") == attnscope.explain(example="multi-head").render("markdown")
    r = attnscope.check(str(ROOT / "docs" / "examples" / "multi-head-answers.yaml"))
    assert r.first_wrong == ("weights[1]", "2 (爱)") and [e.written for e in r.by_verdict("wrong")] == ["0.054"]
    assert {e.step for e in r.by_verdict("carried")} == {"output[1]", "concat"}
