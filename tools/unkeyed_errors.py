"""List the places in src/attnscope that build an attnscope error from English words instead
of a catalogue key (``raise InputError(f"…")`` rather than ``raise error(InputError, "errors.…", …)``).
The command line can say a keyed error in ``--lang``; an unkeyed one stays English.

    python tools/unkeyed_errors.py [PATH ...]      # default: src/attnscope; prints file:line and a count
"""

import ast
import pathlib
import sys

#: attnscope's error classes (attnscope.errors and its subclasses elsewhere).
CLASSES = {"AttnscopeError", "InputError", "ConfigError", "ModelLoadError", "ShapeError", "NonFiniteError",
           "TraceKeyError", "OptionError"}


def unkeyed(path: pathlib.Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    # every call that builds one of them from words, raised here or returned to be raised elsewhere
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name in CLASSES and node.args:
                yield node.lineno, name


def main(paths):
    files = [f for p in paths for f in (sorted(pathlib.Path(p).rglob("*.py")) if pathlib.Path(p).is_dir() else [pathlib.Path(p)])]
    n = 0
    for f in files:
        for line, name in unkeyed(f):
            print(f"{f}:{line}: {name}")
            n += 1
    print(f"{n} unkeyed error sites")
    return n


if __name__ == "__main__":
    main(sys.argv[1:] or ["src/attnscope"])
