"""Bad decoder options in a toy input: one clear line each (rope without a base, an odd head
dimension, n_heads not a multiple of n_kv_heads, a window ≤ 0, …), exit 2 on the command line."""

import pytest

from attnscope import InputError
from attnscope.cli import main
from attnscope.explain import explain

GOOD = ("X: [[1, 0], [0, 1], [1, 1]]\nW_Q: [[1, 0, 1, 0], [1, 1, 0, 1]]\nW_K: [[1, 2, 0, 1], [0, 1, 1, 0]]\n"
        "W_V: [[2, 0], [0, 1]]\n")


def _write(tmp_path, text):
    p = tmp_path / "toy.yaml"
    p.write_text(text, encoding="utf-8")
    return str(p)


@pytest.mark.parametrize("extra, msg", [
    ("rope: {}\n", "key rope: the rotary base is missing; write it as rope: {base: 10000}"),
    ("rope: {pairing: half}\n", "the rotary base is missing"),
    ("rope: 10000\n", "key rope: expected a mapping such as {base: 10000}"),
    ("rope: {base: -5}\n", "key rope.base: must be a positive number"),
    ("rope: {base: 100, pairing: diagonal}\n", "key rope.pairing: expected adjacent (features 2i, 2i+1) or half"),
    ("rope: {base: 100, theta: 3}\n", "key rope: unknown key 'theta'"),
    ("rope: {base: 100, positions: [0, 1]}\n", "key rope.positions: 2 positions for 3 tokens"),
    ("n_heads: 4\nn_kv_heads: 3\n", "key n_kv_heads: n_heads (4) is not a multiple of n_kv_heads (3)"),
    ("n_kv_heads: 2\n", "key n_kv_heads: give n_heads too"),
    ("n_heads: 3\n", "key W_Q: W_Q has 4 columns, not a multiple of n_heads = 3"),
    ("n_heads: 2\nn_kv_heads: 2\nhead: 2\n", "key head: head 2 is out of range; there are 2 query heads (0..1)"),
    ("n_heads: 4\nn_kv_heads: 1\n", "key W_K: W_K has 4 columns but the 1 key/value head needs n_kv_heads × d_head = 1"),
    ("window: 0\n", "key window: the window must be a whole number ≥ 1"),
    ("window: -2\n", "key window: the window must be a whole number ≥ 1"),
    ("window: 1.5\n", "key window: the window must be a whole number ≥ 1"),
    ("window: 2\ncausal: false\n", "key window: a sliding window is causal"),
    ("qk_norm: {offset: 2}\n", "key qk_norm.offset: 0 (Llama: w · x̂) or 1 (Gemma: (1 + w) · x̂), got 2.0"),
    ("qk_norm: {q_weight: [1, 2]}\n", "key qk_norm.q_weight: 2 numbers, but a head has d = 4 features"),
    ("qk_norm: true\nscoring: cosine\n", "key qk_norm: qk_norm (RMSNorm of q and k) and scoring 'cosine'"),
    ("query_pre_attn_scalar: 0\n", "key query_pre_attn_scalar: must be a positive number"),
])
def test_one_clear_error_each(tmp_path, extra, msg):
    path = _write(tmp_path, GOOD + extra)
    with pytest.raises(InputError) as e:
        explain(path)
    assert msg in str(e.value) and str(e.value).startswith(path), str(e.value)


def test_odd_head_dimension(tmp_path):
    text = ("X: [[1, 0], [0, 1]]\nW_Q: [[1, 0, 1], [1, 1, 0]]\nW_K: [[1, 2, 0], [0, 1, 1]]\nW_V: [[2, 0], [0, 1]]\n"
            "rope: {base: 10000}\n")
    with pytest.raises(InputError, match=r"key rope: the head dimension d = 3 is odd; rotary positions turn the "
                                         r"features in pairs"):
        explain(_write(tmp_path, text))
    # with heads: d is per head (6 columns, 2 heads: d = 3)
    text2 = text.replace("[[1, 0, 1], [1, 1, 0]]", "[[1, 0, 1, 1, 0, 1], [1, 1, 0, 0, 1, 1]]") + "n_heads: 2\nn_kv_heads: 1\n"
    with pytest.raises(InputError, match="the head dimension d = 3 is odd"):
        explain(_write(tmp_path, text2))


@pytest.mark.parametrize("extra, msg", [("rope: {}\n", "the rotary base is missing"),
                                        ("window: 0\n", "the window must be a whole number ≥ 1"),
                                        ("n_heads: 4\nn_kv_heads: 3\n", "is not a multiple of n_kv_heads")])
def test_command_line_exit_2_one_line(tmp_path, capsys, extra, msg):
    assert main(["explain", _write(tmp_path, GOOD + extra)]) == 2
    err = capsys.readouterr().err
    assert msg in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_check_reports_the_same_errors(tmp_path):
    import attnscope
    text = "problem:\n" + "".join("  " + ln + "\n" for ln in (GOOD + "window: 0\n").splitlines()) + \
        "answers:\n  weights: [[1, 0, 0], [0.5, 0.5, 0], [0.3, 0.3, 0.4]]\n"
    p = tmp_path / "answers.yaml"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match="key window: the window must be a whole number ≥ 1"):
        attnscope.check(str(p))


@pytest.mark.parametrize("extra, msg", [
    # a whole-number key given .nan or .inf ended in "ValueError: cannot convert float NaN to integer" or an
    # OverflowError traceback (explain and check)
    ("window: .nan\n", "key window: the window must be a whole number ≥ 1"),
    ("window: .inf\n", "key window: the window must be a whole number ≥ 1"),
    ("n_heads: .nan\n", "key n_heads: "), ("n_heads: .inf\n", "key n_heads: "),
    ("n_heads: 2\nn_kv_heads: .inf\n", "key n_kv_heads: "), ("head: .nan\n", "key head: "),
])
def test_a_whole_number_that_is_nan_or_inf_is_one_error(tmp_path, capsys, extra, msg):
    test_one_clear_error_each(tmp_path, extra, msg)
    assert main(["explain", _write(tmp_path, GOOD + extra)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
