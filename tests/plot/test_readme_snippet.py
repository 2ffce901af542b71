"""The Python example of README's "Pictures and the viewer" section runs as written."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_python_block_runs(tmp_path, monkeypatch):
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Pictures and the viewer"):]
    section = section[:section.index("\n## ", 3)]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})
    assert {p.name for p in tmp_path.iterdir()} == {"head.png", "grid.svg", "scores.pdf"}
