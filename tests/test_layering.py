"""The package's layers: attnscope.testing is for tests, benchmarks and tools only — no module
of the library imports it (so that the library never needs transformers or Playwright)."""

import ast
from pathlib import Path

import attnscope

PACKAGE = Path(attnscope.__file__).parent


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against the module's package
                parts = path.relative_to(PACKAGE.parent).with_suffix("").parts[:-node.level]
                base = ".".join(parts + ((base,) if base else ()))
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    return found


def test_the_library_never_imports_attnscope_testing():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if "testing" in path.relative_to(PACKAGE).parts:
            continue
        if any(name == "attnscope.testing" or name.startswith("attnscope.testing.") for name in _imports(path)):
            offenders.append(str(path.relative_to(PACKAGE)))
    assert not offenders, offenders


def test_the_checker_sees_relative_imports(tmp_path):
    """The check above would pass vacuously if relative imports were not resolved."""
    fixture = PACKAGE / "models" / "model.py"
    assert any(n.startswith("attnscope.modules") for n in _imports(fixture))
