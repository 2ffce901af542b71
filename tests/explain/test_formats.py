"""The three-token example in every format and both languages prints the correct numbers."""

import json
import math
import re

import numpy as np
import pytest

from attnscope.explain import explain, i18n

from .reference import THREE, attention_by_hand, half_up

REF = attention_by_hand(**THREE)


@pytest.fixture(scope="module")
def worked():
    return explain(example="three-tokens")


def _expected_numbers(d):
    """Rounded weights and outputs, written out independently."""
    return [half_up(x, d) for r in REF["weights"] + REF["output"] for x in r]


@pytest.mark.parametrize("fmt", ["rich", "markdown", "latex"])
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("decimals", [2, 4])
def test_every_weight_and_output_is_printed_correctly(worked, fmt, lang, decimals):
    text = worked.render(fmt, lang=lang, decimals=decimals)
    numbers = set(re.findall(r"-?\d+\.\d+", text))
    for want in _expected_numbers(decimals):
        assert want in numbers, (fmt, lang, decimals, want)
    # the article's wrong softmax rows never appear
    assert "0.289" not in text and "0.636" not in text


def test_weights_and_outputs_rows_as_written_lines(worked):
    md = worked.render("markdown")
    assert "a₁ = [8.3421, 2.0281, 16.9188] / 27.2891" in md
    assert "   = [0.3057, 0.0743, 0.6200]" in md
    assert "o₂ = 0.3177×[2, 0] + 0.0381×[0, 1] + 0.6443×[2, 1]" in md
    assert "   = [1.9238, 0.6823]" in md
    assert "s'₁ = [3, 1, 4] / √2" in md and "q₂ = [1×1 + 1×1, 1×0 + 1×1]" in md
    assert "| 爱 | 0.3057 | 0.0743 | 0.6200 |" in md


def test_chinese_output_has_no_english_labels(worked):
    zh = worked.render("markdown", lang="zh")
    en_only = [v for k, v in i18n.EN.items() if i18n.ZH[k] != v]
    for label in en_only:
        fixed = re.split(r"\{[A-Za-z_]+\}|\$", label)[0].strip()
        if len(fixed) > 8:
            assert fixed not in zh, fixed
    assert "## 第 8 步：softmax 权重 A = E / Σ" in zh and "Step" not in zh


def test_json_holds_unrounded_values_and_translated_text(worked):
    d = json.loads(worked.render("json", lang="zh", decimals=2))
    assert d["kind"] == "toy" and d["lang"] == "zh" and d["meta"]["tokens"] == ["我", "爱", "你"]
    for name in ("scaled", "weights", "output", "exp"):
        np.testing.assert_allclose(np.array(d["values"][name]), np.array(REF[name]), rtol=1e-15, atol=1e-15)
    assert d["steps"][7]["title"] == "softmax 权重 A = E / Σ"
    blocks = [b for s in d["steps"] for b in s["blocks"]]
    ws = next(b for b in blocks if b["type"] == "weighted_sum" and b["lhs"] == "o₁")
    np.testing.assert_allclose(ws["value"], REF["output"][1], rtol=1e-15)


def test_latex_is_a_balanced_document(worked):
    for lang in ("en", "zh"):
        tex = worked.render("latex", lang=lang)
        assert tex.startswith("% ") and r"\begin{document}" in tex and tex.rstrip().endswith(r"\end{document}")
        assert r"\usepackage{xeCJK}" in tex                       # the tokens are Chinese characters
        for env in ("align*", "array", "document"):
            assert tex.count(rf"\begin{{{env}}}") == tex.count(rf"\end{{{env}}}") > 0
        body = re.sub(r"\\[{}$%&#_]", "", tex)
        assert body.count("{") == body.count("}")
        for line in body.splitlines():
            if not line.startswith("%"):
                assert line.count("$") % 2 == 0, line
        assert r"\frac{S}{\sqrt{d_k}}" in tex and r"a_{1} &= [8.3421,\ 2.0281,\ 16.9188] \,/\, 27.2891" in tex


def test_rich_layout_tables(worked):
    txt = worked.render("rich", decimals=3)
    assert re.search(r"爱\s+0\.306\s+0\.074\s+0\.620", txt)
    assert "Step 9: output O = A V" in txt


def test_bad_render_options():
    from attnscope import ConfigError
    w = explain(example="three-tokens")
    for kw in ({"format": "html"}, {"lang": "fr"}, {"decimals": -1}, {"decimals": 13}):
        with pytest.raises(ConfigError):
            w.render(**{"format": "markdown", **kw})



def _sums(md: str):
    """Each scalar sum 'lhs = t₁ + t₂ + …' / '= v' of a text output, with the note under its group:
    (lhs, terms, value, note)."""
    lines = md.splitlines()
    for k, (a, b) in enumerate(zip(lines, lines[1:])):
        m, n = re.match(r"^(\S+) = ([-0-9.e+ ]+)$", a.strip()), re.match(r"^= ([-0-9.e]+)$", b.strip())
        if m and n and "+" in m.group(2):
            end = lines.index("```", k)
            note = lines[end + 2] if lines[end + 2].startswith("> Each number is the exact value") else ""
            yield m.group(1), m.group(2).split(" + "), n.group(1), note


@pytest.mark.parametrize("kwargs", [{"example": "three-tokens"}, {"example": "multi-head"},
                                    {"scores": [15.3, 22.7, 18.2, 2.1, 1.8, 3.2, 2.9, 5.6, 4.1], "d_k": 64}])
def test_a_sum_whose_shown_terms_do_not_give_it_is_named(kwargs):
    """Σ₂ = 16.9188 + 2.0281 + 34.3133 = 53.2603 was printed as it stands, where the terms add up to
    53.2602: each number is the exact one rounded on its own. A note under the lines now names
    each such line; a line whose shown terms do add up is not named."""
    from decimal import Decimal

    import attnscope
    md = attnscope.explain(**kwargs).render("markdown")
    sums = list(_sums(md))
    assert sums
    for lhs, terms, value, note in sums:
        adds_up = sum(Decimal(t) for t in terms) == Decimal(value)
        named = re.search(rf"for (\S+, )*{re.escape(lhs)}[, ]", note) is not None
        assert named != adds_up, (lhs, terms, value, note)
    if kwargs.get("example") == "three-tokens":
        e = [math.exp(s / math.sqrt(2)) for s in (4, 1, 5)]  # row 2's exponentials, by hand
        shown = [f"{x:.4f}" for x in e]
        assert sum(Decimal(s) for s in shown) != Decimal(f"{sum(e):.4f}")  # the case above
        assert "Σ₂ = " + " + ".join(shown) + "\n   = " + f"{sum(e):.4f}" in md


@pytest.mark.parametrize("width", [40, 60, 80, 120])
def test_a_matrix_wider_than_the_terminal_is_split_never_cut(width):
    """At 80 columns rich cut a 12-wide matrix's cells to "-0.03…"; now its columns come in blocks
    that fit, each led by the row labels, and every entry is printed whole."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3, 12)).round(4)
    W = rng.normal(size=(12, 12)).round(4)
    text = explain(X=X, W_Q=W, W_K=W, W_V=W).render("rich", width=width)
    assert "…" not in text
    assert all(len(line) <= width for line in text.splitlines() if "│" not in line and "─" in line)
    printed = re.findall(r"-?\d+(?:\.\d+)?", text)
    for x in X.ravel():  # every input entry, shown as given, is there whole
        assert repr(float(x)).removesuffix(".0") in printed, x
    blocks = [ln for ln in text.splitlines() if re.match(r"^X\s+\d", ln)]  # the header line of each block of X
    assert sorted(int(c) for ln in blocks for c in ln.split()[1:]) == list(range(12))
    assert len(blocks) > 1 or width >= 120
