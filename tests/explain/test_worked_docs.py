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
    assert r.first_wrong == ("weights[1]", "1 (爱)") and [e.written for e in r.by_verdict("wrong")] == ["0.054"]
    assert {e.step for e in r.by_verdict("carried")} == {"output[1]", "concat"}


def _steady(text: str) -> list:
    """The lines that do not depend on the thread count (the float32 differences do)."""
    return [ln for ln in text.splitlines() if "float32" not in ln and not (ln.startswith("| ") and "e-" in ln)]


@pytest.mark.parametrize("page", ["docs/results/paths/deberta-v3.md", "docs/results/paths/t5-decoder.md"])
def test_path_page_is_current(page, tmp_path):
    """The whole path of DeBERTa-v3 and of a T5 decoder token, on the tests' tiny checkpoints."""
    tool = _tool()
    family, name, _ = tool.PATHS[page]
    folder = tool.tiny_checkpoint(family, tmp_path / name)
    want = tool.path_page(page, folder)
    assert _steady((ROOT / page).read_text(encoding="utf-8")) == _steady(want), \
        f"{page} is stale: run tools/make_worked_docs.py"


def test_guide_shows_the_path_commands_and_an_excerpt():
    """docs/guide/worked-calculations.md: the DeBERTa and T5 commands are the pages' own, and every
    line of its excerpt is a line of one of the two full outputs."""
    import re
    import shlex
    tool = _tool()
    guide = (ROOT / "docs" / "guide" / "worked-calculations.md").read_text(encoding="utf-8")
    commands = [shlex.split(c.replace("\\\n", " ")) for c in re.findall(r"^attnscope explain --model \./(?:deberta|t5).*?"
                                                                         r"--format markdown", guide, re.M | re.S)]
    assert sorted(commands) == sorted(shlex.split(tool.path_command(p)) for p in tool.PATHS)
    excerpt = re.search(r"<!-- excerpt:paths -->\n````markdown\n(.*?)\n````\n<!-- /excerpt:paths -->", guide, re.S)
    assert excerpt, "the excerpt of the path outputs is missing"
    full = [ln for p in tool.PATHS for ln in (ROOT / p).read_text(encoding="utf-8").splitlines()]
    for line in excerpt.group(1).splitlines():
        assert not line.strip() or line in full, line
    for p in tool.PATHS:
        assert f"(../results/paths/{Path(p).name})" in guide
