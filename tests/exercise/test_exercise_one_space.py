"""The exercise's answer 3 sets the new vector o beside the token's own value v (one space, d_v wide),
not beside its input x as "it started as" (issue #15 item 5). V by fractions, written here."""

import re
from fractions import Fraction

import pytest

from attnscope.exercise import make_exercise


@pytest.mark.parametrize("lang, pattern", [
    ("en", r"So the new vector \[[^\]]*\] \(its own value was (\[[^\]]*\]), its input \[[^\]]*\]\)"),
    ("zh", r"所以新向量 \[[^\]]*\]（它自己的值是 (\[[^\]]*\])，输入是 \[[^\]]*\]）"),
])
def test_answer_3_compares_o_with_the_tokens_own_value(lang, pattern):
    ex = make_exercise(tokens=3, dim=2, seed=7, lang=lang)
    md = ex.solution().render("markdown", lang=lang)
    assert "it started as" not in md and "（原来是" not in md
    p = ex.problem_input
    V = [[sum(Fraction(repr(float(p.X[i, m]))) * Fraction(repr(float(p.W_V[m, j]))) for m in range(2))
          for j in range(2)] for i in range(3)]
    rows = ["[" + ", ".join(str(int(x)) if x.denominator == 1 else f"{float(x):.4f}" for x in r) + "]" for r in V]
    m = re.search(pattern, md)
    assert m and m.group(1) in rows, (m and m.group(1), rows)
