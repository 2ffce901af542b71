"""docs/guide/architecture.md shows the registered layer recipes side by side: each column is the
recipe's text as attnscope holds it (``sandwich`` and ``post_block`` are derived from ``pre`` by
``recipe.with_post_norms``, so their text is rendered, not written twice); a line cut short with
"…" only has to start the same."""

import re
from pathlib import Path

from attnscope.recipe import LAYER_RECIPES, parse_recipe, with_post_norms

DOC = Path(__file__).resolve().parents[2] / "docs" / "guide" / "architecture.md"


def _columns() -> dict[str, list[str]]:
    text = DOC.read_text(encoding="utf-8")
    block = re.search(r"```text\n(pre \(.*?)```", text, re.S)
    assert block, "architecture.md lost its recipe block"
    head, *rows = block.group(1).splitlines()
    names = ["pre", "sandwich", "post_block"]
    starts = [head.index(n) for n in names] + [None]
    return {n: [r[starts[i]:starts[i + 1]].strip() for r in rows if r[starts[i]:starts[i + 1]].strip()]
            for i, n in enumerate(names)}


def test_the_guide_shows_each_recipe_as_registered():
    for name, lines in _columns().items():
        want = LAYER_RECIPES[name].text.strip().splitlines()
        want = [re.sub(r"\s+", " ", w.strip()) for w in want]
        assert len(lines) == len(want), name
        for got, line in zip(lines, want):
            got = re.sub(r"\s+", " ", got)
            assert line.startswith(got[:-1].rstrip()) if got.endswith("…") else got == line, (name, got, line)


def test_the_derived_recipes_are_pre_with_norms_after_the_blocks():
    pre = LAYER_RECIPES["pre"]
    sandwich = parse_recipe("s", with_post_norms(pre))
    assert sandwich.steps == LAYER_RECIPES["sandwich"].steps
    assert sandwich.norms == ("ln1", "ln_attn_post", "ln2", "ln_ffn_post")
    assert str(sandwich.step("ffn_resid")) == "ffn_resid = attn_resid + ffn_post_norm"
    post_block = LAYER_RECIPES["post_block"]
    assert post_block.norms == ("ln_attn_post", "ln_ffn_post")
    assert [str(post_block.step(s)) for s in ("attn_in", "ffn_in")] == ["attn_in = x", "ffn_in = attn_resid"]
