"""The numbers the tutorial's prose states (docs/tutorial and docs/zh/tutorial: index.md's table of
the articles' slips, scaling.md, softmax.md, weighted-sum.md), recomputed here with mpmath at 50
digits from the articles' inputs, never from attnscope: the commands' outputs on those pages are
compared with the tool by tests/docs/test_code_blocks.py, the sentences around them only here."""

from decimal import ROUND_HALF_UP, Decimal

import mpmath as mp
import pytest

from tests.docs.blocks import ROOT

mp.mp.dps = 50
LANGS = {"en": ROOT / "docs" / "tutorial", "zh": ROOT / "docs" / "zh" / "tutorial"}


def softmax(xs):
    e = [mp.e ** mp.mpf(x) for x in xs]
    return [x / sum(e) for x in e]


def fixed(x, d: int) -> str:
    return f"{Decimal(mp.nstr(x, 40, strip_zeros=False)).quantize(Decimal(1).scaleb(-d), rounding=ROUND_HALF_UP):f}"


def vec(xs, d: int, minus: str = "-") -> str:
    return "[" + ", ".join(fixed(x, d).replace("-", minus) for x in xs) + "]"


def page(lang: str, name: str) -> str:
    return " ".join((LANGS[lang] / name).read_text(encoding="utf-8").split())


def jacobian_norm(p) -> mp.mpf:
    return mp.sqrt(sum(((p[i] if i == j else 0) - p[i] * p[j]) ** 2 for i in range(len(p)) for j in range(len(p))))


@pytest.mark.parametrize("lang", LANGS)
def test_the_scaling_rows(lang):
    raw = [20, -10, 5]
    p, q = softmax(raw), softmax([mp.mpf(x) / 8 for x in raw])
    index, scaling = page(lang, "index.md"), page(lang, "scaling.md")
    # unscaled: [1.0000, 9.4e-14, 3.1e-7]
    assert f"[{fixed(p[0], 4)}, {mp.nstr(p[1], 2)}, {mp.nstr(p[2], 2)}]".replace("e-0", "e-") in index
    assert vec(q, 2) in index and vec(q, 2) in scaling                      # [0.85, 0.02, 0.13]
    grad = [q[0] - 1, q[1], q[2]]                                           # p − y, the answer at 0
    assert vec(grad, 2, "−") in index and vec(grad, 2) in scaling           # [−0.15, 0.02, 0.13]
    ratio = jacobian_norm(q) / jacobian_norm(p)
    n = int(mp.nint(ratio))
    assert (f"{n:,}" if lang == "en" else str(n)) in scaling                # 382,085
    assert f"{mp.nstr(p[2], 3)}".replace("e-0", "e-") in scaling            # 3.06e-7
    assert f"√8 ≈ {fixed(mp.sqrt(8), 1)}" in index and f"√8 ≈ {fixed(mp.sqrt(8), 1)}" in scaling


@pytest.mark.parametrize("lang", LANGS)
def test_the_rows_of_xi(lang):
    five = [15.3, 22.7, 18.2, 2.1, 1.8]
    unscaled, scaled = softmax([mp.mpf(str(x)) for x in five]), softmax([mp.mpf(str(x)) / 8 for x in five])
    index, softmax_page = page(lang, "index.md"), page(lang, "softmax.md")
    assert vec(unscaled[:3], 3) in index.replace(", …]", "]")               # [0.001, 0.988, 0.011]
    assert vec(scaled[:3], 3) in index.replace(", …]", "]")                 # [0.187, 0.473, 0.269]
    assert fixed(scaled[2], 4) in softmax_page                              # 0.2693
    nine = [15.3, 22.7, 18.2, 2.1, 1.8, 3.2, 2.9, 5.6, 4.1]
    total = sum(mp.e ** (mp.mpf(str(x)) / 8) for x in nine)
    assert fixed(total, 3) in index and fixed(total, 3) in softmax_page     # 42.735
    assert fixed(total, 2) in softmax_page                                  # 42.74
    assert fixed(mp.e ** 8, 1) in softmax_page                              # e⁸ = 2981.0


@pytest.mark.parametrize("lang", LANGS)
def test_the_three_tokens_and_the_module(lang):
    s = [[3, 1, 4], [4, 1, 5]]                                              # rows 1 and 2 of Q Kᵀ
    rows = [softmax([mp.mpf(x) / mp.sqrt(2) for x in r]) for r in s]
    index = page(lang, "index.md")
    assert f"{vec(rows[0], 3)}" in index and f"{vec(rows[1], 3)}" in index  # [0.306, …], [0.318, …]
    assert f"√768 ≈ {fixed(mp.sqrt(768), 1)}" in page(lang, "weighted-sum.md")  # 27.7
