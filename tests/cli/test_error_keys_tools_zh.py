"""Keyed errors of check, analyze, patch, view, experiment and the command line itself under
``--lang zh`` (issue 25): the mistakes a learner makes most — an answers file with a matrix of
the wrong shape, a row that is not a list, a word for a number, a step or key missing, a problem
that is not a mapping, a head out of range, one student given twice; a bad option to analyze,
patch, view or experiment — come out in Chinese with the same values (paths, numbers, keys) and no
English words, and the English line is byte for byte what it was before the errors were keyed."""

from dataclasses import fields

import pytest

from attnscope import i18n
from attnscope.analysis.classify import Thresholds
from attnscope.errors import AttnscopeError
from tests.cli.test_error_keys_zh import english_words, err

#: The problem's own code words (keys of the answers file) that stay as written in Chinese.
CODE = ("three-tokens", "X/W_Q/W_K/W_V", "text/layer/head/token", "scores", "example", "weights: [[…], …]",
        "'problem'", "'answers'", "problem", "answers")

#: analyze --threshold's names, as its error lists them.
THRESHOLDS = ", ".join(f.name for f in fields(Thresholds))

HEAD = "problem:\n  example: three-tokens\nanswers:\n"
ANSWERS = {  # file name: its text
    "rows.yaml": HEAD + "  weights: [[0.1, 0.2, 0.7], [0.3, 0.3, 0.4]]\n",
    "rowlen.yaml": HEAD + "  weights: [[0.1, 0.2, 0.7], [0.3, 0.3], [0.1, 0.2, 0.7]]\n",
    "rowkind.yaml": HEAD + "  weights: [[0.1, 0.2, 0.7], 5, [0.1, 0.2, 0.7]]\n",
    "scalar.yaml": HEAD + "  weights: 0.5\n",
    "word.yaml": HEAD + "  weights: [[0.1, 0.2, 0.7], [0.3, abc, 0.4], [0.1, 0.2, 0.7]]\n",
    "noanswers.yaml": "problem:\n  example: three-tokens\n",
    "top.yaml": HEAD + "  weights:\nextra: 1\n",
    "problist.yaml": "problem: [1, 2]\nanswers:\n  weights:\n",
    "alone.yaml": "problem: {example: three-tokens, X: 1}\nanswers:\n  weights:\n",
    "ansstr.yaml": "problem: {example: three-tokens}\nanswers: hello\n",
    "mh_head.yaml": "problem: {example: multi-head}\nanswers:\n  head 7:\n    weights: [[1]]\n",
    "mh_section.yaml": "problem: {example: multi-head}\nanswers:\n  head 0: 3\n",
    "mh_rows.yaml": "problem: {example: multi-head}\nanswers:\n  head 1:\n    weights: [[0.5, 0.5, 0]]\n",
}


def cli_cases(tmp):
    f = {name: str(tmp / name) for name in ANSWERS}
    return {
        # name: (argv, the values the Chinese line must show, the English line's message)
        "check_rows": (["check", f["rows.yaml"]], [f["rows.yaml"], "weights", "3", "2"],
                       f"{f['rows.yaml']}, key weights: expected 3 rows (one per token), got 2"),
        "check_row_len": (["check", f["rowlen.yaml"]], [f["rowlen.yaml"], "weights", "1", "3", "2"],
                          f"{f['rowlen.yaml']}, key weights, row 1 (from 0): expected 3 numbers, got 2"),
        "check_row_kind": (["check", f["rowkind.yaml"]], [f["rowkind.yaml"], "weights", "1", "3", "5"],
                           f"{f['rowkind.yaml']}, key weights, row 1 (from 0): expected a row of 3 numbers, "
                           "got the number 5"),
        "check_scalar": (["check", f["scalar.yaml"]], [f["scalar.yaml"], "weights", "3", "0.5"],
                         f"{f['scalar.yaml']}, key weights: expected 3 rows of 3 numbers, got the number 0.5"),
        "check_word": (["check", f["word.yaml"]], [f["word.yaml"], "weights", "'abc'"],
                       f"{f['word.yaml']}, key weights, row 1, column 1 (from 0): 'abc' is not a number"),
        "check_missing": (["check", f["noanswers.yaml"]], [f["noanswers.yaml"], "'answers'", "'problem'"],
                          f"{f['noanswers.yaml']}: missing key 'answers'; an answers file has 'problem' (what is "
                          "calculated) and 'answers' (your numbers)"),
        "check_top_key": (["check", f["top.yaml"]], [f["top.yaml"], "'extra'"],
                          f"{f['top.yaml']}: unknown top-level key 'extra'; expected problem and answers"),
        "check_problem_list": (["check", f["problist.yaml"]], [f["problist.yaml"]],
                               f"{f['problist.yaml']}, key problem: expected a mapping (example: three-tokens, or "
                               "X/W_Q/W_K/W_V, or scores, or text/layer/head/token), got a list"),
        "check_alone": (["check", f["alone.yaml"]], [f["alone.yaml"], "'example'", "'X'"],
                        f"{f['alone.yaml']}, key problem: 'example' stands alone; remove 'X'"),
        "check_answers_str": (["check", f["ansstr.yaml"]], [f["ansstr.yaml"], "str", "'hello'"],
                              f"{f['ansstr.yaml']}, key answers: expected a mapping such as 'weights: [[…], …]', "
                              "got str 'hello'"),
        "check_mh_head": (["check", f["mh_head.yaml"]], [f["mh_head.yaml"], "head 7", "2", "0..1"],
                          f"{f['mh_head.yaml']}, key head 7: head 7 is out of range; there are 2 heads (0..1)"),
        "check_mh_section": (["check", f["mh_section.yaml"]], [f["mh_section.yaml"], "head 0", "scores: …, weights: …", "3"],
                             f"{f['mh_section.yaml']}, key head 0: expected the head's steps as a mapping "
                             "(scores: …, weights: …), got the number 3"),
        "check_mh_rows": (["check", f["mh_rows.yaml"]], [f["mh_rows.yaml"], "weights", "3", "1"],
                          f"{f['mh_rows.yaml']}, head 1, key weights: expected 3 rows (one per token), got 1"),
        "cli_explain_not_a_file": (["explain", "我喜欢人工智能"], ["'我喜欢人工智能'", "attnscope explain --text"],
                                   "there is no file '我喜欢人工智能'; to explain a text, give it with --text: "
                                   "attnscope explain --text '我喜欢人工智能'"),
        "cli_explain_nothing": (["explain"], ["--example three-tokens", "-X/--wq/--wk/--wv", "--text", "--scores",
                                              "'scaling'"],
                                "nothing to explain: give an input file, --example three-tokens, -X/--wq/--wk/--wv, "
                                "--text (a real model), --scores, or 'scaling'"),
        "cli_explain_positions": (["explain", "--example", "three-tokens", "--scheme", "rotary"],
                                  ["--scheme", "'attnscope explain positions'"],
                                  "--scheme is an option of 'attnscope explain positions'"),
        "cli_explain_scores": (["explain", "--scores", "1 2", "--scores", "3 4"], ["--scores", "'explain scaling'"],
                               "--scores: give one row of scores here (several only with 'explain scaling')"),
        "cli_patch_suffix": (["patch", "--clean", "a b", "--corrupted", "a c", "--answer", "b", "--wrong", "c", "-o",
                              str(tmp / "p.txt")], ["'p.txt'", ".png", ".svg", ".pdf", ".json"],
                             "cannot tell what to write to 'p.txt': use .png, .svg, .pdf (the figure) or "
                             ".json (the numbers)"),
        "cli_patch_folder": (["patch", "--clean", "a b", "--corrupted", "a c", "--answer", "b", "--wrong", "c", "-o",
                              str(tmp / "none" / "p.png")], [repr(str(tmp / "none" / "p.png")), repr(str(tmp / "none"))],
                             f"cannot write {str(tmp / 'none' / 'p.png')!r}: the folder {str(tmp / 'none')!r} "
                             "does not exist"),
        "cli_generate_view": (["generate", "hi", "--view", str(tmp)], [str(tmp), "gen.html"],
                              f"--view {tmp}: give a file name in an existing folder, such as gen.html"),
        "analyze_threshold": (["analyze", str(tmp / "rows.yaml"), "--threshold", "wide=0.3", "--no-progress"],
                              ["--threshold", "NAME=VALUE", "NAME", "'wide=0.3'", THRESHOLDS],
                              f"--threshold expects NAME=VALUE with NAME one of {THRESHOLDS}, got 'wide=0.3'"),
        "experiment_from_nothing": (["experiment", "training", "--from", str(tmp)], [repr(str(tmp)), "results.json"],
                                    f"no results.json in {str(tmp)!r} to re-render"),
        "cli_experiment_option": (["experiment", "variance", "--rows", "4"], ["--rows", "'variance'", "saturation"],
                                  "option --rows does not apply to experiment 'variance' (it is for saturation)"),
    }


CLI = ["check_rows", "check_row_len", "check_row_kind", "check_scalar", "check_word", "check_missing",
       "check_top_key", "check_problem_list", "check_alone", "check_answers_str", "check_mh_head",
       "check_mh_section", "check_mh_rows", "cli_explain_not_a_file",
       "cli_explain_nothing", "cli_explain_positions", "cli_explain_scores",
       "cli_patch_suffix", "cli_patch_folder", "cli_generate_view", "cli_experiment_option", "analyze_threshold",
       "experiment_from_nothing"]


def write(tmp):
    for name, body in ANSWERS.items():
        (tmp / name).write_text(body, encoding="utf-8")


@pytest.mark.parametrize("name", CLI)
def test_the_error_in_chinese_keeps_its_values_and_no_english_words(capsys, tmp_path, name):
    write(tmp_path)
    argv, values, _ = cli_cases(tmp_path)[name]
    line = err(capsys, [*argv, "--lang", "zh"])
    lead = f"attnscope {argv[0]}：错误："
    assert line.startswith(lead), line
    assert all(v in line for v in values), (line, values)
    assert english_words(line[len(lead):], *values, *CODE) == set(), line


@pytest.mark.parametrize("name", CLI)
def test_the_english_line_is_as_before(capsys, tmp_path, name):
    write(tmp_path)
    argv, _, english = cli_cases(tmp_path)[name]
    assert err(capsys, argv) == f"attnscope {argv[0]}: error: {english}"


def raised(call) -> AttnscopeError:
    with pytest.raises(AttnscopeError) as info:
        call()
    return info.value


def api_cases(tmp):
    """Errors the Python API raises (no command reaches them, or not in this form):
    (call, English, values the Chinese shows)."""
    import torch

    import attnscope
    from attnscope import experiments
    from attnscope.analysis.accumulate import StatsAccumulator
    from attnscope.analysis.corpus import CorpusReader
    from attnscope.analysis.seq2seq import split_pair
    from attnscope.analysis.stats import check_inputs
    from attnscope.check import classroom, report
    from attnscope.experiments.base import check_int_list
    from attnscope.viewer.data import MAX_DECIMALS, build

    (tmp / "a").mkdir()
    (tmp / "b").mkdir()
    (tmp / "a" / "ann.yaml").write_text(ANSWERS["top.yaml"], encoding="utf-8")
    (tmp / "b" / "ann.yaml").write_text(ANSWERS["top.yaml"], encoding="utf-8")
    a, b = repr(str(tmp / "a" / "ann.yaml")), repr(str(tmp / "b" / "ann.yaml"))
    good = attnscope.check(example="three-tokens-article")
    return {
        "check_example_both": (lambda: attnscope.check({"answers": {}}, example="three-tokens-article"),
                               "give an answers file or an example, not both", []),
        "check_unknown_example": (lambda: attnscope.check(example="nope"),
                                  "unknown example 'nope'; choose one of three-tokens-article, xi-row-article",
                                  ["'nope'", "three-tokens-article, xi-row-article"]),
        "check_answers_type": (lambda: attnscope.check(3), "answers must be a file path or a mapping, got int",
                               ["answers", "int"]),
        "check_student_twice": (lambda: classroom.answer_files([tmp / "a" / "ann.yaml", tmp / "b" / "ann.yaml"]),
                                f"two files for the student 'ann': {a} and {b}; the student's name is the file's "
                                "stem, so give each student one file", ["'ann'", a, b]),
        "check_format": (lambda: report.render(good, format="pdf"),
                         "unknown format 'pdf' for check; choose one of " + ", ".join(report.FORMATS),
                         ["check", "'pdf'", ", ".join(report.FORMATS)]),
        "check_dk": (lambda: attnscope.check({"problem": {"scores": [1, 2], "d_k": -1}, "answers": {"weights": None}}),
                     "answers, key problem.d_k: expected a positive integer, got -1", ["answers", "d_k", "-1"]),
        "analysis_pair_no_tab": (lambda: split_pair("no tab here", "corpus.tsv:3"),
                                 "corpus.tsv:3: a parallel corpus line is 'source<TAB>target'; this line has no tab "
                                 "between two texts (a target without its source, or a source without its target?)",
                                 ["corpus.tsv:3", "'source<TAB>target'"]),
        "analysis_weights_self": (lambda: check_inputs(torch.zeros(1, 2, 3, 4), torch.ones(1, 3), {}),
                                  "weights must be self-attention weights (B, H, L, L), got (1, 2, 3, 4)",
                                  ["weights", "(B, H, L, L)", "(1, 2, 3, 4)"]),
        "analysis_merge": (lambda: StatsAccumulator(2, 4, ["to_self"]).merge(StatsAccumulator(3, 4, ["to_self"])),
                           "cannot merge accumulators of (3 layers, 4 heads) into (2, 4) or with different "
                           "statistics", ["3", "4", "(2, 4)"]),
        "analysis_threshold_range": (lambda: Thresholds(broad=1.5), "threshold broad must be a number in [0, 1], "
                                     "got 1.5", ["broad", "[0, 1]", "1.5"]),
        "viewer_decimals": (lambda: build([], decimals=99), f"decimals must be an integer in 0..{MAX_DECIMALS}, got 99",
                            ["decimals", f"0..{MAX_DECIMALS}", "99"]),
        "viewer_no_trace": (lambda: build([]), "no trace to show", ["trace"]),
        "experiment_unknown": (lambda: experiments.get("nope"),
                               "unknown experiment 'nope'; choose from " + ", ".join(experiments.EXPERIMENTS),
                               ["'nope'", ", ".join(experiments.EXPERIMENTS)]),
        "experiment_range": (lambda: check_int_list("d_ks", [0], high=4),
                             "d_ks: 0 is out of range (at least 1, at most 4)", ["d_ks", "0", "1", "4"]),
        "experiment_duplicates": (lambda: check_int_list("d_ks", [2, 2]), "d_ks has duplicates: [2, 2]",
                                  ["d_ks", "[2, 2]"]),
        "analysis_unit": (lambda: CorpusReader(tmp, unit="page"), "unit must be one of line, paragraph, file, got "
                          "'page'", ["unit", "line, paragraph, file", "'page'"]),
    }


API = ["check_example_both", "check_unknown_example", "check_answers_type", "check_student_twice", "check_format",
       "check_dk", "analysis_pair_no_tab", "analysis_weights_self", "analysis_merge", "analysis_threshold_range",
       "analysis_unit", "viewer_decimals", "viewer_no_trace", "experiment_unknown", "experiment_range",
       "experiment_duplicates"]


@pytest.mark.parametrize("name", API)
def test_a_python_error_in_chinese_and_in_english(tmp_path, name):
    call, english, values = api_cases(tmp_path)[name]
    e = raised(call)
    assert str(e) == english and i18n.error_message(e, "en") == english
    zh = i18n.error_message(e, "zh")
    assert zh != english and all(v in zh for v in values), (zh, values)
    assert english_words(zh, *values, *CODE) == set(), zh


# --- patch: a tiny GPT-2 (2 layers, 4 heads) and the prompts of tests/patching/test_cli.py -------
CLEAN = "I like cats. I like dogs. Cats and dogs like"
CORRUPTED = "I like dogs. I like cats. Cats and dogs like"


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    from attnscope.testing import tiny as testing
    return testing.tiny_gpt2(tmp_path_factory.mktemp("gpt2"))


def patch_argv(gpt2_dir, **change):
    args = {"--clean": CLEAN, "--corrupted": CORRUPTED, "--answer": " cats", "--wrong": " dogs",
            "--model": str(gpt2_dir), **change}
    return ["patch", *[x for kv in args.items() for x in kv], "--no-progress"]


PATCH = {  # name: (change to the options, values the Chinese shows, the English message)
    "patch_not_one_token": ({"--answer": "cat"}, ["'cat'", "2", "'c' | 'at'"],
                            "the answer 'cat' is 2 tokens ('c' | 'at'), not one: the metric reads the logit of a "
                            "single token. Choose a word that is one token."),
    "patch_same_token": ({"--wrong": " cats"}, ["' cats'", "id"],
                         None),
    "patch_not_a_layer": ({"--layers": "7"}, ["layers", "7", "2", "0..1"],
                          "layers: 7 is not a layer; the model has 2 (0..1)"),
}


@pytest.mark.parametrize("name", list(PATCH))
def test_patch_in_chinese_and_in_english(gpt2_dir, capsys, name):
    change, values, english = PATCH[name]
    line = err(capsys, patch_argv(gpt2_dir, **change))
    assert line.startswith("attnscope patch: error: "), line
    if english is not None:
        assert line == "attnscope patch: error: " + english
    zh = err(capsys, [*patch_argv(gpt2_dir, **change), "--lang", "zh"])
    lead = "attnscope patch：错误："
    assert zh.startswith(lead) and all(v in zh for v in values), (zh, values)
    assert english_words(zh[len(lead):], *values, "logit") == set(), zh


def test_patch_prompts_of_different_lengths_in_chinese(gpt2_dir):
    """The one error of several lines: every line in Chinese, the token lists as they were."""
    from attnscope.errors import InputError
    from attnscope.patching import patch

    with pytest.raises(InputError) as info:
        patch(str(gpt2_dir), CLEAN, "I like dogs. Cats and dogs like", " cats", " dogs")
    english = str(info.value)
    assert english.startswith("the clean and corrupted prompts tokenize to different lengths (12 vs 8 tokens); "
                              "patching copies activations position by position, so both need the same number of "
                              "tokens.\n  clean     (12): 'I' | ' like' | ' cats'")
    assert "\n  corrupted (8): 'I' | ' like' | ' dogs'" in english and "They first differ at position 2 " \
        "(' cats' vs ' dogs'). Fix: replace each word" in english
    zh = i18n.error_message(info.value, "zh")
    assert zh.count("\n") == english.count("\n") == 3
    assert "\n  干净（12）：'I' | ' like' | ' cats'" in zh and "位置 2 开始不同（' cats' 对 ' dogs'）" in zh, zh
    tokens = [x for ln in english.splitlines()[1:3] for x in ln.split(": ", 1)[1].split(" | ")]
    assert english_words(zh, *tokens) == set(), zh


def test_view_target_for_a_one_text_model_in_chinese(tmp_path, capsys):
    from attnscope.testing import tiny
    folder = tiny.BUILDERS["bert-chinese"](tmp_path / "bert")
    argv = ["view", "我喜欢", "--target", "b", "--model", str(folder), "-o", str(tmp_path / "x.html")]
    line = err(capsys, argv)
    assert line.startswith("attnscope view: error: --target is the decoder's text of an encoder–decoder model (T5, "
                           "BART); ") and line.endswith(" reads one text: leave --target out"), line
    name = line.split("BART); ")[1].split(" (")[0]
    zh = err(capsys, [*argv, "--lang", "zh"])
    lead = "attnscope view：错误："
    assert zh.startswith(lead) and "--target" in zh and name in zh and "T5、BART" in zh, zh
    assert english_words(zh[len(lead):], name, "bert", "BART") == set(), zh
