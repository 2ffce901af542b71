"""Every digit of a toy calculation is the true one (issue #15, items 4 and 5).

References are written here: the linear steps in ``fractions`` from the numbers as written, exp and
the softmax with ``decimal`` at 60 digits, rounded half-up with ``decimal`` — never attnscope's code.
Each number is looked for in the Markdown (English and Chinese) and in the JSON values.
"""

import json
import re
from decimal import ROUND_HALF_UP, Decimal, localcontext
from fractions import Fraction

import pytest

from attnscope.explain import explain

DECIMAL_TOY = {  # K's first row is 0.1·0.2 + 0.2·(−0.1) = 0 exactly (1.6653e-18 in float64)
    "X": [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]],
    "W_Q": [[0.7, -0.35], [0.15, 0.9]],
    "W_K": [[0.2, 0.4], [-0.1, -0.2]],
    "W_V": [[1.5, 0.25], [-0.5, 1.0]],
}
HALF_WAY = {  # scores 0.35·3.5 = 1.225 (float64: 1.2249999999999999) and 0.1·0.35 = 0.035
    "Q": [[0.35], [0.1]], "K": [[3.5], [0.35]], "V": [[0.0049, 2.0], [1.0, 0.0]], "scoring": "unscaled",
}


# ----------------------------------------------------------------------------------------------
# the reference
# ----------------------------------------------------------------------------------------------

def F(x) -> Fraction:
    return Fraction(repr(float(x)))  # the number as written


def mat(a):
    return [[F(x) for x in r] for r in a]


def mul(a, b):
    return [[sum((a[i][m] * b[m][j] for m in range(len(b))), Fraction(0)) for j in range(len(b[0]))]
            for i in range(len(a))]


def D(f) -> Decimal:
    with localcontext() as c:
        c.prec = 60
        return Decimal(f.numerator) / Decimal(f.denominator) if isinstance(f, Fraction) else +f


def reference(spec: dict, factor: Decimal) -> dict:
    """Every step, exact (Fractions) up to the scores, then decimal at 60 digits."""
    if "X" in spec:
        X = mat(spec["X"])
        Q, K, V = (mul(X, mat(spec[w])) for w in ("W_Q", "W_K", "W_V"))
    else:
        Q, K, V = (mat(spec[n]) for n in "QKV")
    S = mul(Q, [list(c) for c in zip(*K)])
    out = {"Q": Q, "K": K, "V": V, "scores": S}
    with localcontext() as c:
        c.prec = 60
        S2 = [[D(s) * factor for s in r] for r in S]
        E = [[x.exp() for x in r] for r in S2]
        sums = [sum(r) for r in E]
        A = [[x / s for x in r] for r, s in zip(E, sums)]
        P = [[[a * D(v) for v in V[j]] for j, a in enumerate(r)] for r in A]  # products w_ij · v_j
        O = [[sum(P[i][j][c] for j in range(len(V))) for c in range(len(V[0]))] for i in range(len(A))]
    out.update(scaled=S2, exp=E, sums=sums, weights=A, products=P, output=O)
    return out


def half_up(x, d: int) -> str:
    s = f"{D(x).quantize(Decimal(1).scaleb(-d), rounding=ROUND_HALF_UP):f}"
    return s[1:] if s.startswith("-") and set(s[1:]) <= set("0.") else s


def table(md: str, sym: str) -> list:
    """The body rows of the Markdown table whose corner is **sym**, as lists of cells (label dropped)."""
    lines = md.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(f"| **{sym}** |"))
    rows = []
    for ln in lines[start + 2:]:
        if not ln.startswith("|"):
            break
        rows.append([c.strip() for c in ln.strip("|").split("|")][1:])
    return rows


def shown(x, d: int) -> str:
    """What a table cell must read: an exact zero is 0, an integer-valued matrix has no decimals."""
    return "0" if x == 0 else half_up(x, d)


# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_exact_zero_is_zero_not_1e_18(lang):
    w = explain(DECIMAL_TOY)
    md = w.render("markdown", lang=lang)
    assert "e-1" not in md and "e-3" not in md  # no 1.6653e-18, no 4.6426e-32 carried on
    assert table(md, "K")[0] == ["0", "0"]
    assert [r[0] for r in table(md, "S")] == ["0", "0", "0"]
    assert "k₀ = [0.1000×0.2000 + 0.2000×(-0.1000), 0.1000×0.4000 + 0.2000×(-0.2000)]\n   = [0, 0]" in md
    values = json.loads(w.render("json", lang=lang))["values"]
    assert values["K"][0] == [0.0, 0.0] and [r[0] for r in values["scores"]] == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("decimals", [2, 4, 7, 10])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_shown_digit_is_the_true_one(decimals, lang):
    import math
    ref = reference(DECIMAL_TOY, Decimal(1) / Decimal(2).sqrt())
    w = explain(DECIMAL_TOY)
    md = w.render("markdown", lang=lang, decimals=decimals)
    for sym, name in (("Q", "Q"), ("K", "K"), ("V", "V"), ("S", "scores"), ("S'", "scaled"), ("E", "exp"),
                      ("A", "weights"), ("O", "output")):
        assert table(md, sym) == [[shown(x, decimals) for x in r] for r in ref[name]], (sym, decimals)
    # the products of the weighted sum, written out
    for i in range(3):
        prods = " + ".join("[" + ", ".join(shown(x, decimals) for x in ref["products"][i][j]) + "]" for j in range(3))
        assert f"   = {prods}\n" in md, (i, decimals)
    values = json.loads(w.render("json", lang=lang, decimals=decimals))["values"]
    for name in ("Q", "K", "V", "scores", "scaled", "exp", "weights", "output"):
        assert values[name] == [[float(D(x)) for x in r] for r in ref[name]], name  # the nearest double
    assert math.isclose(sum(values["weights"][0]), 1.0, rel_tol=1e-15)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_half_way_values_round_half_up(lang):
    ref = reference(HALF_WAY, Decimal(1))
    assert ref["scores"][0][0] == Fraction("1.225") and ref["scores"][1][1] == Fraction("0.035")
    w = explain(HALF_WAY)
    md = w.render("markdown", lang=lang, decimals=2)
    assert table(md, "S")[0][0] == "1.23" and table(md, "S")[1][1] == "0.04"  # float64 gave 1.22, 0.03
    assert table(md, "S") == [[half_up(x, 2) for x in r] for r in ref["scores"]]
    assert "s₀ = [0.35×3.50, 0.35×0.35]\n   = [1.23, 0.12]" in md
    md4 = w.render("markdown", lang=lang, decimals=3)
    assert table(md4, "V")[0] == ["0.005", "2.000"]  # 0.0049 → 0.005 (the input V, half-up at 3 places)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_fully_masked_row_sees_no_key(lang):
    spec = dict(DECIMAL_TOY, mask=[[1, 1, 1], [0, 0, 0], [1, 0, 1]], tokens=["上", "下", "左"])
    w = explain(spec)
    md = w.render("markdown", lang=lang)
    assert "takes ." not in md and "的注意力：。" not in md
    if lang == "en":
        assert "下 sees no key (every key is masked): it takes nothing" in md
        assert "*each row sums to 1, except row 1, which sees no key (all 0)*" in md
        assert "*each row sums to 1*" not in md
        assert "Row 1 (下): the sum is 0, nothing to divide; every weight is 0." in md
    else:
        assert "下 看不到任何键" in md and "*每行之和为 1，第 1 行除外" in md and "*每行之和为 1*" not in md
    assert table(md, "A")[1] == ["0", "0", "0"] and table(md, "O")[1] == ["0", "0"]
    values = json.loads(w.render("json", lang=lang))["values"]
    assert values["weights"][1] == [0.0, 0.0, 0.0] and values["output"][1] == [0.0, 0.0]


@pytest.mark.parametrize("scoring, formula", [
    ("scaled", "Attention(Q, K, V) = softmax(Q·Kᵀ / √d_k) · V"),
    ("unscaled", "Attention(Q, K, V) = softmax(Q·Kᵀ) · V"),
    ("inv_d", "Attention(Q, K, V) = softmax(Q·Kᵀ / d_k) · V"),
    ("cosine", "Attention(Q, K, V) = softmax(cos(Q, Kᵀ) / τ) · V"),
    ("qknorm", "Attention(Q, K, V) = softmax(LN(Q)·LN(K)ᵀ / √d_k) · V"),
])
def test_the_formula_is_the_scorings_own(scoring, formula):
    w = explain(dict(DECIMAL_TOY, scoring=scoring))
    for lang in ("en", "zh"):
        assert f"`{formula}`" in w.render("markdown", lang=lang)
        intro = json.loads(w.render("json", lang=lang))["intro"]
        assert [b["text"] for b in intro if b["type"] == "formula"] == [formula]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_before_and_after_compare_vectors_of_one_space(lang):
    # three tokens: X is 2 wide, V and O 2 wide, but x and o are not the same space: v₀ and o₀ are
    md = explain(example="three-tokens").render("markdown", lang=lang)
    assert "[1, 0] and comes out as" not in md and "原来是 [1, 0]，输出是" not in md
    assert "v₀ = [2, 0]" in md and "o₀ = [1.6044, 0.5989]" in md
    # with W_O mapping back to X's width the sentence compares x and y (= o·W_O, exact: 0.5989·… here)
    spec = {**DECIMAL_TOY, "W_O": [[1, 0], [0, 2]]}
    ref = reference(DECIMAL_TOY, Decimal(1) / Decimal(2).sqrt())
    y = [ref["output"][0][0], 2 * ref["output"][0][1]]
    md = explain(spec).render("markdown", lang=lang)
    want = f"[{half_up(y[0], 4)}, {half_up(y[1], 4)}]"
    assert (f"started as [0.1, 0.2] and, after W_O (which maps back to the width of X), comes out as {want}" in md
            if lang == "en" else f"原来是 [0.1, 0.2]，经过 W_O（映射回 X 的宽度）后输出是 {want}" in md)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_scaling_lesson_quotes_the_articles_digits(lang):
    with localcontext() as c:
        c.prec = 60
        e = [(Decimal(s) / 8).exp() for s in ("15.3", "22.7", "18.2", "2.1", "1.8")]
        p = [x / sum(e) for x in e]
    assert half_up(p[2], 3) == "0.269"
    md = explain(lesson="scaling", d_k=64, samples=200).render("markdown", lang=lang)
    assert "[0.187, 0.473, 0.270, 0.036, 0.035]" in md  # as printed, not a rounded 0.27
    computed = "[" + ", ".join(half_up(x, 3) for x in p) + "]"
    if lang == "en":
        assert f"At the article's own precision the computed numbers are {computed}: entry 2 is 0.269, not 0.270." in md
    else:
        assert f"按原文自己的精度，计算结果是 {computed}：第 2 项是 0.269，不是 0.270。" in md
    assert re.search(r"\| 2 \| 18\.2 \| [0-9.]+ \| 2\.2750 \| " + re.escape(half_up(p[2], 4)) + r" \|", md)


@pytest.mark.parametrize("lang, plain, qualified", [("en", "*each row sums to 1*", "*each row sums to 1 before rounding*"),
                                                    ("zh", "*每行之和为 1*", "*舍入前每行之和为 1*")])
def test_the_weights_caption_does_not_say_the_shown_rows_sum_to_1(lang, plain, qualified):
    """The three tokens' row 2 shows 0.3177, 0.0381, 0.6443 (1.0001) under "each row sums to 1"."""
    from .reference import THREE, attention_by_hand, half_up
    rows = attention_by_hand(**THREE)["weights"]
    assert any(sum(Decimal(half_up(x, 4)) for x in r) != 1 for r in rows)  # a shown row misses 1
    md = explain(**THREE).render("markdown", lang=lang)
    assert plain not in md and qualified in md
