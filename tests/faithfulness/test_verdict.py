"""The verdict's chance lines on constructed numbers: a method whose interval lies wholly below 0 is
named worse than chance, apart from one whose interval reaches 0, by ρ and by comprehensiveness
against the random ranking, in English and Chinese, whatever order the methods come in."""

from __future__ import annotations

import itertools

import pytest

from attnscope.faithfulness.evaluate import TextResult
from attnscope.faithfulness.report import verdict_lines
from attnscope.faithfulness.run import summarise
from attnscope.faithfulness.verdict import verdict

N = 20
FULL = 10.0
# per method: ρ of text t, and the target left when its top tokens are removed (comprehensiveness = FULL − it)
RHO = {"up": lambda t: 0.6 + 0.01 * (t % 3), "zero": lambda t: 0.3 if t % 2 else -0.3,
       "down": lambda t: -0.6 - 0.01 * (t % 3), "random": lambda t: 0.0, "leave_one_out": lambda t: 1.0}
LEFT = {"up": lambda t: 2.0, "zero": lambda t: 6.0 if t % 2 else 8.0, "down": lambda t: 9.5,
        "random": lambda t: 7.0, "leave_one_out": lambda t: 1.0}


def results() -> list[TextResult]:
    out = []
    for t in range(N):
        r = TextResult(t, f"text {t}", 12, 10, FULL)
        for m, left in LEFT.items():
            r.rho[m] = RHO[m](t)
            r.deleted[m] = [left(t)] * 5
            r.kept[m] = [FULL - 1.0] * 5
        out.append(r)
    return out


@pytest.mark.parametrize("methods", list(itertools.permutations(["up", "zero", "down"])), ids="-".join)
def test_worse_than_chance_is_said_apart(methods):
    rs = results()
    names = list(methods) + ["leave_one_out", "random"]
    summary = summarise(rs, names, 0)
    # the constructed intervals: ρ of up above 0, zero's around 0 (±0.3), down's below; comprehensiveness
    # against random's 3: up 8 (above), zero 4 or 2 (reaches), down 0.5 (below)
    assert summary["down"]["rho"]["high"] < 0 < summary["up"]["rho"]["low"]
    assert summary["zero"]["rho"]["low"] < 0 < summary["zero"]["rho"]["high"]
    v = verdict(rs, summary, 0)
    assert v["chance_rho"] == ["zero"] and v["below_chance_rho"] == ["down"]
    assert v["not_above_random"] == ["zero"] and v["below_random"] == ["down"]
    res = {"verdict": v, "summary": summary, "texts": N}
    en = "\n".join(verdict_lines(res, "en"))
    assert "- No better than chance by ρ (the interval reaches 0): `zero`.\n" in en
    assert "- Worse than chance by ρ (the interval lies wholly below 0" in en and "order): `down`.\n" in en
    assert "- Comprehensiveness not above the random ranking's (the paired interval reaches 0): `zero`.\n" in en
    assert "- Comprehensiveness below the random ranking's (the paired interval lies wholly below 0" in en
    assert "random ones): `down`.\n" in en
    zh = "\n".join(verdict_lines(res, "zh"))
    assert "按 ρ 看不比随机好（区间触及 0）：`zero`。" in zh and "按 ρ 看比随机还差（区间整体在 0 以下" in zh
    assert "相反）：`down`。" in zh and "全面性低于随机排序（配对区间整体在 0 以下" in zh


def test_none_at_or_below_chance_says_so():
    rs = results()
    summary = summarise(rs, ["up", "leave_one_out", "random"], 0)
    v = verdict(rs, summary, 0)
    assert v["chance_rho"] == v["below_chance_rho"] == v["not_above_random"] == v["below_random"] == []
    en = verdict_lines({"verdict": v, "summary": summary, "texts": N}, "en")
    assert "- Every method's ρ interval lies above 0." in en
    assert "- Every method's comprehensiveness is above the random ranking's (paired intervals above 0)." in en
    assert not any("chance by ρ" in line for line in en)


def test_one_text_gives_no_interval_and_no_lead():
    """A run on one text (--texts 1, or --limit METHOD=1) printed '95 % interval [0.219, 0.219]',
    called the first method ahead of the second by it and said every ρ interval lies above 0: a
    bootstrap of one value is that value every time. One text now has no interval (nan, '—'), and
    its methods are said to be unjudged, not above, at or below chance."""
    rs = results()[:1]
    summary = summarise(rs, ["up", "zero"], 0)
    assert summary["up"]["rho"]["n"] == 1 and summary["up"]["rho"]["mean"] == pytest.approx(0.6)
    assert all(summary[m]["rho"][b] != summary[m]["rho"][b] for m in ("up", "zero") for b in ("low", "high"))
    v = verdict(rs, summary, 0)
    assert not v["rho"]["ahead"] and v["rho"]["lead"]["n"] == 1
    res = {"verdict": v, "summary": summary, "texts": 1}
    en = "\n".join(verdict_lines(res, "en"))
    assert "`up` is not shown to be ahead of `zero`: their difference 0.900 comes from 1 text only" in en, en
    assert "lies above 0" not in en and "is ahead of" not in en, en
    zh = "\n".join(verdict_lines(res, "zh"))
    assert "不能说 `up` 领先 `zero`：二者之差 0.900 只来自 1 段文本" in zh and "都在 0 以上" not in zh, zh
    # nor at chance: 'no better than chance (the interval reaches 0)' named an interval there is not
    assert v["chance_rho"] == [] and v["one_text_rho"] == ["up", "zero"]
    assert "- Measured on one text only, so with no interval and not judged against chance: `up`, `zero`." in en
    assert "better than chance" not in en and "不比随机好" not in zh and "只在 1 段文本上测得" in zh, zh
