"""viewer.html.write_page: the one writer of every saved page (save_html of a trace, of a
generation, of an encoder–decoder pair): UTF-8, the path back, or one sentence."""

import pytest

from attnscope import InputError
from attnscope.viewer.html import write_page


def test_writes_utf8_and_returns_the_path(tmp_path):
    p = write_page(str(tmp_path / "page.html"), "<p>注意力 → ok</p>")
    assert p == tmp_path / "page.html" and p.read_bytes() == "<p>注意力 → ok</p>".encode("utf-8")


def test_a_path_it_cannot_write_is_one_sentence(tmp_path):
    with pytest.raises(InputError, match=r"^cannot write .*missing.*page\.html: "):
        write_page(tmp_path / "missing" / "page.html", "<p></p>")
