"""The terminal layout breaks Chinese prose between characters (rich alone breaks only at spaces,
which left "float64" alone on a line before a whole Chinese sentence, then cut the sentence)."""

import re
import unicodedata

import pytest

from attnscope.explain import explain
from attnscope.explain.render.breaks import NO_LINE_END, NO_LINE_START, break_lines
from attnscope.explain.render.terminal import render_text

TEXTS = [
    "查询是 2:喜欢；每个头的维度 d_k = 32。这里的每个数都用 float64 从模型权重重新计算（词向量和之前的每一层也是），"
    "所以每一位都是公式的结果；最后与模型自己的 float32 结果比较。",
    "除以 √d_k = √32 ≈ 5.6569。原因：若 q 和 k 的各分量均值为 0、方差为 1，q · k 是 d_k 个这样的乘积之和，方差为 d_k。",
    "模型 multilingual-e5-small，第 0 层，第 0 个头；文本共 5 个 token：0:<s> 1:▁我 2:喜欢 3:人工智能 4:</s>。",
    "The query is 4:喜 (the characters 喜欢 at positions 2–4), as in “喜欢”: float64从模型 and 人工智能float64.",
    "一个很长的词 " + "x" * 70 + " 之后还有中文。",
]


def cells(s: str) -> int:  # counted here without rich
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)


def may_break(a: str, b: str) -> bool:
    """Chinese rules, written out: a break between characters a and b is allowed at a space, or
    between two wide characters, or between a wide one and a letter or digit, unless b is closing or
    a is opening punctuation."""
    if a.isspace() or b.isspace():
        return True
    if b in NO_LINE_START or a in NO_LINE_END:
        return False
    wa, wb = cells(a) == 2, cells(b) == 2
    return (wa and wb) or (wa and b.isalnum()) or (wb and a.isalnum())


@pytest.mark.parametrize("width", [20, 33, 48, 80])
@pytest.mark.parametrize("text", TEXTS[:-1])
def test_lines_fit_keep_the_text_and_break_greedily_where_chinese_may(text, width):
    lines = break_lines(text, width)
    assert all(cells(line) <= width for line in lines)
    assert re.sub(r"\s", "", "".join(lines)) == re.sub(r"\s", "", text)  # only spaces at breaks go
    start = 0
    for line in lines[:-1]:
        assert text.startswith(line, start)
        end = start + len(line)
        nxt = end + len(text[end:]) - len(text[end:].lstrip())  # the next line starts after the spaces
        if nxt == end and not may_break(text[end - 1], text[end]):  # only inside a piece wider than a line
            p0 = max(i for i in range(end) if i == 0 or may_break(text[i - 1], text[i]))
            q = next(i for i in range(end, len(text) + 1) if i == len(text) or may_break(text[i - 1], text[i]))
            assert cells(text[p0:q].strip()) > width, (line, text[end:end + 5])
            start = nxt
            continue
        # greedy: up to the next place a break may fall, the next line's start did not fit here
        q = next(i for i in range(nxt + 1, len(text) + 1) if i == len(text) or may_break(text[i - 1], text[i]))
        assert cells(text[start:q].rstrip()) > width, (line, text[nxt:q])
        start = nxt


def test_a_word_longer_than_the_line_is_cut_and_nothing_is_lost():
    lines = break_lines(TEXTS[-1], 20)
    assert all(cells(line) <= 20 for line in lines) and "x" * 20 in lines
    assert re.sub(r"\s", "", "".join(lines)) == re.sub(r"\s", "", TEXTS[-1])


def test_chinese_lesson_lines_are_filled():
    w = explain(example="three-tokens")
    zh = render_text(w, "zh", width=60)
    assert max(cells(line) for line in zh.splitlines()) <= 60
    prose = [line for line in zh.splitlines() if re.search(r"[\u4e00-\u9fff]{6}", line) and "│" not in line]
    # a prose paragraph's lines (all but its last) are within 3 cells of the width; rich alone left
    # lines of a few cells before each Chinese run
    short = [a for a, b in zip(prose, prose[1:]) if cells(a) < 57 and b and zh.index(b) == zh.index(a) + len(a) + 1]
    assert short == [], short
