"""docs/reference/cli.md is every command's --help as it is now: written by
tools/make_cli_reference.py, which this test runs in memory; and each section is what
``attnscope COMMAND --help`` really prints (at the page's 100 columns)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
from pathlib import Path

import pytest

from attnscope.cli import COMMANDS, main

ROOT = Path(__file__).resolve().parents[2]


def _tool():
    spec = importlib.util.spec_from_file_location("make_cli_reference", ROOT / "tools" / "make_cli_reference.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_page_is_current():
    tool = _tool()
    assert tool.PAGE.read_text(encoding="utf-8") == tool.page(), \
        "docs/reference/cli.md is stale: run .venv/bin/python tools/make_cli_reference.py"


@pytest.mark.parametrize("command", [None] + COMMANDS)
def test_section_is_what_help_prints(command, monkeypatch):
    monkeypatch.setenv("COLUMNS", _tool().COLUMNS)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), pytest.raises(SystemExit) as e:
        main(([command] if command else []) + ["--help"])
    assert e.value.code == 0
    page = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    title = f"attnscope {command}" if command else "attnscope"
    m = re.search(rf"^## {re.escape(title)}\n\n```text\n(.*?)\n```$", page, re.S | re.M)
    assert m, f"no section for {title}"
    assert m.group(1) == buf.getvalue().rstrip()
