"""The outputs shown in docs/guide/worked-calculations.md (once the README's) are what the tool
prints now (no stale numbers in the docs).

When a label changes, paste the new output between the markers of that page:
``attnscope explain --example three-tokens --format markdown [--lang zh]`` and
``attnscope check --example three-tokens-article --format markdown``.
"""

import re
from pathlib import Path

import pytest

from attnscope.check import check
from attnscope.explain import explain

README = Path(__file__).resolve().parents[2] / "docs" / "guide" / "worked-calculations.md"


def _block(name: str) -> str:
    text = README.read_text(encoding="utf-8")
    m = re.search(rf"<!-- explain:{name} -->\n````markdown\n(.*?)\n````\n<!-- /explain:{name} -->", text, re.S)
    assert m, f"block {name} missing in {README.name}"
    return m.group(1)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_three_token_markdown_in_readme_is_current(lang):
    assert _block(f"three-tokens-{lang}") == explain(example="three-tokens").render("markdown", lang=lang).rstrip()


def test_check_report_in_readme_is_current():
    assert _block("check-article") == check(example="three-tokens-article").render("markdown").rstrip()
