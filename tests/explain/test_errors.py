"""Bad toy input: one line naming what is wrong and where; exit 2 from the command line."""

import re

import numpy as np
import pytest

from attnscope import ConfigError, InputError, ShapeError
from attnscope.cli import main
from attnscope.explain import explain
from attnscope.explain.row import explain_scores_row

GOOD = "X: [[1, 0], [0, 1], [1, 1]]\nW_Q: [[1, 0], [1, 1]]\nW_K: [[1, 2], [0, 1]]\nW_V: [[2, 0], [0, 1]]\n"


def _write(tmp_path, text, name="toy.yaml"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


@pytest.mark.parametrize("text, err, msg", [
    (GOOD.replace("W_Q: [[1, 0], [1, 1]]", "W_Q: [[1, 0], [1, 1], [0, 0]]"), ShapeError,
     "key W_Q: W_Q has 3 rows but X has 2 columns"),
    (GOOD.replace("W_K: [[1, 2], [0, 1]]", "W_K: [[1], [0]]"), ShapeError,
     "key W_K: W_K has 1 column but W_Q has 2"),
    (GOOD + "W_O: [[1, 0, 0]]\n", ShapeError, "key W_O: W_O has 1 row but V has 2 columns"),
    (GOOD + "mask: [[1, 1], [1, 1]]\n", ShapeError, "key mask: the mask is 2×2 but there are 3 tokens"),
    (GOOD.replace("[1, 1]]\nW_Q", "[1, 1, 1]]\nW_Q"), InputError,
     "key X, row 2 (from 0): has 3 entries but row 0 has 2; a matrix must be rectangular"),
    (GOOD.replace("W_V: [[2, 0], [0, 1]]", "W_V: [[2, 0], [0, abc]]"), InputError,
     "key W_V, row 1, column 1 (from 0): 'abc' is not a number"),
    (GOOD + "W_Z: [[1]]\n", InputError, "unknown key 'W_Z'"),
    (GOOD.replace("W_V: [[2, 0], [0, 1]]\n", ""), InputError, "missing key W_V"),
    (GOOD + "tokens: [a, b]\n", InputError, "key tokens: expected 3 token labels (one per row of X), got 2"),
    (GOOD + "scoring: fancy\n", ConfigError, "key scoring: unknown scoring 'fancy'"),
    (GOOD + "mask: [[1, 1, 2], [1, 1, 1], [1, 1, 1]]\n", InputError, "key mask, row 0, column 2 (from 0): a mask entry must be"),
    ("X: [[1, 0]\nW_Q: 1\n", InputError, "not valid YAML, line"),
    ("- 1\n- 2\n", InputError, "the top level must be a mapping"),
])
def test_toy_file_errors(tmp_path, text, err, msg):
    path = _write(tmp_path, text)
    with pytest.raises(err, match=re.escape(msg)) as e:
        explain(path)
    assert path in str(e.value) and "\n" not in str(e.value)


def test_json_and_toml_inputs_and_their_errors(tmp_path):
    j = _write(tmp_path, '{"X": [[1, 0], [0, 1], [1, 1]], "W_Q": [[1, 0], [1, 1]], "W_K": [[1, 2], [0, 1]], '
                         '"W_V": [[2, 0], [0, 1]]}', "toy.json")
    t = _write(tmp_path, GOOD.replace(": ", " = "), "toy.toml")
    ref = explain(example="three-tokens").values["output"]
    assert (explain(j).values["output"] == ref).all() and (explain(t).values["output"] == ref).all()
    with pytest.raises(InputError, match=r"not valid JSON, line 1, column \d+"):
        explain(_write(tmp_path, '{"X": [[1, 0],', "bad.json"))
    with pytest.raises(InputError, match="not valid TOML"):
        explain(_write(tmp_path, "X = [[1, 0]\n", "bad.toml"))
    with pytest.raises(InputError, match="unknown file type '.txt'"):
        explain(_write(tmp_path, GOOD, "toy.txt"))


def test_cli_errors_are_one_line_and_exit_2(tmp_path, capsys):
    path = _write(tmp_path, GOOD.replace("W_Q: [[1, 0], [1, 1]]", "W_Q: [[1, 0, 1], [1, 1, 1]]"))
    cases = [
        ["explain", path],
        ["explain", "-X", "1,0;0,1", "--wq", "1,0;1,1", "--wk", "1,2;0,1", "--wv", "2,0,1"],
        ["explain", "--example", "nope"],
        ["explain"],
        ["explain", str(tmp_path / "missing.yaml")],
        ["explain", "scaling", "--dk", "0"],
        ["explain", "--scores", "1,2,x", "--dk", "4"],
        ["explain", "--text", "the cat", "--token", "cat", "--layer", "6"],
        ["explain", "--text", "the cat", "--token", "dog"],
    ]
    for argv in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("attnscope explain: error: ") and err.count("\n") == 1, (argv, err)


I2 = ["--wq", "1,0;0,1", "--wk", "1,0;0,1", "--wv", "1,0;0,1"]


@pytest.mark.parametrize("argv, step", [
    (["-X", "1e308,0; 0,1", *I2], "S = Q·Kᵀ (the raw scores): entry [0, 0] is inf"),
    (["-X", "1e308,1e308; 0,1", "--wq", "1,0;1,0", "--wk", "1,0;0,1", "--wv", "1,0;0,1"],
     "Q = X·W_Q: entry [0, 0] is inf"),
    (["-X", "1,0; 0,1", "--wq", "1,0;0,1", "--wk", "1,0;0,1", "--wv", "1e308,1e308;1e308,1e308", "--wo", "10;10"],
     "Y = O·W_O: entry [0, 0] is inf"),
    (["-X", "1e200,0; 0,1", *I2, "--scoring", "unscaled"], "S = Q·Kᵀ (the raw scores): entry [0, 0] is inf"),
])
def test_overflow_names_the_step(capsys, argv, step):
    assert main(["explain", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1
    assert captured.err.strip() == (f"attnscope explain: error: the given matrices: float64 overflows in the step "
                                    f"{step}; a worked calculation needs smaller inputs")


def test_overflow_in_a_file_and_in_a_given_row(tmp_path, capsys):
    big = GOOD.replace("X: [[1, 0]", "X: [[1e300, 0]")
    with pytest.raises(InputError, match=re.escape("toy.yaml: float64 overflows in the step S = Q·Kᵀ")):
        explain(_write(tmp_path, big))
    with pytest.raises(InputError, match=re.escape("scores: float64 overflows in the step S' (the scaled scores): "
                                                   "entry [0] is inf")):
        explain_scores_row([1e308, 1.0], factor=10.0)
    f = _write(tmp_path, "problem:\n" + "".join("  " + line + "\n" for line in big.splitlines()) +
               "answers:\n  Q: [[1, 0], [1, 1], [2, 1]]\n", "answers.yaml")
    assert main(["check", f]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"attnscope check: error: {f}, problem: float64 overflows in the step S = Q·Kᵀ (the raw scores): "
                   "entry [0, 0] is inf; a worked calculation needs smaller inputs")
    g = _write(tmp_path, "problem:\n  scores: [1e308, 1]\n  factor: 10\nanswers:\n  weights: [1, 0]\n", "row.yaml")
    assert main(["check", g]) == 2
    assert f"{g}, key problem: float64 overflows in the step S' (the scaled scores)" in capsys.readouterr().err


@pytest.mark.parametrize("scoring", ["cosine", "qknorm"])
def test_normalised_scorings_of_huge_vectors_are_not_zero(scoring):
    # cos(q, k) and LayerNorm(q)·LayerNorm(k) do not change when q, k are scaled by 1e200; the
    # squares inside would overflow. Reference: the same directions at a size where the squares
    # fit and ε (1e-6) is negligible.
    small = np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 3.5]]) * 1e6
    kw = dict(W_Q=[[1, 0], [1, 1]], W_K=[[1, 2], [0, 1]], W_V=[[2, 0], [0, 1]], scoring=scoring)
    ref = explain(X=small.tolist(), **kw).values
    got = explain(X=(small * 1e194).tolist(), **kw).values
    np.testing.assert_allclose(got["weights"], ref["weights"], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(np.asarray(got["output"]), np.asarray(ref["output"]) * 1e194, rtol=1e-12)


@pytest.mark.parametrize("argv, where", [
    (["--scores", "1,,3", "--dk", "4"], "--scores, entry 1 (from 0)"),
    (["--scores", "1,2,3,", "--dk", "4"], "--scores, entry 3 (from 0)"),
    (["-X", "1,,0,1; 0,1,1", "--wq", "1;1;1", "--wk", "1;1;1", "--wv", "1;1;1"], "-X, row 0, column 1 (from 0)"),
])
def test_an_empty_entry_on_the_command_line_is_named_not_dropped(capsys, argv, where):
    # "1,,3" read as [1, 3]: a row of 2 keys worked out instead of the 3 given (and "1,,0,1" as a 3-wide X row)
    assert main(["explain", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"attnscope explain: error: {where}: an entry is empty"
