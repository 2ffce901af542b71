"""Bad toy input: one line naming what is wrong and where; exit 2 from the command line."""

import re

import pytest

from attnscope import ConfigError, InputError, ShapeError
from attnscope.cli import main
from attnscope.explain import explain

GOOD = "X: [[1, 0], [0, 1], [1, 1]]\nW_Q: [[1, 0], [1, 1]]\nW_K: [[1, 2], [0, 1]]\nW_V: [[2, 0], [0, 1]]\n"


def _write(tmp_path, text, name="toy.yaml"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


@pytest.mark.parametrize("text, err, msg", [
    (GOOD.replace("W_Q: [[1, 0], [1, 1]]", "W_Q: [[1, 0], [1, 1], [0, 0]]"), ShapeError,
     "key W_Q: W_Q has 3 rows but X has 2 columns"),
    (GOOD.replace("W_K: [[1, 2], [0, 1]]", "W_K: [[1], [0]]"), ShapeError,
     "key W_K: W_K has 1 columns but W_Q has 2"),
    (GOOD + "W_O: [[1, 0, 0]]\n", ShapeError, "key W_O: W_O has 1 rows but V has 2 columns"),
    (GOOD + "mask: [[1, 1], [1, 1]]\n", ShapeError, "key mask: the mask is 2×2 but there are 3 tokens"),
    (GOOD.replace("[1, 1]]\nW_Q", "[1, 1, 1]]\nW_Q"), InputError,
     "key X, row 3: has 3 entries but row 1 has 2; a matrix must be rectangular"),
    (GOOD.replace("W_V: [[2, 0], [0, 1]]", "W_V: [[2, 0], [0, abc]]"), InputError,
     "key W_V, row 2, column 2: 'abc' is not a number"),
    (GOOD + "W_Z: [[1]]\n", InputError, "unknown key 'W_Z'"),
    (GOOD.replace("W_V: [[2, 0], [0, 1]]\n", ""), InputError, "missing key W_V"),
    (GOOD + "tokens: [a, b]\n", InputError, "key tokens: expected 3 token labels (one per row of X), got 2"),
    (GOOD + "scoring: fancy\n", ConfigError, "key scoring: unknown scoring 'fancy'"),
    (GOOD + "mask: [[1, 1, 2], [1, 1, 1], [1, 1, 1]]\n", InputError, "key mask, row 1, column 3: a mask entry must be"),
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
