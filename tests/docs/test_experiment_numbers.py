"""Every experiment number on the √d_k tutorial pages (English and Chinese) and in the experiments
guide comes from a command the page names, and is recomputed here (issue #23 item 3).

* Sampled figures (the saturation run: 20 000 random rows per d_k) are printed either as
  ``mean ± se`` (one standard error, one significant digit, the mean to the same decimal place) or
  with only the digits their noise allows: a plain figure must be what mean − 2·se and mean + 2·se
  both round to. :func:`sampled` checks either form.
* The saturation run is re-run here with the page's settings (``attnscope experiment saturation``,
  seed 0: eight seconds) and must be the stored ``docs/results/saturation.csv``; the pages are
  compared with it.
* The training claims are compared with the default run's report, ``docs/experiments-training.md``
  (``attnscope experiment training --jobs 2``: 13 minutes or more, so read, not re-run), and the
  variance report's sentence with the ``--quick`` run the page shows (seconds).
"""

from __future__ import annotations

import csv
import json
import re
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
PAGES = {"en": ROOT / "docs" / "tutorial" / "scaling.md", "zh": ROOT / "docs" / "zh" / "tutorial" / "scaling.md"}
INDEX = {"en": ROOT / "docs" / "tutorial" / "index.md", "zh": ROOT / "docs" / "zh" / "tutorial" / "index.md"}
GUIDE = ROOT / "docs" / "guide" / "experiments.md"


def text(path: Path) -> str:
    return re.sub(r"\s+", " ", path.read_text(encoding="utf-8"))


def rounded(x: float, places: int) -> str:
    return f"{Decimal(repr(float(x))).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP):f}"


def one_digit(se: float) -> tuple[str, int]:
    """``se`` to one significant digit, and its decimal places (0.00154 → ("0.002", 3))."""
    d = Decimal(repr(float(se)))
    places = -d.adjusted()
    s = rounded(se, places)
    if Decimal(s).adjusted() > d.adjusted():  # 0.00096 → 0.001: one place fewer
        places -= 1
        s = rounded(se, places)
    return s, places


def sampled(shown: str, mean: float, se: float, scale: float = 1.0) -> None:
    """``shown`` ("0.684 ± 0.002" or "0.95") is right for a sampled mean with standard error ``se``
    (both multiplied by ``scale``, 100 for a percentage)."""
    mean, se = mean * scale, se * scale
    if "±" in shown:
        m, e = (x.strip() for x in shown.split("±"))
        want_e, places = one_digit(se)
        assert e == want_e, f"{shown!r}: the standard error is {se:.3g}, printed to one digit {want_e}"
        assert m == rounded(mean, places), f"{shown!r}: the mean is {mean!r}, to {places} places {rounded(mean, places)}"
        return
    places = len(shown.split(".")[1]) if "." in shown else 0
    assert shown == rounded(mean, places), f"{shown!r}: the mean is {mean!r}"
    lo, hi = rounded(mean - 2 * se, places), rounded(mean + 2 * se, places)
    assert lo == hi == shown, (f"{shown!r} carries a digit the noise does not allow: mean {mean:.5g} ± {se:.2g} "
                               f"(±2 se rounds to {lo} … {hi}); print it with its ± or fewer digits")


def test_sampled_accepts_only_the_digits_the_noise_allows():
    """The rule itself, on the issue's three figures: the old pages' two-digit forms fail it."""
    with pytest.raises(AssertionError, match="noise does not allow"):
        sampled("0.68", 0.683514, 0.00153834)  # max weight, d_k = 16: 0.680 … 0.687
    with pytest.raises(AssertionError, match="noise does not allow"):
        sampled("0.91", 0.90695, 0.0037627)  # entropy, d_k = 16
    with pytest.raises(AssertionError, match="noise does not allow"):
        sampled("69", 0.68575, 0.00328259, scale=100)  # % of rows above 0.99, d_k = 512
    with pytest.raises(AssertionError, match="the mean is"):
        sampled("0.963 ± 0.0007", 0.961367, 0.000715678)  # the tutorial's old 0.963
    sampled("0.95", 0.94714, 0.000818974)  # 0.9455 … 0.9488: two digits are safe
    sampled("0.684 ± 0.002", 0.683514, 0.00153834)
    sampled("68.6 ± 0.3", 0.68575, 0.00328259, scale=100)


# --- the saturation run --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def saturation() -> dict:
    """``attnscope experiment saturation`` (seed 0, 20 000 rows per d_k) run now, checked to be
    the stored run, by (d_k, mode)."""
    from attnscope import experiments

    rows = experiments.run("saturation", seed=0, progress=False).data["rows"]
    with open(RESULTS / "saturation.csv", encoding="utf-8") as f:
        stored = list(csv.DictReader(f))
    assert len(stored) == len(rows)
    for new, old in zip(rows, stored):
        assert (new["d_k"], new["mode"]) == (int(old["d_k"]), old["mode"])
        for key in ("max_weight", "max_weight_se", "entropy", "entropy_se", "jacobian", "jacobian_se",
                    "saturated_frac", "saturated_frac_se"):
            assert new[key] == pytest.approx(float(old[key]), rel=1e-5), (new["d_k"], new["mode"], key)
    return {(r["d_k"], r["mode"]): r for r in rows}


def _stat(sat: dict, d_k: int, mode: str, key: str) -> tuple[float, float]:
    r = sat[(d_k, mode)]
    return r[key], r[key + "_se"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_tutorial_saturation_figure(saturation, lang):
    page = text(PAGES[lang])
    assert "0.963" not in page
    assert "20 000 rows of 16 scores per d_k, seed 0" in page or "每个 d_k 取 20000 行、每行 16 个分数，随机种子 0" in page
    assert "docs/results/saturation.csv" in page
    found = re.findall(r"(\d+\.\d+ ± \d+\.\d+)", page.split("experiment saturation")[-1])
    assert len(found) == 2, found
    sampled(found[0], *_stat(saturation, 1024, "unscaled", "max_weight"))
    sampled(found[1], *_stat(saturation, 1024, "scaled", "max_weight"))


def test_guide_saturation_figures(saturation):
    page = text(GUIDE)
    para = page.split("**Saturation**")[1].split("**Training.**")[0]
    assert "20 000 rows per d_k; ± is one standard error over the rows" in para
    m = re.search(r"largest weight (.+?) / (.+?) / (.+?) at d_k = 16 / 64 / 512", para)
    for shown, d in zip(m.groups(), (16, 64, 512)):
        sampled(shown, *_stat(saturation, d, "unscaled", "max_weight"))
    m = re.search(r"\(scaled: between (.+?) and (.+?) at every d_k\)", para)
    scaled = [_stat(saturation, d, "scaled", "max_weight") for d in sorted({d for d, _ in saturation})]
    sampled(m.group(1), *min(scaled))
    sampled(m.group(2), *max(scaled))
    m = re.search(r"entropy (.+?) / (.+?) / (.+?) nats \(scaled about ([\d.]+) at every d_k\)", para)
    for shown, d in zip(m.groups()[:3], (16, 64, 512)):
        sampled(shown, *_stat(saturation, d, "unscaled", "entropy"))
    for d, _ in saturation:
        sampled(m.group(4), *_stat(saturation, d, "scaled", "entropy"))
    m = re.search(r"and ([\d.]+ ± [\d.]+) % of rows above 0\.99 at d_k = 512", para)
    sampled(m.group(1), *_stat(saturation, 512, "unscaled", "saturated_frac"), scale=100)
    m = re.search(r"\(([\d.]+) vs ([\d.]+) at d_k = 4\)", para)
    sampled(m.group(1), *_stat(saturation, 4, "unscaled", "jacobian"))
    sampled(m.group(2), *_stat(saturation, 4, "scaled", "jacobian"))
    m = re.search(r"falls like 1/√d_k, to (.+?) at 512 and (.+?) at 1024 \(scaled ([\d.]+)\)", para)
    sampled(m.group(1), *_stat(saturation, 512, "unscaled", "jacobian"))
    sampled(m.group(2), *_stat(saturation, 1024, "unscaled", "jacobian"))
    sampled(m.group(3), *_stat(saturation, 1024, "scaled", "jacobian"))
    # "up to d_k = 8 the unscaled one is larger", and the closed form quoted beside it (not sampled)
    for d in (2, 4, 8):
        assert saturation[(d, "unscaled")]["jacobian"] - 2 * saturation[(d, "unscaled")]["jacobian_se"] > \
            saturation[(d, "scaled")]["jacobian"] + 2 * saturation[(d, "scaled")]["jacobian_se"]
    assert saturation[(16, "unscaled")]["jacobian"] < saturation[(16, "scaled")]["jacobian"]
    assert f"{saturation[(1024, 'unscaled')]['asym_jacobian']:.3f} predicted at 1024" in para


def test_guide_histogram_figures():
    """The article's histogram experiment inside the full variance run (stored: its results.json's
    "histogram" entry)."""
    stored = json.loads((RESULTS / "variance-histogram.json").read_text(encoding="utf-8"))
    assert stored["command"] == "attnscope experiment variance"
    h = stored["histogram"]
    assert (h["n"], h["d_k"]) == (1000, 256)
    assert (f"The article's histogram experiment (Q, K of 1000 × 256) gives variance {h['var_unscaled']:.1f} "
            f"unscaled and {h['var_scaled']:.3f} scaled.") in text(GUIDE)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_tutorial_quotes_the_quick_variance_report(lang, tmp_path):
    from attnscope import experiments

    res = experiments.run("variance", quick=True, seed=0, progress=False)
    h = res.data["histogram"]
    page = text(PAGES[lang])
    assert f"Q and K of {h['n']} × {h['d_k']}" in page or f"Q 和 K 为 {h['n']} × {h['d_k']}" in page
    said = f"Unscaled scores: variance {h['var_unscaled']:.1f} (article: \"about 256\")"
    assert said in res.report and said in page
    said = f"Scaled: variance {h['var_scaled']:.3f} (article: \"about 1\")"
    assert said in res.report and said in page


# --- the training run ----------------------------------------------------------------------------

def _claims() -> dict:
    """The report's numbers for the first claim: speed-ups to unscaled's final loss and to the
    threshold, per (task, d_k), as printed ("5.0", ">2.1", "n/a"), and the stall counts."""
    report = (ROOT / "docs" / "experiments-training.md").read_text(encoding="utf-8")
    claims = report.split("## The article's claims")[1].split("## Set-up")[0]
    first = claims.split("\n2.")[0]
    own, thr = first.split("(to reach the threshold:")
    out: dict = {"own": {}, "threshold": {}}
    for where, part in (("own", own), ("threshold", thr)):
        for task, body in re.findall(r"(recall|lm) (.+?)(?=; lm |\(|$)", part):
            for d, v in re.findall(r"(?:d_k=)?(\d+): (>?[\d.]+|n/a)×?", body):
                out[where][(task, int(d))] = v
    out["stalled"] = re.search(r"\((\d+)/(\d+) runs stalled\)", claims).groups()
    out["recall_stalled"] = re.search(r"recall: unscaled stalled in (\d+)/(\d+) seeds", claims).groups()
    out["lm_stalled"] = re.search(r"lm: unscaled stalled in (\d+)/(\d+) seeds", claims).groups()
    out["wall"] = re.search(r"Time: (\d+) s wall \((\d+) job", report).groups()
    # one row per (task, variant, d_k); its "reached" column counts that cell's seeds (k/n)
    out["runs"] = sum(int(m.group(1)) for ln in report.splitlines()
                      if (m := re.match(r"\| \w+ \| \d+ \| [^|]+ \| \d+/(\d+) \|", ln)))
    return out


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_tutorial_training_claims(lang):
    c = _claims()
    page = text(PAGES[lang])
    times = "×" if lang == "en" else " 倍"
    # recall from d_k = 64 up: the speed-ups to the loss unscaled ended with
    recall = [c["own"][("recall", d)] for d in (64, 256, 512)]
    assert all(float(x) > 3 for x in recall) and float(c["own"][("recall", 16)]) < 3
    if lang == "en":
        assert f"needed {recall[0]}×, {recall[1]}× and {recall[2]}× the steps of scaled" in page
    else:
        assert f"{recall[0]} 倍、{recall[1]} 倍、{recall[2]} 倍" in page
    # language modelling: below 3× to its own final loss, only lower bounds to the threshold
    lm_own = [float(c["own"][("lm", d)]) for d in (16, 64, 256, 512)]
    assert f"{min(lm_own)}–{max(lm_own)}{times}" in page
    bounds = [c["threshold"][("lm", d)] for d in (64, 256, 512)]
    assert all(b.startswith(">") for b in bounds)
    lo, hi = min(float(b[1:]) for b in bounds), max(float(b[1:]) for b in bounds)
    assert f"> {lo}{times}到 > {hi}{times}" in page if lang == "zh" else f"(> {lo}× to > {hi}×)" in page
    assert ("these runs cannot tell" if lang == "en" else "这些运行无法判断") in page
    assert ("not on language modelling" if lang == "en" else "在语言建模上不成立") not in page
    # stalled: the runs, the recall seeds and the lm seeds that stalled, as the report counts them
    s, r, lm = c["stalled"], c["recall_stalled"], c["lm_stalled"]
    if lang == "en":
        assert f"held in {s[0]} of {s[1]} runs ({r[0]} of {r[1]} on recall, {lm[0]} of {lm[1]} on language modelling)" in page
        assert f"{c['runs']} runs, which took {c['wall'][0]} s on two busy cores" in page
    else:
        assert f"在 {s[1]} 次运行中出现 {s[0]} 次（recall {r[1]} 次中 {r[0]} 次，语言建模 {lm[1]} 次中 {lm[0]} 次）" in page
        assert f"共 {c['runs']} 次运行，在两个繁忙的核上用了 {c['wall'][0]} 秒" in page
    assert c["wall"][1] == "2" and "--jobs 2" in page


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_tutorial_index_says_the_same(lang):
    row = next(ln for ln in INDEX[lang].read_text(encoding="utf-8").splitlines() if "3×" in ln or "3 倍" in ln)
    assert ("on language modelling these runs cannot tell" if lang == "en" else "语言建模上这些运行无法判断") in row
    s = _claims()["stalled"]
    assert (f"stalled in {s[0]} of {s[1]} runs" if lang == "en" else f"{s[1]} 次运行中卡住 {s[0]} 次") in row


def test_guide_speedups_are_the_reports():
    c = _claims()
    page = text(GUIDE)
    r = [c["own"][("recall", d)] for d in (64, 256, 512)]
    r[2] = r[2].rstrip("0").rstrip(".")  # the guide writes 10.0 as 10
    assert f"unscaled needed {r[0]}×, {r[1]}× and {r[2]}× the steps of scaled at d_k = 64, 256, 512" in page
    assert f"(to the threshold: {c['threshold'][('recall', 64)]}× at 64, more than {c['threshold'][('recall', 256)][1:]}×" in page
    assert f"but {c['own'][('recall', 16)]}× at d_k = 16 ({c['threshold'][('recall', 16)]}× to the threshold)" in page
    lm = [c["own"][("lm", d)] for d in (16, 64, 256, 512)]
    assert f"it needed {lm[0]}×, {lm[1]}×, {lm[2]}× and {lm[3]}× the steps to reach its own final loss" in page
    assert "on language modelling not shown either way" in page and "these runs cannot tell" in page
