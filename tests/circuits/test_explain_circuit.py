"""The circuit lessons (``explain --circuit qk``, ``explain --composition``) and the copying score in
``analyze``: the worked numbers equal float64 NumPy from transformers' weights (tests/circuits/
test_circuits.py's reference), in English and Chinese, Markdown and JSON; the CLI refuses other
lessons' options in one sentence; analyze's report and JSON carry each induction head's score."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

import numpy as np
import pytest
import torch

import attnscope
import tests.models.decoders.tiny  # noqa: F401  (registers the decoder families)
from attnscope.analysis import Thresholds, analyze
from attnscope.cli import main
from attnscope.explain.circuit_doc import explain_composition, explain_qk_entry
from attnscope.testing.tiny import FAMILIES
from tests.models.decoders.tiny import hf_model

from .test_circuits import reference


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("circuit-lessons")
    return {n: FAMILIES[n].build(root / n) for n in ("gpt2", "llama_gqa")}


@pytest.fixture(scope="module")
def refs(folders):
    return {n: reference(n, hf_model(f, dtype=torch.float64)) for n, f in folders.items()}


def test_qk_entry_by_hand(folders, refs):
    m = attnscope.load(folders["gpt2"])
    w = explain_qk_entry(m, 1, 2, (3, 17))
    want = refs["gpt2"]["QK"][1, 2][3, 17]
    assert w.values["W_QK[3,17]"] == pytest.approx(want, rel=1e-9)
    assert w.meta["max_abs_diff"] < 1e-12 and w.meta["folded"] == ["ln1"]
    md = w.render("markdown", decimals=6)
    assert "W_QK[3, 17]" in md and f"{abs(want):.6f}" in md and "ln1" in md
    zh = w.render("markdown", lang="zh", decimals=6)
    assert "逐步计算 W_QK 的一个元素" in zh and f"{abs(want):.6f}" in zh
    data = json.loads(w.render("json"))
    assert data["meta"]["entry"] == [3, 17]


def test_qk_entry_with_a_rotary_offset(folders, refs):
    m = attnscope.load(folders["llama_gqa"])
    w = explain_qk_entry(m, 0, 5, (2, 9), offset=3)  # head 5 reads k/v head 1
    from attnscope.circuits import qk_circuit
    want = float(qk_circuit(m, 0, 5, offset=3).full()[2, 9])
    assert w.values["W_QK[2,9]"] == pytest.approx(want, rel=1e-9)
    assert w.meta["kv_head"] == 1 and w.meta["offset"] == 3
    assert w.values["W_QK[2,9]"] != pytest.approx(refs["llama_gqa"]["QK"][0, 5][2, 9], rel=1e-6)
    assert "key/value head 1" in w.render("markdown") and "key/value 头 1" in w.render("markdown", lang="zh")


@pytest.mark.parametrize("kind", ["q", "k", "v"])
def test_composition_by_hand(folders, refs, kind):
    ref = refs["llama_gqa"]
    A = ref["OV"][0, 3]
    B = {"q": ref["QK"][1, 6], "k": ref["QK"][1, 6].T, "v": ref["OV"][1, 6]}[kind]
    w = explain_composition(attnscope.load(folders["llama_gqa"]), kind, "0.3", "1.6")
    assert w.values["norm_A"] == pytest.approx(np.linalg.norm(A), rel=1e-9)
    assert w.values["norm_B"] == pytest.approx(np.linalg.norm(B), rel=1e-9)
    assert w.values["norm_AB"] == pytest.approx(np.linalg.norm(A @ B), rel=1e-9)
    score = np.linalg.norm(A @ B) / (np.linalg.norm(A) * np.linalg.norm(B))
    assert w.values["score"] == pytest.approx(score, rel=1e-9)
    assert f"{score:.4f}" in w.render("markdown") and f"{score:.4f}" in w.render("markdown", lang="zh")
    assert w.meta["max_rel_diff"] < 1e-10


def test_cli_circuit_and_composition(folders, refs, tmp_path):
    out = tmp_path / "qk.json"
    assert main(["explain", "--model", str(folders["gpt2"]), "--circuit", "qk", "--layer", "0", "--head", "1",
                 "--entry", "4,4", "--format", "json", "-o", str(out)]) == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["values"]["W_QK[4,4]"] == pytest.approx(refs["gpt2"]["QK"][0, 1][4, 4], rel=1e-9)
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert main(["explain", "--model", str(folders["gpt2"]), "--composition", "k", "--from", "0.1", "--to", "1.3",
                     "--format", "markdown", "--lang", "zh"]) == 0
    A, B = refs["gpt2"]["OV"][0, 1], refs["gpt2"]["QK"][1, 3].T
    assert f"{np.linalg.norm(A @ B) / (np.linalg.norm(A) * np.linalg.norm(B)):.4f}" in buf.getvalue()


@pytest.mark.parametrize("args, words", [
    (["--circuit", "ov", "--layer", "0", "--head", "0", "--entry", "1,1"], "--circuit 'ov'"),
    (["--circuit", "qk", "--layer", "0", "--head", "0"], "needs --entry"),
    (["--circuit", "qk", "--layer", "0", "--head", "0", "--entry", "1"], "two whole numbers"),
    (["--circuit", "qk", "--layer", "0", "--head", "0", "--entry", "1,99"], "out of range"),
    (["--circuit", "qk", "--layer", "0", "--head", "0", "--entry", "1,1", "--text", "hi"], "--text belongs"),
    (["--composition", "k", "--from", "1.0", "--to", "0.1"], "later layer"),
    (["--composition", "k", "--from", "0-1", "--to", "1.1"], "LAYER.HEAD"),
    (["--composition", "k", "--from", "0.1"], "needs --from"),
    (["--composition", "z", "--from", "0.1", "--to", "1.1"], "not a kind of composition"),
    (["--composition", "q", "--circuit", "qk", "--from", "0.1", "--to", "1.1"], "not both"),
    (["--circuit", "qk", "--layer", "0", "--head", "0", "--entry", "1,1", "--offset", "2"], "has none"),
])
def test_cli_errors_are_one_line(folders, args, words, capsys):
    assert main(["explain", "--model", str(folders["gpt2"]), *args]) != 0
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1, err


QK = ["--circuit", "qk", "--layer", "0", "--head", "0", "--entry", "1,1"]
COMPOSITION = ["--composition", "k", "--from", "0.1", "--to", "1.1"]


@pytest.mark.parametrize("args, words", [
    (QK + ["--from", "0.1"], "--from does not apply to one entry of W_QK"),
    (QK + ["--dk", "4"], "--dk does not apply to one entry of W_QK"),
    (QK + ["--causal"], "--causal does not apply"),
    (QK + ["--dims", "2"], "--dims does not apply"),
    (QK + ["--scheme", "rotary"], "--scheme does not apply"),
    (COMPOSITION + ["--entry", "1,1"], "--entry does not apply to a composition score"),
    (COMPOSITION + ["--head", "2"], "--head does not apply to a composition score"),
    (COMPOSITION + ["--layer", "1"], "--layer does not apply to a composition score"),
    (["--circuit", "qk", "--layer", "0", "--head", "0", "--entry", "²,1"], "--entry '²,1': give two whole numbers"),
    (["--composition", "k", "--from", "².1", "--to", "1.1"], "--from '².1'"),
])
def test_cli_an_option_the_circuit_lesson_does_not_read_is_refused(folders, args, words, capsys):
    """Each worked the same entry or score as without the option (dropped in silence); '²,1' ended in a
    ValueError traceback (str.isdigit() passes '²', int() refuses it)."""
    assert main(["explain", "--model", str(folders["gpt2"]), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1 and "Traceback" not in err, err


@pytest.mark.parametrize("args", [["--example", "three-tokens", "--no-fold"], ["--text", "hi", "--from", "0.1"],
                                  ["scaling", "--to", "1.0"]])
def test_cli_a_circuit_option_without_the_circuit_lesson_is_refused(args, capsys):
    """--from, --to and --no-fold were dropped by every other lesson."""
    assert main(["explain", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert "is an option of the circuit lessons" in err and len(err.splitlines()) == 1, err


def test_analyze_reports_the_copying_score_of_induction_heads(folders, refs, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("The cat sat on the mat.\nI like cats.\n", encoding="utf-8")
    ref = refs["gpt2"]
    r = analyze(corpus, attnscope.load(folders["gpt2"]), importance_texts=0, induction_seqs=3, induction_length=8,
                progress=False, thresholds=Thresholds(induction=0.0))  # every head is labelled induction
    scores = r.copying["scores"]
    assert len(scores) == 8 and r.copying["skipped"] is None
    for (l, h), W_OV in ref["OV"].items():
        lam = np.linalg.eigvals(ref["E"] @ W_OV @ ref["U"])
        assert scores[f"{l}.{h}"] == pytest.approx(lam.real.sum() / np.abs(lam).sum(), rel=1e-6)
    for lang, words in (("en", "Copying score of each induction head"), ("zh", "每个归纳头的复制得分")):
        out = tmp_path / lang
        r.write(out, lang=lang)
        report = (out / "report.md").read_text(encoding="utf-8")
        line = next(x for x in report.splitlines() if words in x)
        assert f"1.0 {scores['1.0']:.2f}" in line
        data = json.loads((out / "analysis.json").read_text(encoding="utf-8"))
        assert data["decoder"]["copying"]["scores"] == pytest.approx(scores)


def test_rotary_angles_are_offset_times_frequency_not_wrapped(folders):
    """The rotate step's column is 'angle θ_k = δ·ω_k', but the angles were read back from the rotation
    matrix with arctan2, so they were wrapped into (−π, π]: at δ = 10 feature 0 (ω_0 = 1) showed
    10 − 4π = −2.566. The angles are δ·ω_k, ω_k = θ^(−2k/d_head) from the checkpoint's rope_theta."""
    from attnscope.explain.circuit_values import qk_entry_values
    m = attnscope.load(folders["llama_gqa"])
    c = m.config
    v = qk_entry_values(m, 0, 5, 2, 9, offset=10)
    dh = int(v["d_head"])
    want = 10 * float(c.rope_theta) ** (-np.arange(0, dh, 2) / dh)  # (d_head/2,)
    np.testing.assert_allclose(v["angles"], want, rtol=1e-12)
    np.testing.assert_allclose(v["cos"], np.cos(want), rtol=1e-12)
    np.testing.assert_allclose(v["sin"], np.sin(want), rtol=1e-12, atol=1e-15)
