"""``attnscope analyze --lang zh``: report.md and the printed summary in Chinese, with the English
report's numbers, no English prose left, and the English report unchanged."""

import io
import re
from contextlib import redirect_stdout

import pytest

import attnscope
from attnscope import i18n
from attnscope.analysis import analyze
from attnscope.analysis.classify import FAMILY, LABELS
from attnscope.analysis.cross_stats import CROSS_DOCS, CROSS_STATS
from attnscope.analysis.decoder_heads import DECODER_DOCS, DECODER_STATS, ROLE_STAT
from attnscope.analysis.report import markdown
from attnscope.analysis.seq2seq import analyze_seq2seq, report_markdown
from attnscope.analysis.stats import STAT_DOCS, STAT_NAMES
from attnscope.analysis.summary import claim_sentence, verdict
from attnscope.cli import main
from attnscope.cli.analyze import print_summary
from attnscope.testing import tiny as testing
from tests.models.seq2seq.fixtures import seq2seq_dirs  # noqa: F401

# a line too long for --max-length 12, an empty line, a line that is not UTF-8: every "left out" note
CORPUS = (b"The cat sat on the mat, and then it sat on the other mat for a very long time indeed.\n\n"
          b"Heads attend to the previous token, or to [SEP].\nnot \x80 fine\nLower layers local; higher layers global?\n"
          b"I like cats.\n")

#: Names that stay as they are in every language: heads.csv's columns, the labels, roles and scores;
#: and "token", the word attnscope's Chinese output uses (docs/zh/tutorial/tokens.md: 词元 is only its gloss).
IDENTIFIERS = {*STAT_NAMES, *CROSS_STATS, *LABELS, *ROLE_STAT, *DECODER_STATS, "nan", "Spearman", "Olsson", "UTF", "utf",
               "token"}
CJK = "\u3400-\u9fff\uf900-\ufaff"


def english_words(text: str, *also: str) -> set:
    """The English words of ``text`` outside code, links, options, identifiers and ``also`` (paths,
    the model's name): a Chinese report has none."""
    for x in also:
        text = text.replace(x, " ")
    text = re.sub(r"`[^`]*`|!?\[[^\]]*\]\([^)]*\)|--[\w-]+|\w+\.(?:png|csv|json|md)|heatmaps/", " ", text)
    words = re.findall(r"[A-Za-z][A-Za-z_\-]*[A-Za-z]", text)
    return {w for w in words if len(w) >= 3 and w not in IDENTIFIERS}


def numbers(text: str, *also: str) -> list:
    """The numbers of ``text`` (``also`` left out: paths, the model's name), sorted."""
    for x in also:
        text = text.replace(x, " ")
    return sorted(re.findall(r"[-+]?\d+(?:,\d{3})*(?:\.\d+)?(?:e[-+]?\d+)?", text))


def cjk_space(text: str) -> list:
    """Places where an ASCII space stands between two CJK characters."""
    return re.findall(f"[{CJK}] +[{CJK}]", text)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    f = tmp_path_factory.mktemp("zh") / "c.txt"
    f.write_bytes(CORPUS)
    return f


@pytest.fixture(scope="module")
def encoder(corpus):
    return analyze(str(corpus), None, importance_texts=2, max_length=12, on_decode_error="skip", progress=False)


@pytest.fixture(scope="module")
def decoder(corpus, tmp_path_factory):
    model = attnscope.load(testing.tiny_gpt2(tmp_path_factory.mktemp("gpt2")))
    from attnscope.analysis import AnalysisConfig, Thresholds
    cfg = AnalysisConfig(importance_texts=2, induction_seqs=4, induction_length=10, on_decode_error="skip",
                         thresholds=Thresholds.parse(["induction=0.05"]), progress=False)
    return analyze(str(corpus), model, cfg)


def printed(result, lang):
    buf = io.StringIO()
    with redirect_stdout(buf):
        print_summary(result, "out", 12, lang)
    return buf.getvalue()


@pytest.mark.parametrize("which", ["encoder", "decoder"])
def test_the_chinese_report_has_the_english_numbers_and_no_english_prose(which, request, corpus):
    r = request.getfixturevalue(which)
    for en, zh in [(markdown(r, "en"), markdown(r, "zh")), (printed(r, "en"), printed(r, "zh"))]:
        assert numbers(zh, str(corpus), r.model_name) == numbers(en, str(corpus), r.model_name)
        assert english_words(zh, str(corpus), r.model_name, "[CLS]", "[SEP]", "out/") == set()
        assert english_words(en, str(corpus), r.model_name, "[CLS]", "[SEP]")  # the guard sees English
        prose = [line for line in zh.splitlines() if "[CLS]  [SEP]" not in line]  # not the aligned header
        assert cjk_space("\n".join(prose)) == []
    zh = markdown(r, "zh")
    assert "# 注意力头分析" in zh and "## 低层局部、高层全局？" in zh and "**结论：" in zh and "略去：" in zh
    assert "字节 80（第 4 个字节处）不是有效的 utf-8" in zh
    assert ("## 解码器的头" in zh and "**induction 头（" in zh and "前面是空（分词器不加特殊 token）" in zh) == \
        (which == "decoder")


def test_the_english_report_reads_as_before(encoder, decoder):
    """English wording pinned where users and docs quote it (the rest is checked against Chinese above)."""
    en = markdown(encoder, "en")
    assert "Corpus `" in en and "(one text per line): **4 texts, 40 tokens** in 1 batch of ≤ 32 texts; 6 layers × " \
        "12 heads; 1 process," in en
    assert "Left out: 2 texts longer than 12 tokens were truncated (13 tokens cut); 1 line was not valid UTF-8 and " \
        "skipped (listed at the end); 1 empty text was skipped." in en
    assert "| statistic | claim predicts | ρ (heads) | p | ρ (layer means) | p | reading |" in en
    assert f"**Verdict: {encoder.summary['claim']}.**" in en
    dec = printed(decoder, "en")
    assert "induction heads (induction ≥ 0.05): " in dec and "sink heads (sink ≥ 0.5): " in dec


def test_verdicts_and_claims_in_both_languages():
    nan = float("nan")
    t = lambda rho, p: {"rho_heads": rho, "p_heads": p}  # noqa: E731
    assert verdict("to_local", t(-0.5, 0.001)) == "to_local falls with depth (ρ = -0.50, p = 0.001): supports the claim"
    assert verdict("to_local", t(-0.5, 0.001), lang="zh") == "to_local 随深度下降（ρ = -0.50，p = 0.001）：支持这一说法"
    assert verdict("distance", t(0.3, 0.5)) == "distance: no significant trend with depth (ρ = +0.30, p = 0.5)"
    assert verdict("distance", t(nan, nan), lang="zh") == "distance：无法计算趋势"
    both = {"distance": t(0.5, 0.01), "distance_content": t(0.5, 0.01)}
    assert claim_sentence(both).startswith("supported: ") and claim_sentence(both, lang="zh").startswith("得到支持：")
    down = {"distance": t(-0.5, 0.01), "distance_content": t(0.1, 0.5)}
    assert claim_sentence(down, lang="zh") == "与之相反：注意力随深度变得更局部"


def test_the_tables_english_docs_are_the_statistics_own():
    """The heatmaps' English titles come from the table: they must stay the statistics' docs."""
    en = i18n.TABLES["analysis"]["en"]
    assert {k: en[f"analysis.doc_{k}"] for k in STAT_DOCS} == STAT_DOCS
    assert en["analysis.dec_doc_sink"] == DECODER_DOCS["sink"]
    assert {k: en[f"analysis.cross_doc_{k}"] for k in CROSS_DOCS} == CROSS_DOCS
    assert {en["analysis.family_" + f.replace("/", "_")] for f in FAMILY.values()} == set(FAMILY.values())


def test_analyze_lang_zh_on_the_command_line(corpus, tmp_path):
    out = tmp_path / "out"
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert main(["analyze", str(corpus), "--out", str(out), "--importance-texts", "0", "--no-progress",
                     "--on-decode-error", "skip", "--lang", "zh"]) == 0
    stdout, report = buf.getvalue(), (out / "report.md").read_text(encoding="utf-8")
    assert "低层局部、高层全局？" in stdout and re.search(rf"已把 \d+ 个文件写入 {re.escape(str(out))}/", stdout)
    assert report.startswith("# 注意力头分析：sentence-transformers/all-MiniLM-L6-v2\n")
    assert "重要性这一遍：未运行（--importance-texts 0）" in report
    for text in (stdout, report):
        assert english_words(text, str(corpus), str(out), "sentence-transformers/all-MiniLM-L6-v2", "[CLS]",
                             "[SEP]") == set()
    assert (out / "heatmaps" / "labels.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_every_chinese_string_of_the_table_is_chinese():
    """Branches a run does not reach (patch's and generate's lines, rare notes) are checked here:
    no Chinese string of the ``analysis`` table keeps English words outside its placeholders."""
    en, zh = i18n.TABLES["analysis"]["en"], i18n.TABLES["analysis"]["zh"]
    left = {key: english_words(re.sub(r"\{[^}]*\}", " ", zh[key]), "[CLS]", "[SEP]", "ln n", "|i-j|", "round(") for key in zh}
    assert {k: v for k, v in left.items() if v} == {}
    seen = [k for k in en if english_words(re.sub(r"\{[^}]*\}", " ", en[k]), "[CLS]", "[SEP]")]
    assert len(seen) > 0.8 * len(en)  # the guard reads English where there is some
    assert cjk_space("\n".join(zh.values())) == []


def test_an_encoder_decoder_analysis_in_chinese(seq2seq_dirs, tmp_path):  # noqa: F811
    """T5 over a parallel corpus: report.md and the printed summary (from the command line) in
    Chinese with the English numbers, and English as before."""
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("translate English to German: The cat sat.\tDie Katze sass.\ncopy: one two three\tone two three\n",
                     encoding="utf-8")
    r = analyze_seq2seq(str(pairs), attnscope.load(seq2seq_dirs["t5"]), batch_size=2, window=1)
    en, zh = report_markdown(r), report_markdown(r, "zh")
    also = (str(pairs), r.model_name, "round(", "</s>", "[CLS]", "[SEP]", "|i-j|")
    assert numbers(zh, *also) == numbers(en, *also)
    assert english_words(zh, *also) == set() and cjk_space(zh) == []
    assert "## 交叉注意力（目标 → 源）" in zh and "## 对齐" in zh
    assert "## Cross-attention (target → source)" in en and "(Head labels and importance by ablation are measured " \
        "for one-text models only.)" in en
    said = {}
    for lang in ("en", "zh"):
        buf = io.StringIO()
        with redirect_stdout(buf):
            assert main(["analyze", str(pairs), "--model", str(seq2seq_dirs["t5"]), "--out", str(tmp_path / lang),
                         "--no-progress", "--window", "1", "--lang", lang]) == 0
        said[lang] = re.sub(r"\d+\.\d s|\d+\.\d 秒", "", buf.getvalue().replace(str(tmp_path / lang), "OUT"))
    assert numbers(said["zh"], *also) == numbers(said["en"], *also)
    assert english_words(said["zh"], *also, "OUT") == set()
    assert "最贴近对角线的交叉注意力头：" in said["zh"] and "most diagonal cross-attention heads: " in said["en"]
    assert (tmp_path / "zh" / "report.md").read_text(encoding="utf-8").startswith("# t5 在 ")
