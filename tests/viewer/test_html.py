"""The exported page is one self-contained file: no external scripts, styles, fonts or requests."""

import html
import json
import re

from attnscope import viewer
from attnscope.viewer import data
from attnscope.viewer.html import json_for_script


def test_page_is_self_contained(trace):
    page = viewer.to_html(trace, compare=True, token="bank")
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"<script[^>]+src=", page)
    assert "<link" not in page and "@import" not in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert not re.search(r"url\((['\"]?)(https?:)?//", page)
    assert "fetch(" in page  # only the served page uses it (api/view), never at load time
    # the CJK glyphs of the tokens travel inside the file
    assert "@font-face{font-family:'attnscope CJK'" in page and "data:font/otf;base64," in page
    # the data block parses back to what build() returns
    m = re.search(r'<script type="application/json" id="attnscope-data">(.*?)</script>', page, re.S)
    d = json.loads(m.group(1))
    assert d == json.loads(json.dumps(data.build(trace, compare=True, token="bank")))


def test_json_in_script_cannot_close_the_tag():
    s = json_for_script({"t": "</script><script>alert(1)</script><!--"})
    assert "<" not in s and json.loads(s) == {"t": "</script><script>alert(1)</script><!--"}


def test_repr_html_is_the_page_in_an_isolated_iframe(trace):
    frame = viewer.repr_html(trace)
    m = re.fullmatch(r'<iframe srcdoc="(.*)" style="[^"]*" sandbox="allow-scripts allow-downloads"></iframe>', frame, re.S)
    assert m and html.unescape(m.group(1)) == viewer.to_html(trace)


def test_save_html_and_view_cli(tmp_path, capsys):
    from attnscope.cli import main
    out = tmp_path / "a.html"
    assert main(["view", "The bank of the river.", "--compare", "Money in the bank.", "--token", "bank", "-o", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    d = json.loads(re.search(r'id="attnscope-data">(.*?)</script>', page, re.S).group(1))
    assert d["compare"]["token"] == "bank" and len(d["texts"]) == 2
    assert main(["view", "  ", "-o", str(out)]) == 2
    assert "text is empty" in capsys.readouterr().err
    assert main(["view", "a b", "--compare", "c d", "-o", str(out)]) == 2
    assert "share no token" in capsys.readouterr().err
    assert main(["view", "hi", "-o", str(tmp_path / "missing" / "a.html")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_trace_repr_html_in_jupyter(minilm):
    tr = minilm.trace("hello world")
    assert tr._repr_html_() == viewer.repr_html(tr) and tr._repr_html_().startswith("<iframe srcdoc=")
    partial = minilm.trace("hello world", names=["layers.0.attn.weights"])
    out = partial._repr_html_()
    assert out.startswith("<pre>Trace(") and "has no &#x27;layers.0.attn.q&#x27;" in out
