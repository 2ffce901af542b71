"""Bad multi-head inputs: one clear line each (n_heads not dividing d_model or the fused width,
n_heads not a multiple of n_kv_heads, W_O of the wrong height, keys that belong to one head), and
exit 2 with that line on the command line."""

import numpy as np
import pytest

from attnscope.cli import main
from attnscope.errors import AttnscopeError
from attnscope.explain import explain

X = "X: [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]]\n"
W4 = "[[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0.5], [0, 0.5, 1, 1]]"
SEPARATE = X + f"W_Q: {W4}\nW_K: {W4}\nW_V: {W4}\nW_O: {W4}\n"
FUSED = X + ("W_QKV: [[1, 0, 0, 1, 0, 1, 1, 0, 1, 0, 0, 2], [0, 1, 1, 0, 1, 0, 0, 1, 0, 1, 1, 0], "
             "[1, 1, 0, 0.5, 0.5, 0, 1, 1, 1, 1, 0, 0], [0, 0.5, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1]]\n")


def _write(tmp_path, text):
    p = tmp_path / "heads.yaml"
    p.write_text(text, encoding="utf-8")
    return str(p)


@pytest.mark.parametrize("text, msg", [
    (SEPARATE + "n_heads: 3\n", "key W_Q: n_heads = 3 does not divide the 4 columns of W_Q; each query head takes "
                                "d_head of them (W_Q is n_heads·d_head wide) (and n_heads = 3 does not divide "
                                "d_model = 4"),
    (FUSED + "n_heads: 3\n", "key W_QKV: W_QKV has 12 columns, not a multiple of n_heads + 2·n_kv_heads = 3 + 2·3 = 9"),
    (FUSED + "n_heads: 4\nn_kv_heads: 3\n", "key n_kv_heads: n_heads (4) is not a multiple of n_kv_heads (3); each "
                                            "key/value head serves n_heads / n_kv_heads query heads"),
    (SEPARATE + "n_heads: 2\nn_kv_heads: 0\n", "key n_kv_heads: must be at least 1, got 0"),
    (FUSED, "missing key n_heads"),
    (FUSED + "n_heads: 2\nhead: 1\n", "key head: a multi-head calculation works every head; remove head"),
    (FUSED + "n_heads: 2\nrope: {base: 100}\n", "key rope: rotary positions are worked out for one head"),
    (FUSED + "n_heads: 2\nqk_norm: true\n", "key qk_norm: QK-norm is worked out for one head"),
    (FUSED + f"n_heads: 2\nW_Q: {W4}\n", "give W_QKV (fused) or W_Q, W_K, W_V, not both"),
    (FUSED + "n_heads: 2\nW_O: [[1, 0], [0, 1]]\n", "key W_O: W_O has 2 rows but the concatenated heads have "
                                                      "n_heads × d_v = 2 × 2 = 4 columns"),
    (SEPARATE.replace("W_K: " + W4, "W_K: [[1, 0], [0, 1], [1, 1], [0, 0]]") + "n_heads: 2\n",
     "key W_K: W_K has 2 columns but the 2 key/value heads need n_kv_heads × d_head = 2 × 2 = 4"),
    (FUSED + "n_heads: 2\nheads: some\n", "key heads: the only value is 'all'"),
    (FUSED + "n_heads: 2\nmask: [[1, 0], [1, 1]]\n", "heads.yaml, key mask: the mask is 2×2 but there are 3 tokens"),
    (FUSED.replace("X: [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]]", "X: [[1, 0, 1], [0, 1, 0]]") + "n_heads: 2\n",
     "key W_QKV: W_QKV has 4 rows but X has 3 columns"),
    (FUSED + "n_heads: 2\nn_heads_extra: 1\n", "unknown key 'n_heads_extra'"),
])
def test_one_clear_error_each(tmp_path, text, msg):
    path = _write(tmp_path, text)
    with pytest.raises(AttnscopeError) as e:
        explain(path)
    assert msg in str(e.value) and str(e.value).startswith(path), str(e.value)


def test_the_command_line_says_it_in_one_line(tmp_path, capsys):
    path = _write(tmp_path, FUSED + "n_heads: 3\n")
    assert main(["explain", path]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a multiple of n_heads + 2·n_kv_heads" in err and "Traceback" not in err


def test_command_line_options_reach_every_head(capsys):
    assert main(["explain", "--example", "multi-head", "--labels", "a,b,c", "-f", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "| a | 2.0000 | 1.0000 |" in out and "我" not in out
    assert main(["explain", "--example", "multi-head", "--labels", "a,b", "-f", "markdown"]) == 2
    assert "--labels: expected 3 token labels" in capsys.readouterr().err


def test_overflow_names_the_fused_step():
    with pytest.raises(AttnscopeError, match=r"float64 overflows in the step X·W_QKV \(the fused product\): entry \[0, 0\]"):
        explain({"X": [[1e200, 0], [0, 1]], "W_QKV": [[1e200] * 6, [1] * 6], "n_heads": 1})


@pytest.mark.parametrize("expand, written", [("never", False), ("always", True)])
def test_expand_reaches_every_head(expand, written):
    rng = np.random.default_rng(0)
    spec = {"X": rng.integers(-2, 3, (5, 8)).tolist(), "W_QKV": (rng.integers(-4, 5, (8, 24)) / 4).tolist(), "n_heads": 4}
    w = explain(spec, expand=expand)
    kinds = {type(b).__name__ for s in w.steps for b in s.blocks}
    assert ("DotRow" in kinds and "WeightedSum" in kinds) == written
    assert ("DotRow" in kinds or "WeightedSum" in kinds) == written
