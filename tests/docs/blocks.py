"""The fenced code blocks of the README and the docs, with the markers that say how a test runs them.

A block is a fence of three or more backticks with a language (```python, ```bash, ```console …);
a longer fence (````markdown) holds shorter ones as its text, as CommonMark reads it. HTML comments
on the lines right above a fence are its markers (several may stand one per line):

``<!-- not-run: REASON -->``
    the block is not run (a set-up command, a server, a GPU); the reason is required.
``<!-- run-with: OLD => NEW -->``
    run the block with the text OLD replaced by NEW (a tiny input for a slow command, a test
    fixture for a placeholder path); OLD must occur in the block, so a stale one fails.
``<!-- output: excerpt -->``
    (```console) the output shown is an excerpt: each shown line, spaces collapsed, is a line of
    the real output, in order; a shown line ending in ``…`` matches a line that starts with it.
``<!-- run-as: script -->``
    (```python) the block runs on its own as a script (``__main__``), not in the page's namespace:
    for code whose functions other processes import.
``<!-- checked-by: TEST -->``
    another test checks this block's content (it must exist and name the page); not run here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,})(?P<lang>[\w+-]*)[^`]*$")
MARKER = re.compile(r"^\s*<!--\s*(?P<kind>not-run|run-with|run-as|output|checked-by)\s*:\s*(?P<value>.*?)\s*-->\s*$")
#: Languages whose blocks are run.
RUN = {"python", "bash", "sh", "console"}


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    markers: list[tuple[str, str]] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    def marker(self, kind: str) -> list[str]:
        return [v for k, v in self.markers if k == kind]


def doc_files() -> list[Path]:
    """README.md and every Markdown page under docs/ (the tutorial and its Chinese twin included)."""
    return [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))


def blocks(path: Path) -> list[Block]:
    """Every top-level fenced block of one file (blocks inside a longer fence are its text)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang, start = m.group("fence"), m.group("lang"), i
        j = i + 1
        while j < len(lines) and not re.match(rf"^ {{0,3}}`{{{len(fence)},}}\s*$", lines[j]):
            j += 1
        markers: list[tuple[str, str]] = []
        k = start - 1
        while k >= 0 and (mm := MARKER.match(lines[k])):
            markers.insert(0, (mm.group("kind"), mm.group("value")))
            k -= 1
        indent = len(m.group("indent"))
        code = "\n".join(ln[indent:] if ln[:indent].strip() == "" else ln for ln in lines[start + 1:j])
        out.append(Block(path, start + 1, lang, code + "\n", markers))
        i = j + 1
    return out


def all_blocks() -> list[Block]:
    return [b for p in doc_files() for b in blocks(p)]
