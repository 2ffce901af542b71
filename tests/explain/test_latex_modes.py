"""LaTeX as a document, a fragment or beamer frames; a text without CJK compiles with pdflatex (xeCJK
only when the text has CJK). Where pdflatex is installed the English documents are compiled; the
preamble's content is checked everywhere."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from attnscope import explain
from attnscope.cli import main
from attnscope.errors import ConfigError
from attnscope.exercise import make_exercise
from attnscope.explain.render.latex import UNICODE_TEX

#: Non-ASCII characters pdflatex's utf8 input sets without a declaration (Latin-1, dashes, quotes).
NATIVE = set(map(chr, range(0xA0, 0x100))) | set("–—‘’“”…•")


def _english_docs():
    return {"exercise": make_exercise(tokens=4, dim=3, seed=3).solution(),
            "scaling": explain(lesson="scaling"),
            "positions": explain(lesson="positions", position=5, dim=2, offset=3)}


def _declared(tex: str) -> set:
    return {chr(int(h, 16)) for h in re.findall(r"\\DeclareUnicodeCharacter\{([0-9A-F]{4})\}", tex)}


@pytest.mark.parametrize("name", ["exercise", "scaling", "positions"])
def test_english_document_is_pdflatex_ready(name, tmp_path):
    tex = _english_docs()[name].render("latex")
    assert "xeCJK" not in tex and tex.startswith("% compile with pdflatex")
    assert r"\ifPDFTeX" in tex and r"\usepackage[utf8]{inputenc}" in tex
    body = tex.split(r"\begin{document}", 1)[1]
    # every character pdflatex cannot set by itself is declared
    assert {c for c in body if ord(c) > 127} - NATIVE <= _declared(tex)
    assert _declared(tex) <= set(UNICODE_TEX)
    if shutil.which("pdflatex"):  # not part of the test environment everywhere; checked where it is
        (tmp_path / "a.tex").write_text(tex, encoding="utf-8")
        run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "a.tex"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stdout[-2000:]


def test_cjk_text_loads_xecjk():
    tex = explain(example="three-tokens").render("latex")  # tokens 我 爱 你
    assert r"\usepackage{xeCJK}" in tex and tex.startswith("% compile with xelatex")
    zh = make_exercise(seed=3, lang="zh").problem().render("latex", lang="zh")
    assert r"\usepackage{xeCJK}" in zh


def test_fragment_and_beamer():
    w = make_exercise(tokens=3, dim=2, seed=3).solution()
    doc = w.render("latex")
    frag = w.render("latex", latex_mode="fragment")
    assert r"\documentclass" not in frag.replace("%   ", "") and r"\begin{document}" not in frag
    assert frag.split("\n", 1)[0].startswith("% a fragment")
    body = doc.split(r"\begin{document}", 1)[1].rsplit(r"\end{document}", 1)[0].strip()
    assert body in frag  # the same body as the document
    beamer = w.render("latex", latex_mode="beamer")
    assert r"\documentclass{beamer}" in beamer and "geometry" not in beamer
    assert beamer.count(r"\begin{frame}") == beamer.count(r"\end{frame}") == len(w.steps) + 1
    assert r"\section" not in beamer
    with pytest.raises(ConfigError, match="unknown LaTeX mode 'slides'"):
        w.render("latex", latex_mode="slides")


def test_cli_latex_mode(tmp_path, capsys):
    assert main(["exercise", "--seed", "3", "--no-answers", "-f", "latex", "--latex-mode", "beamer"]) == 0
    out = capsys.readouterr().out
    assert r"\documentclass{beamer}" in out and r"\begin{frame}" in out
    assert main(["explain", "--example", "three-tokens", "-f", "latex", "--latex-mode", "fragment"]) == 0
    out = capsys.readouterr().out
    assert r"\begin{document}" not in out and r"%   \usepackage{xeCJK}" in out


@pytest.mark.parametrize("fmt", ["markdown", "rich", "json"])
def test_a_latex_mode_with_another_format_is_refused_not_dropped(fmt, capsys):
    """--latex-mode beamer --format markdown printed the Markdown as if it had not been given."""
    assert main(["explain", "--example", "three-tokens", "-f", fmt, "--latex-mode", "beamer"]) == 2
    err = capsys.readouterr().err
    assert err == f"attnscope explain: error: the LaTeX mode 'beamer' is for the latex format only; the format is '{fmt}'\n"
    with pytest.raises(ConfigError, match="for the latex format only"):
        explain(example="three-tokens").render(fmt, latex_mode="fragment")
