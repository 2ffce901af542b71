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


# ----------------------------------------------------------------------------------------------
# no private name across modules, no import cycle (imports inside functions count)
# ----------------------------------------------------------------------------------------------

def _modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted module name → (file, is a package's __init__) for every module under ``root``."""
    mods = {}
    for p in root.rglob("*.py"):
        parts = list(p.relative_to(root.parent).with_suffix("").parts)
        is_init = parts[-1] == "__init__"
        mods[".".join(parts[:-1] if is_init else parts)] = (p, is_init)
    return mods


def _imported(name: str, is_init: bool, node: ast.AST, top: str) -> list[tuple[str, list[str]]]:
    """(module, [names taken from it]) of one import statement of module ``name``; ``import x.y``
    gives (x.y, [])."""
    if isinstance(node, ast.ImportFrom):
        if node.level:  # relative: against the module's package (an __init__ is its own package)
            base = (name if is_init else name.rsplit(".", 1)[0]).split(".")
            base = base[: len(base) - (node.level - 1)]
            mod = ".".join(base + ([node.module] if node.module else []))
        else:
            mod = node.module or ""
        return [(mod, [a.name for a in node.names])] if mod.split(".")[0] == top else []
    if isinstance(node, ast.Import):
        return [(a.name, []) for a in node.names if a.name.split(".")[0] == top]
    return []


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_imports(root: Path) -> list[str]:
    """``file:line module name`` for each private name (``_x``, not dunder) that a module imports
    from another module of the package, or each private module it imports."""
    found = []
    for name, (path, is_init) in sorted(_modules(root).items()):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for mod, names in _imported(name, is_init, node, root.name):
                bad = [n for n in names if _private(n)] + ([mod] if any(_private(s) for s in mod.split(".")) else [])
                found += [f"{path.relative_to(root.parent)}:{node.lineno} {mod} {n}" for n in bad]  # type: ignore[attr-defined]
    return found


def import_cycles(root: Path) -> list[list[str]]:
    """The import cycles among the modules under ``root`` (strongly connected components of more
    than one module), counting every import wherever it stands — inside a function it only hides
    the cycle — and leaving out packages' ``__init__`` (their re-exports are not layering)."""
    mods = _modules(root)
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for name, (path, is_init) in mods.items():
        if is_init:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for mod, names in _imported(name, is_init, node, root.name):
                if names:
                    targets = [f"{mod}.{n}" if f"{mod}.{n}" in mods else mod for n in names]
                else:
                    while mod not in mods and "." in mod:
                        mod = mod.rsplit(".", 1)[0]
                    targets = [mod]
                edges[name] |= {t for t in targets if t in mods and t != name and not mods[t][1]}
    # Tarjan's strongly connected components, iteratively (no recursion limit on deep chains)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles = []
    for start in mods:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    cycles.append(sorted(comp))
    return cycles


def test_no_module_imports_a_private_name_from_another_module():
    found = private_imports(PACKAGE)
    assert not found, "make the name public (documented) or restructure:\n" + "\n".join(found)


def test_no_import_cycle_counting_imports_inside_functions():
    cycles = import_cycles(PACKAGE)
    assert not cycles, "\n".join(" ↔ ".join(c) for c in cycles)


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for rel, text in {"__init__.py": "", **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def test_the_checkers_find_a_private_import_and_a_cycle_hidden_in_a_function(tmp_path):
    """The two tests above would pass vacuously if the checkers saw nothing."""
    root = _package(tmp_path, {
        "a.py": "from .b import helper\n",
        "b.py": "def helper():\n    from . import a\n",  # the cycle a → b → a, hidden in a function
        "c.py": "from pkg.sub.d import _secret, public\nfrom . import b as _b\n",  # an alias may be private
        "sub/__init__.py": "from ..a import helper\n",  # a package's re-export is not a cycle
        "sub/d.py": "_secret = public = 1\n",
    })
    assert import_cycles(root) == [["pkg.a", "pkg.b"]]
    assert private_imports(root) == ["pkg/c.py:1 pkg.sub.d _secret"]
    assert import_cycles(_package(tmp_path / "ok", {"a.py": "from .b import x\n", "b.py": "x = 1\n"})) == []
