"""``attnscope patch --lang zh`` and ``attnscope generate --lang zh``: the printed lines in Chinese,
with the English lines' numbers and no English prose left; English unchanged."""

import io
import re
from contextlib import redirect_stderr, redirect_stdout

import pytest

import attnscope
from attnscope.cli import main
from attnscope.patching import patch
from tests.analysis.test_report_zh import cjk_space, english_words, numbers
from tests.models.decoders.tiny import llama_gqa
from tests.patching.test_cli import CLEAN, CORRUPTED, gpt2_dir  # noqa: F401  (gpt2_dir: a fixture)


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def patch_lines(gpt2_dir, tmp_path, lang, *extra):
    js = tmp_path / f"{lang}.json"
    rc, out, _ = run(["patch", "--clean", CLEAN, "--corrupted", CORRUPTED, "--answer", " cats", "--wrong", " dogs",
                      "--model", str(gpt2_dir), "--no-progress", "--top", "4", "-o", str(js), "--lang", lang, *extra])
    assert rc == 0
    return out.replace(str(js), "OUT.json"), js.read_text(encoding="utf-8")


def prose(text):
    """``text`` without the tokens' reprs ('…') and the file names the test gave."""
    return re.sub(r"'[^']*'", " ", text).replace("OUT.json", " ")


@pytest.mark.parametrize("extra", [(), ("--what", "residual", "--site", "resid_mid")])
def test_patch_lang_zh(gpt2_dir, tmp_path, extra):
    en, en_json = patch_lines(gpt2_dir, tmp_path, "en", *extra)
    zh, zh_json = patch_lines(gpt2_dir, tmp_path, "zh", *extra)
    assert zh_json == en_json  # the numbers do not depend on the language
    assert numbers(zh, "gpt2") == numbers(en, "gpt2")
    assert english_words(prose(zh), "gpt2", "logit", "resid_mid") == set()
    assert english_words(prose(en), "gpt2")  # the guard reads the English lines
    assert cjk_space(zh) == []
    assert "两个提示在位置 2 (' cats' → ' dogs')，6 (' dogs' → ' cats') 不同" in zh and "已写入 OUT.json" in zh
    assert ("最强的头（层.头），归一化：" in zh) == (not extra)
    assert "  the prompts differ at positions 2 (' cats' → ' dogs'), 6 (' dogs' → ' cats')" in en.splitlines()


def test_patch_note_when_the_prompts_agree(gpt2_dir, tmp_path):
    """The undefined normalised score: English says PatchResult.note() word for word, Chinese its own."""
    r = patch(attnscope.load(gpt2_dir), CLEAN, CLEAN, " cats", " dogs")
    en, _ = patch_lines(gpt2_dir, tmp_path, "en", "--corrupted", CLEAN)
    zh, _ = patch_lines(gpt2_dir, tmp_path, "zh", "--corrupted", CLEAN)
    assert f"  note: {r.note()}" in en.splitlines() and "  the prompts are the same tokens" in en.splitlines()
    assert "归一化分数没有定义" in zh and "两个提示的 token 完全相同" in zh and "原始度量：" in zh
    assert numbers(zh, "gpt2") == numbers(en, "gpt2")
    assert english_words(prose(zh), "gpt2", "logit") == set()


def figure_words(fig):
    """The figure's title, axis labels, colour-bar label and footnote."""
    ax, cbar = fig.axes[0], fig.axes[1]
    return [ax.get_title("left"), ax.get_xlabel(), ax.get_ylabel(), cbar.get_ylabel(), fig._supxlabel.get_text()]


@pytest.mark.parametrize("corrupted,what", [(CORRUPTED, "heads"), (CLEAN, "residual")])
def test_patch_figure_in_chinese(gpt2_dir, corrupted, what):
    """The figure's words in Chinese, its numbers as in English; English as it was written."""
    r = patch(attnscope.load(gpt2_dir), CLEAN, corrupted, " cats", " dogs", what=what, layers=[1])
    en, zh = figure_words(r.figure()), figure_words(r.figure(lang="zh"))
    if what == "heads":
        assert en[:3] == [f"{r.model_name} · activation patching of head outputs z (each head, all positions)\nclean: {CLEAN!r}\n"
                          f"corrupted: {corrupted!r}", "head", "layer"]
        assert en[3] == f"({r.metric}: patched − corrupted) / (clean − corrupted)"
        assert zh[:3] == [f"{r.model_name} · 激活修补：头的输出 z（每个头，所有位置）\n干净提示：{CLEAN!r}\n"
                          f"损坏提示：{corrupted!r}", "头", "层"]
    else:  # the prompts agree: the raw metric and the note
        assert en[4] == f"{r.metric}: clean {r.clean:.3f}, corrupted {r.corrupted:.3f} · {r.note()}"
        assert en[3] == f"{r.metric} after the patch" and "归一化分数没有定义" in zh[4]
    for e, z in zip(en, zh):
        assert numbers(z, r.model_name) == numbers(e, r.model_name)
        assert english_words(prose(z), r.model_name, "logit", "resid_pre") == set() and cjk_space(z) == []


def test_generate_lang_zh(tmp_path_factory):
    folder = llama_gqa(tmp_path_factory.mktemp("gen") / "llama")
    out = {}
    for lang in ("en", "zh"):
        page = tmp_path_factory.mktemp(lang) / "gen.html"
        rc, stdout, stderr = run(["generate", "Queries and keys are", "--model", str(folder), "--max-new-tokens", "6",
                                  "--view", str(page), "--lang", lang])
        assert rc == 0
        out[lang] = stdout, stderr.replace(str(page), "PAGE")
        assert f'<html lang="{"zh-CN" if lang == "zh" else "en"}">' in page.read_text(encoding="utf-8")
    assert out["zh"][0] == out["en"][0]  # the generated text itself
    # this tiny llama's 6 tokens end inside a character: both notes come
    assert re.fullmatch(r"\(the generation stopped inside a character: the first bytes of that character are not "
                        r"shown\)\nwrote PAGE \(\d+ KB\); open it in a browser\n", out["en"][1])
    assert re.fullmatch(r"（生成停在一个字符中间：这个字符的前几个字节没有显示）\n已写入 PAGE（\d+ KB）；请在浏览器中打开\n",
                        out["zh"][1])
    assert numbers(out["zh"][1]) == numbers(out["en"][1])


def test_the_wrote_line_of_each_command_in_chinese(tmp_path):
    """plot, view, explain -o, check --summary and experiment said 'wrote …' in English under --lang zh
    (the catalogue has 已写入 for the same words: generate, lens and patch say it); English unchanged."""
    from tests.cli.test_error_keys_zh import testing
    bert = str(testing.tiny_bert_chinese(tmp_path / "bert"))
    answers = tmp_path / "class"
    answers.mkdir()
    for name in ("a", "b"):
        (answers / f"{name}.yaml").write_text("problem:\n  example: three-tokens\nanswers:\n  Q: [[1, 0], [1, 1], [2, 1]]\n",
                                              encoding="utf-8")
    lines = {}
    for lang in ("en", "zh"):
        o = tmp_path / lang
        o.mkdir()
        cmds = {"plot": ["plot", "--kind", "softmax", "--scores", "1,2,3", "-o", str(o / "t.png")],
                "view": ["view", "我喜欢", "--model", bert, "-o", str(o / "v.html")],
                "explain": ["explain", "--example", "three-tokens", "-o", str(o / "e.txt")],
                "check": ["check", str(answers), "--summary", str(o / "s.csv")],
                "experiment": ["experiment", "variance", "--quick", "--no-progress", "--out", str(o / "var")]}
        for name, argv in cmds.items():
            rc, out, err = run(argv + ["--lang", lang])
            assert rc == 0, (name, lang, err)
            lines[lang, name] = (out + err).replace(str(o), "OUT")
    assert re.search(r"^wrote OUT/t\.png \(\d+ KB\)$", lines["en", "plot"], re.M)
    assert re.search(r"^已写入 OUT/t\.png（\d+ KB）$", lines["zh", "plot"], re.M)
    assert re.search(r"^wrote OUT/v\.html \(\d+ KB\); open it in a browser$", lines["en", "view"], re.M)
    assert re.search(r"^已写入 OUT/v\.html（\d+ KB）；请在浏览器中打开$", lines["zh", "view"], re.M)
    for name, file in (("explain", "e.txt"), ("check", "s.csv")):
        assert f"wrote OUT/{file}\n" in lines["en", name] and f"已写入 OUT/{file}\n" in lines["zh", name]
    assert re.search(r"^variance: \d+\.\d s; wrote 6 files to OUT/var/ \(report: OUT/var/report\.md\)$",
                     lines["en", "experiment"], re.M)
    assert re.search(r"^variance：\d+\.\d 秒；已把 6 个文件写入 OUT/var/（报告：OUT/var/report\.md）$",
                     lines["zh", "experiment"], re.M)
    for name in ("plot", "view", "explain", "check", "experiment"):
        assert "wrote" not in lines["zh", name], name
