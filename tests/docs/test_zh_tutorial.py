"""The Chinese tutorial (docs/zh/tutorial) says one thing one way (#25 item 6): every command of it
runs in the tests except the bert-base-chinese block, which says how to get that checkpoint; no
space lost where wrapped lines were joined; one word for token; the feature numbering the page
states is the one its command prints; the article's CLS column explained; and the learner
notebook's comments on its answers say what `attnscope check` finds."""

from __future__ import annotations

import json
import re

import pytest

from tests.docs.blocks import ROOT, RUN, blocks

ZH = ROOT / "docs" / "zh" / "tutorial"
PAGES = sorted(ZH.glob("*.md"))
CJK = r"[\u4e00-\u9fff]"
LATIN = r"[A-Za-z0-9`]"
#: a Chinese character against a Latin letter, digit, code span or link text starting with one
JOINED = re.compile(rf"{CJK}(?:{LATIN}|\[(?=[A-Za-z0-9]))|(?:{LATIN}|\]){CJK}")


def prose(text: str) -> str:
    """The page without fenced blocks, comments, link targets; each inline code span as `C`."""
    text = re.sub(r"^ {0,3}(`{3,}).*?^ {0,3}\1\s*$", "", text, flags=re.S | re.M)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return re.sub(r"`[^`\n]+`", "`C`", text)


def test_pages_exist():
    assert {p.name for p in PAGES} >= {"index.md", "tokens.md", "softmax.md", "weighted-sum.md", "multi-head.md"}


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_no_space_lost_between_chinese_and_latin(page):
    """The pages put a space between Chinese and Latin text, numbers and code (d_k = 256 时, 是 [0.85…]);
    joining wrapped lines dropped some ("256时", "权重是[0.85")."""
    bad = []
    for ln in prose(page.read_text(encoding="utf-8")).splitlines():
        bad += [ln[max(0, m.start() - 12):m.end() + 12] for m in JOINED.finditer(ln)]
    assert bad == [], f"{page.name}: add a space in {bad}"


def test_one_word_for_token():
    """The body, the CLI's Chinese output and the titles all say token; 词元 only as the gloss."""
    uses = {p.name: prose(p.read_text(encoding="utf-8")).count("词元") for p in PAGES}
    assert uses == {p.name: (1 if p.name == "tokens.md" else 0) for p in PAGES}
    tokens = (ZH / "tokens.md").read_text(encoding="utf-8")
    assert tokens.startswith("# Token、词向量与位置\n") and "token（中文也常译作“词元”" in tokens
    assert "[Token、词向量与位置](tokens.md)" in (ZH / "index.md").read_text(encoding="utf-8")


def test_feature_numbering_is_the_commands():
    """multi-head.md quoted "第 2–3 个特征" from the command and said "第 3–4 个特征" itself."""
    page = (ZH / "multi-head.md").read_text(encoding="utf-8")
    shown = [b.code for b in blocks(ZH / "multi-head.md") if "第 2–3 个特征" in b.code]
    assert shown, "the command's output with 第 2–3 个特征 is no longer on the page"
    assert "第 3–4 个特征" not in page and "第 2–3 个特征（从 0 数" in prose(page)


def test_the_articles_cls_column_is_explained():
    """The article lists CLS at position 7 of the 喜 row; the page says why and what the tokenizer does."""
    page = prose((ZH / "softmax.md").read_text(encoding="utf-8"))
    assert "CLS 为什么在第 7 位？" in page
    why = page.split("CLS 为什么在第 7 位？")[1].split("\n\n")[0]
    assert "第 0 位" in why and "`C`" in why and "顺序不影响结果" in why


def test_only_the_bert_base_chinese_block_is_not_run():
    unrun = [(p.name, b) for p in PAGES for b in blocks(p)
             if b.lang in RUN and (b.marker("not-run") or b.marker("checked-by"))]
    assert [(name, "path/to/bert-base-chinese" in b.code) for name, b in unrun] == [("tokens.md", True)]
    page = (ZH / "tokens.md").read_text(encoding="utf-8")
    assert "huggingface-cli download google-bert/bert-base-chinese --local-dir path/to/bert-base-chinese" in page
    assert "git clone https://huggingface.co/google-bert/bert-base-chinese" in page
    # every other block that names a model names an installed one
    for p in PAGES:
        for b in blocks(p):
            if b.lang in RUN and not b.marker("not-run"):
                for m in re.findall(r"--model (\S+)", b.code):
                    assert m == "multilingual-e5-small", (p.name, m)


def test_e5_pipeline_is_set_beside_the_articles():
    page = (ZH / "tokens.md").read_text(encoding="utf-8")
    for fact in ("`<s>` ▁我 喜欢 人工智能 `</s>`：5 个 token", "9 × 9", "5 × 5", "768、12、64", "384、12、**32**",
                 "双向", "4 位", "0.98–0.99", "`--token 喜` 找不到"):
        assert fact in page, fact


def _notebook_answers() -> str:
    nb = json.loads((ROOT / "docs" / "notebooks" / "learner.ipynb").read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        if cell["cell_type"] == "code" and "my-answers.yaml" in src:
            return src.split('"""\\\n', 1)[1].split('"""', 1)[0]
    raise AssertionError("the learner notebook no longer writes my-answers.yaml")


def test_learner_notebook_comments_match_check(tmp_path):
    """A row commented "follows from the slip" is carried in check's report, every entry of it."""
    import attnscope

    text = _notebook_answers()
    path = tmp_path / "my-answers.yaml"
    path.write_text(text, encoding="utf-8")
    report = attnscope.check(str(path))
    d = json.loads(report.render("json"))
    carried_rows = {(e["step"], e["row"]) for e in d["entries"] if e["verdict"] == "carried"}
    wrong_rows = {(e["step"], e["row"]) for e in d["entries"] if e["verdict"] == "wrong"}
    step, row = None, -1
    claims = []
    for ln in text.splitlines():
        if re.match(r"^  \w+:", ln):
            step, row = ln.strip().rstrip(":"), -1
        elif ln.startswith("  - "):
            row += 1
            if "follows from the slip" in ln:
                claims.append((step, row))
    assert claims, "the notebook's answers no longer show a carried row"
    for claim in claims:
        assert claim in carried_rows and claim not in wrong_rows, (claim, d["entries"])
