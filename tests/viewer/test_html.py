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
    assert main(["view", "a b", "--compare", "c d", "-o", str(out), "--overwrite"]) == 2
    assert "share no token" in capsys.readouterr().err
    assert main(["view", "hi", "-o", str(tmp_path / "missing" / "a.html")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_trace_repr_html_in_jupyter(minilm):
    tr = minilm.trace("hello world")
    assert tr._repr_html_() == viewer.repr_html(tr) and tr._repr_html_().startswith("<iframe srcdoc=")
    partial = minilm.trace("hello world", names=["layers.0.attn.weights"])
    out = partial._repr_html_()
    assert out.startswith("<pre>Trace(") and "has no &#x27;layers.0.attn.q&#x27;" in out


def test_view_cli_refuses_text_that_is_not_utf8(tmp_path):
    """$'caf\\xe9 bank' (Latin-1 bytes in a UTF-8 shell): one line, exit 2, no file."""
    import os
    import subprocess
    import sys
    out = tmp_path / "a.html"
    r = subprocess.run([sys.executable, "-m", "attnscope", "view", b"caf\xe9 bank", "-o", str(out)],
                       capture_output=True, env=dict(os.environ, PYTHONIOENCODING="utf-8"))
    assert r.returncode == 2 and not out.exists()
    assert r.stderr.decode() == ("attnscope view: error: text is not valid UTF-8: byte 0xE9 at character 3 "
                                 "(is the terminal's or the file's encoding UTF-8?)\n")


def test_view_cli_option_ranges(tmp_path, capsys):
    from attnscope.cli import main
    from attnscope.viewer.data import MAX_DECIMALS
    out = tmp_path / "a.html"
    for argv, msg in [(["--decimals", "11"], f"--decimals must be from 0 to {MAX_DECIMALS}, got 11"),
                      (["--decimals", "-1"], f"--decimals must be from 0 to {MAX_DECIMALS}, got -1"),
                      (["--compare", "a\udcff"], "--compare is not valid UTF-8: byte 0xFF at character 1"),
                      (["--token", " "], "--token is empty")]:
        assert main(["view", "the bank", "-o", str(out), *argv]) == 2
        err = capsys.readouterr().err
        assert msg in err and err.count("\n") == 1, err
    assert main(["view", "the bank", "-o", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err
    assert not out.exists()


def test_one_decimals_range_everywhere(trace):
    """The library, the CLI, the API and the page's selector take the same 0..MAX_DECIMALS."""
    import pytest

    from attnscope.errors import InputError
    from attnscope.server import ViewRequest
    assert data.MAX_DECIMALS == 8
    assert data.build(trace, decimals=8)["max_decimals"] == 8
    for bad in (9, -1, True, 2.0):
        with pytest.raises(InputError, match="decimals must be an integer in 0..8"):
            data.build(trace, decimals=bad)
    assert ViewRequest.model_json_schema()["properties"]["decimals"]["maximum"] == 8
