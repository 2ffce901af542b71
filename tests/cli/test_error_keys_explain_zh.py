"""explain's errors under ``--lang zh`` (issue 25): a problem file a learner wrote (malformed, a
matrix of the wrong shape, a missing or unknown key, an unknown scoring, heads that do not divide),
the lessons' options, and the errors of attnscope.plot and attnscope.reference. Each comes out in
Chinese with the same values (the file, the key, the numbers) and no English words left; the
English line is the one it always was, byte for byte."""

import numpy as np
import pytest

from attnscope import i18n
from attnscope.cli import main
from attnscope.errors import AttnscopeError
from tests.cli.test_error_keys_zh import english_words
from tests.models.seq2seq.fixtures import seq2seq, seq2seq_dirs  # noqa: F401

#: The code a Chinese line keeps as written: keys of a problem file, option values, formulas.
CODE = ["W_QKV", "W_Q", "W_K", "W_V", "W_O", "n_heads", "n_kv_heads", "d_head", "d_model", "d_k", "d_v", "query_pre_attn_scalar",
        "qk_norm", "q_weight", "k_weight", "rope", "base", "pairing", "positions", "causal", "scoring", "temperature",
        "tokens", "mask", "window", "head", "eps", "offset", "true", "false", "adjacent", "half", "scaled", "unscaled",
        "inv_d", "cosine", "qknorm", "float64", "Concat", "RMSNorm", "Gemma", "Llama", "all", "position", "sin", "cos"]

THREE = {"X": "[[1, 0], [0, 1], [1, 1]]", "W_Q": "[[1, 0], [1, 1]]", "W_K": "[[1, 2], [0, 1]]", "W_V": "[[2, 0], [0, 1]]"}


def problem(tmp, name, **keys):
    """A YAML problem file: the three tokens' matrices with ``keys`` changed (None: left out)."""
    body = {**THREE, **keys}
    f = tmp / name
    f.write_text("".join(f"{k}: {v}\n" for k, v in body.items() if v is not None), encoding="utf-8")
    return str(f)


def last_error(capsys, argv) -> str:
    assert main(argv) == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


def file_cases(tmp):
    """name: (problem file, the English message, values the Chinese line shows)."""
    f = {n: problem(tmp, f"{n}.yaml", **k) for n, k in {
        "w_rows": {"W_Q": "[[1, 0], [1, 1], [0, 1]]"},
        "missing": {"W_V": None},
        "scoring": {"scoring": "softmax"},
        "ragged": {"X": "[[1, 0], [0], [1, 1]]"},
        "not_number": {"W_K": "[[1, two], [0, 1]]"},
        "unknown_key": {"W_Z": "[[1]]"},
        "twice": {"wq": "[[1, 0], [1, 1]]"},
        "causal": {"causal": "maybe"},
        "mask_shape": {"mask": "[[1, 0], [1, 1]]"},
        "mask_entry": {"mask": "[[1, 0, 0], [1, 2, 0], [1, 1, 1]]"},
        "rope_base": {"rope": "{pairing: half}"},
        "kv_divide": {"W_Q": "[[1, 0, 1], [1, 1, 0]]", "n_heads": "3", "n_kv_heads": "2"},
        "tokens": {"tokens": "[a, b]"},
        "mh_refused": {"W_QKV": "[[1, 0, 1, 0, 1, 0], [0, 1, 0, 1, 0, 1]]", "W_Q": None, "W_K": None, "W_V": None,
                       "n_heads": "2", "head": "0"},
        "mh_wo": {"W_O": "[[1, 0], [0, 1], [1, 1]]", "n_heads": "2", "W_Q": "[[1, 0], [0, 1]]",
                  "W_K": "[[1, 0], [0, 1]]"},
    }.items()}
    (tmp / "list.json").write_text("[1, 2]", encoding="utf-8")
    f["top_level"] = str(tmp / "list.json")
    return {
        "w_rows": (f["w_rows"], f"{f['w_rows']}, key W_Q: W_Q has 3 rows but X has 2 columns; X·W_Q needs as many rows "
                   "in W_Q as columns in X", ["W_Q", "3 行", "2 列"]),
        "missing": (f["missing"], f"{f['missing']}: missing key W_V (X, W_Q, W_K and W_V are all needed)", ["W_V"]),
        "scoring": (f["scoring"], f"{f['scoring']}, key scoring: unknown scoring 'softmax'; choose one of scaled, "
                    "unscaled, inv_d, cosine, qknorm", ["'softmax'", "scaled, unscaled"]),
        "ragged": (f["ragged"], f"{f['ragged']}, key X, row 1 (from 0): has 1 entry but row 0 has 2; a matrix must be "
                   "rectangular", ["第 1 行", "1 个元素", "2"]),
        "not_number": (f["not_number"], f"{f['not_number']}, key W_K, row 0, column 1 (from 0): 'two' is not a number",
                       ["第 0 行第 1 列", "'two'"]),
        "unknown_key": (f["unknown_key"], f"{f['unknown_key']}: unknown key 'W_Z'; expected X, W_Q, W_K, W_V and "
                        "optionally W_O, mask, causal, scoring, temperature, tokens (or Q, K, V instead of X and W_*), "
                        "rope, n_heads, n_kv_heads, head, window, qk_norm, query_pre_attn_scalar", ["'W_Z'"]),
        "twice": (f["twice"], f"{f['twice']}: key 'wq' given twice (as W_Q)", ["'wq'", "W_Q"]),
        "causal": (f["causal"], f"{f['causal']}, key causal: expected true or false, got 'maybe'", ["'maybe'"]),
        "mask_shape": (f["mask_shape"], f"{f['mask_shape']}, key mask: the mask is 2×2 but there are 3 tokens; it must "
                       "be 3×3", ["2×2", "3×3"]),
        "mask_entry": (f["mask_entry"], f"{f['mask_entry']}, key mask, row 1, column 1 (from 0): a mask entry must be "
                       "1/true (may attend) or 0/false (blocked), got 2", ["1/true", "0/false", "2"]),
        "rope_base": (f["rope_base"], f"{f['rope_base']}, key rope: the rotary base is missing; write it as rope: "
                      "{base: 10000} (pair i turns by position · base^(−2i/d) radians)", ["{base: 10000}"]),
        "kv_divide": (f["kv_divide"], f"{f['kv_divide']}, key n_kv_heads: n_heads (3) is not a multiple of n_kv_heads "
                      "(2); each key/value head serves n_heads / n_kv_heads query heads, so n_kv_heads must divide "
                      "n_heads (e.g. 1, 3)", ["（3）", "（2）", "1, 3"]),
        "tokens": (f["tokens"], f"{f['tokens']}, key tokens: expected 3 token labels (one per row of X), got 2",
                   ["3", "2"]),
        "mh_refused": (f["mh_refused"], f"{f['mh_refused']}, key head: a multi-head calculation works every head; "
                       "remove head (or W_QKV/W_O to work one head)", ["head", "W_QKV/W_O"]),
        "mh_wo": (f["mh_wo"], f"{f['mh_wo']}, key W_O: W_O has 3 rows but the concatenated heads have n_heads × d_v = "
                  "2 × 1 = 2 columns; Concat·W_O needs one row of W_O per column", ["3 行", "2 × 1 = 2"]),
        "top_level": (f["top_level"], f"{f['top_level']}: the top level must be a mapping (key: value), got a list",
                      ["列表"]),
    }


FILE_CASES = ["w_rows", "missing", "scoring", "ragged", "not_number", "unknown_key", "twice", "causal", "mask_shape",
              "mask_entry", "rope_base", "kv_divide", "tokens", "mh_refused", "mh_wo", "top_level"]


@pytest.mark.parametrize("name", FILE_CASES)
def test_a_problem_file_error_in_chinese_and_in_english(capsys, tmp_path, name):
    path, english, values = file_cases(tmp_path)[name]
    assert last_error(capsys, ["explain", path]) == f"attnscope explain: error: {english}"
    line = last_error(capsys, ["explain", path, "--lang", "zh"])
    lead = "attnscope explain：错误："
    assert line.startswith(lead + path), line
    assert all(v in line for v in values), (line, values)
    assert english_words(line[len(lead):], path, *values, *CODE) == set(), line


def zh_of(call, english, values, *also):
    """Run ``call``; its error reads ``english``, and in Chinese shows ``values`` and no English words."""
    with pytest.raises(AttnscopeError) as info:
        call()
    assert str(info.value) == english and i18n.error_message(info.value, "en") == english
    zh = i18n.error_message(info.value, "zh")
    assert all(v in zh for v in values), (zh, values)
    assert english_words(zh, *values, *also, *CODE) == set(), zh
    return zh


def test_the_python_api_problem_errors_in_chinese():
    from attnscope.explain import explain, toy_problem
    from attnscope.explain.toy_numbers import check_finite

    zh_of(lambda: toy_problem(example="four-tokens"),
          "unknown example 'four-tokens'; choose one of grouped-query, multi-head, three-tokens",
          ["'four-tokens'", "grouped-query, multi-head, three-tokens"])
    zh_of(lambda: toy_problem({"X": [[1, 0]], "W_Q": [[1], [0]], "W_K": [[1], [0]], "W_V": "abc"}),
          "input, key W_V: expected a matrix (a list of rows), got str 'abc'", ["输入", "str", "'abc'"], "str")
    zh_of(lambda: toy_problem(X=[[1, 0]], W_Q=[[1], [0]], W_K=[[1], [0]], W_V=[[1], [0]], temperature=-1),
          "the given matrices, key temperature: the temperature must be positive, got -1.0", ["给出的矩阵", "-1.0"])
    zh_of(lambda: explain(example="three-tokens", lesson="history"),
          "unknown lesson 'history'; the lessons are: scaling, positions", ["'history'", "scaling、positions"])
    zh_of(lambda: explain(text="x", target=" "),
          "target is empty; give a sentence (the decoder's text), or leave target out to explain a row of the source",
          ["target"])
    zh_of(lambda: check_finite("scores", np.array([[1.0, np.inf]])),
          "input: float64 overflows in the step S = Q·Kᵀ (the raw scores): entry [0, 1] is inf; a worked calculation "
          "needs smaller inputs", ["S = Q·Kᵀ（原始分数）", "[0, 1]", "inf"])


CLI = {  # name: (argv after "explain", the English message, values the Chinese line shows)
    "t5_buckets": (["positions", "--scheme", "t5", "--buckets", "3"],
                   "buckets = 3 is too few or odd: T5 splits them in two halves (keys after and before the query), "
                   "then into exact and log buckets; give at least 4, an even number", ["buckets = 3", "T5", "4"]),
    "d_model_odd": (["positions", "--d-model", "7"], "d_model must be even (dimensions 2i and 2i + 1 are a sin and a "
                    "cos of the same angle), got 7", ["d_model", "2i", "2i + 1", "7"]),
    "d_k_odd": (["positions", "--scheme", "rotary", "--dk", "7"],
                "d_k must be even: rotary positions turn the features in pairs, got 7", ["7"]),
    "labels_scores": (["--scores", "1,2,3", "--labels", "a,b", "--dk", "4"],
                      "tokens: 2 labels for 3 scores; give one label per score", ["3 个分数", "2 个标签"]),
    "scores_entry": (["--scores", "1,x,3", "--dk", "4"], "--scores, entry 1 (from 0): 'x' is not a number",
                     ["--scores", "第 1 个元素", "'x'"]),
    "given_matrices": (["-X", "1,0;0,1", "--wq", "1,0;1,1;1,1", "--wk", "1,0;0,1", "--wv", "1,0;0,1"],
                       "the given matrices, key W_Q: W_Q has 3 rows but X has 2 columns; X·W_Q needs as many rows in "
                       "W_Q as columns in X", ["给出的矩阵", "3 行", "2 列"]),
}


@pytest.mark.parametrize("name", list(CLI))
def test_a_lesson_or_option_error_in_chinese_and_in_english(capsys, name):
    argv, english, values = CLI[name]
    assert last_error(capsys, ["explain", *argv]) == f"attnscope explain: error: {english}"
    line = last_error(capsys, ["explain", *argv, "--lang", "zh"])
    lead = "attnscope explain：错误："
    assert line.startswith(lead), line
    assert all(v in line for v in values), (line, values)
    assert english_words(line[len(lead):], *values, *CODE) == set(), line


def test_the_lessons_rows_and_options_in_chinese():
    from attnscope.explain.positions_lesson import explain_positions
    from attnscope.explain.render.base import check_options
    from attnscope.explain.row import explain_scores_row
    from attnscope.explain.scaling import explain_scaling

    zh_of(lambda: explain_positions("alibi"), "unknown position scheme 'alibi'; choose one of sinusoidal, rotary, t5",
          ["'alibi'", "sinusoidal, rotary, t5"])
    zh_of(lambda: explain_positions("t5", position=-2),
          "position (the query's) must be ≥ 0 (positions count from 0, the first token), got -2", ["position", "-2"])
    zh_of(lambda: explain_positions("t5", position=1, offset=-5),
          "offset -5 from query position 1 gives key position -4; positions are ≥ 0", ["-5", "1", "-4"])
    zh_of(lambda: explain_positions("rotary", d_model=8),
          "d_model (rotary turns each head's d_k features: give d_k) is not an option of the rotary lesson", [])
    zh_of(lambda: explain_scores_row([1, 2], d_k=4, values=[[1]]),
          "values: 1 row for 2 scores; give one V row per key", ["2 个分数", "1 行"], "values")
    zh_of(lambda: explain_scores_row([1e308, 1e308], factor=1e10),
          "scores: float64 overflows in the step S' (the scaled scores): entry [0] is inf; a worked calculation needs "
          "smaller inputs", ["S'（缩放后的分数）", "[0]", "inf"], "scores")
    zh_of(lambda: explain_scaling(vectors=[[1, 2], "x"]), "scores vector 1: expected a list of numbers, got str 'x'",
          ["分数向量 1", "'x'"], "str")
    zh_of(lambda: check_options("html", "en", 2), "unknown format 'html'; choose one of rich, markdown, latex, json",
          ["'html'", "rich, markdown, latex, json"], "rich", "markdown", "latex", "json")


def test_the_plot_and_reference_errors_in_chinese():
    from attnscope.plot import figures
    from attnscope.reference import arrays, layers, positions, steps

    zh_of(lambda: figures.softmax_temperatures([1, 2], labels=["a"]), "labels has 1 entry but x has 2",
          ["labels", "1 个元素", "2"], "labels")
    zh_of(lambda: figures.softmax_temperatures([1e308, 1], temperatures=[1e-10]),
          "x / T overflows float64 at T = 1e-10 (largest |x| is 1e+308); use a larger temperature or smaller scores",
          ["T = 1e-10", "1e+308"])
    zh_of(lambda: figures.score_histograms(d_k=10000, n=4000),
          "d_k = 10000 with n = 4000 is too large for the random experiment (n · d_k ≤ 16,777,216 and n ≤ 4000)",
          ["d_k = 10000", "n = 4000", "16,777,216"])
    zh_of(lambda: arrays.check_finite("scores", np.array([[1, np.nan, np.inf], [-np.inf, 0, 0]])),
          "scores has non-finite values (NaN ×1, +inf ×1, -inf ×1) in shape (2, 3), first at index (0, 1)",
          ["NaN ×1, +inf ×1, -inf ×1", "(2, 3)", "(0, 1)"], "scores")
    zh_of(lambda: layers.split_qkv(np.zeros((2, 7)), 2, 1),
          "the fused product has 7 columns, not a multiple of n_heads + 2·n_kv_heads = 4", ["7", "4"])
    zh_of(lambda: positions.rope_pairs(4, "x"), "unknown rotary pairing 'x'; choose one of half, adjacent",
          ["'x'", "half, adjacent"])
    zh_of(lambda: steps.operand_factor("cosine", 4),
          "cosine scoring divides by the model's learned temperature, which q and k do not carry; the scorings whose "
          "factor depends on d_k alone are scaled, unscaled, inv_d, qknorm", ["cosine", "scaled, unscaled, inv_d, qknorm"])


def test_a_t5_path_error_in_chinese_names_the_target_and_the_decoder(seq2seq):  # noqa: F811
    """The path through T5's decoder: a query position the target lacks (said of the target), a
    decoder layer out of range, cross-attention without a target."""
    from attnscope.explain import explain

    t5, source, target = seq2seq["t5"], "summarize: every token looks at every other token.", "Every token looks."
    listing = "0:<pad> 1:  2:E 3:ver 4:y 5: token 6: l 7:o 8:ok 9:s 10:. 11:</s>"  # the tiny T5's own pieces
    zh = zh_of(lambda: explain(model=t5, path=True, text=source, target=target, position=40),
               f"the target: position 40 is out of range: the text has 12 tokens (positions 0..11): {listing}",
               ["40", "12", "0..11", listing])
    assert zh.startswith("目标文本：位置 40 超出范围"), zh
    zh_of(lambda: explain(model=t5, path=True, text=source, target=target, layer=3),
          "decoder layer 3 is out of range: the model has 3 layers (0..2)", ["解码器层 3", "3", "0..2"])
    zh_of(lambda: explain(model=t5, path=True, text=source, attention="cross"),
          "the path through a decoder layer needs the target text (target=, --target): its tokens are the decoder's "
          "queries", ["target=", "--target"])
