"""Every error attnscope raises on purpose is keyed (issue 25: the CLI says it in ``--lang``), and
every key a raise site, a Msg or text() names literally is in the catalogue — a typo in a key
would otherwise surface only as a KeyError on the day that error is raised."""

from __future__ import annotations

import ast
import importlib.util
import pathlib

import pytest

from attnscope import i18n

ROOT = pathlib.Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "attnscope"


def _tool():
    spec = importlib.util.spec_from_file_location("unkeyed_errors", ROOT / "tools" / "unkeyed_errors.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_error_is_built_from_english_words():
    tool = _tool()
    sites = [f"{f.relative_to(ROOT)}:{line}: {name}" for f in sorted(SRC.rglob("*.py")) for line, name in tool.unkeyed(f)]
    assert sites == [], "build these with attnscope.i18n.error(Cls, 'errors.KEY', …) and a catalogue entry"


def test_the_tool_finds_an_unkeyed_error(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def f(x):\n    raise InputError(f'bad {x}')\n\ndef g():\n    return ShapeError('no')\n"
                 "def h():\n    raise error(InputError, 'errors.k', x=1)\n", encoding="utf-8")
    assert list(_tool().unkeyed(f)) == [(2, "InputError"), (5, "ShapeError")]


#: The functions that take a key: (name, index of the key argument).
KEYED = {"error": 1, "Msg": 0, "text": 0}


def _keys(node):
    """The literal key strings of a key argument (both branches of ``a if c else b``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.IfExp):
        yield from _keys(node.body)
        yield from _keys(node.orelse)


def _named_keys():
    for f in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
                i = KEYED.get(name)
                if i is not None and len(node.args) > i:
                    for key in _keys(node.args[i]):
                        if "." in key and key.split(".", 1)[0] in i18n.TABLES:
                            yield f"{f.relative_to(ROOT)}:{node.lineno}", key


def test_every_key_named_in_the_code_is_in_the_catalogue():
    named = list(_named_keys())
    assert len(named) > 1000  # the scan sees the raise sites
    missing = [f"{where}: {key}" for where, key in named if key not in i18n.TABLES[key.split(".", 1)[0]]["en"]]
    assert missing == []


@pytest.mark.parametrize("area", sorted(i18n.TABLES))
def test_no_placeholder_takes_a_parameters_name(area):
    """``text(key, lang, **values)``, ``Msg(key, **values)`` and ``error(cls, key, **values)``: a
    placeholder called key, lang or cls would collide with them and fail when the error is raised."""
    bad = {k: sorted(i18n.fields(s) & {"key", "lang", "cls"}) for k, s in i18n.TABLES[area]["en"].items()}
    assert {k: v for k, v in bad.items() if v} == {}


@pytest.mark.parametrize("lang", i18n.LANGS)
def test_every_error_key_renders_through_msg_and_error(lang):
    """Each errors.* key filled with a number per placeholder renders through Msg and error() in
    every language — a placeholder that collides with a parameter's name fails here, not in a user's hands."""
    from attnscope.errors import InputError
    failed = []
    for key, template in i18n.TABLES["errors"]["en"].items():
        values = {name: 1 for name in i18n.fields(template)}
        try:
            e = i18n.error(InputError, key, **values)
            i18n.error_message(e, lang)
        except Exception as x:  # noqa: BLE001 - the test lists every failure at once
            failed.append(f"{key}: {type(x).__name__}: {x}")
    assert failed == []
