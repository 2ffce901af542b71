"""The Python example of the "Pictures and the viewer" page (docs/guide/viewer.md, once the README's
section) runs as written and writes the three files it names."""

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "viewer.md"


def test_readme_python_block_runs(tmp_path, monkeypatch):
    text = PAGE.read_text(encoding="utf-8")
    assert text.startswith("# Pictures and the viewer")
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(PAGE), "exec"), {})
    assert {p.name for p in tmp_path.iterdir()} == {"head.png", "grid.svg", "scores.pdf"}
