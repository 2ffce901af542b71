"""The catalogue files (attnscope/i18n/catalog/*.toml): read into the same tables as the Python
ones, and a malformed file is one error naming the file and the key."""

import pytest

from attnscope import i18n
from attnscope.i18n.catalog import CatalogError, load

LANGS = ("en", "zh")


def _load(*bodies):
    tables = {"errors": {"en": {"errors.old": "old"}, "zh": {"errors.old": "旧"}}}
    load(tables, LANGS, [(f"f{i}.toml", b) for i, b in enumerate(bodies)])
    return tables


def test_an_entry_lands_in_its_area_in_every_language():
    tables = _load('["errors.new"]\nen = "layer {layer}"\nzh = "第 {layer} 层"\n',
                   '["plot.thing"]\nen = "a"\nzh = "甲"\n')
    assert tables["errors"]["zh"]["errors.new"] == "第 {layer} 层"
    assert tables["errors"]["en"]["errors.old"] == "old"  # the Python table's keys stay
    assert tables["plot"] == {"en": {"plot.thing": "a"}, "zh": {"plot.thing": "甲"}}


@pytest.mark.parametrize("body, words", [
    ('["errors.old"]\nen = "x"\nzh = "y"\n', ["f0.toml", "'errors.old'", "defined twice"]),
    ('["errors.x"]\nen = "x"\n', ["f0.toml", "'errors.x'", "['en']", "['en', 'zh']"]),
    ('["errors.x"]\nen = "x"\nzh = "y"\nfr = "z"\n', ["'errors.x'", "['en', 'fr', 'zh']"]),
    ('["errors.x"]\nen = 3\nzh = "y"\n', ["'errors.x' en is a int"]),
    ('x = "no area"\n', ["'x' is not a table"]),
    ('["x"]\nen = "a"\nzh = "b"\n', ["key 'x' has no area"]),
    ('["errors.x"\nen = "a"\n', ["f0.toml: not valid TOML"]),
])
def test_a_malformed_file_names_itself_and_the_key(body, words):
    with pytest.raises(CatalogError) as e:
        _load(body)
    for w in words:
        assert w in str(e.value)


def test_a_key_in_two_files_is_refused():
    with pytest.raises(CatalogError, match="f1.toml: 'errors.y' is defined twice"):
        _load('["errors.y"]\nen = "a"\nzh = "b"\n', '["errors.y"]\nen = "c"\nzh = "d"\n')


def test_the_package_catalogue_is_loaded():
    from importlib import resources
    files = [p for p in (resources.files("attnscope.i18n") / "catalog").iterdir() if p.name.endswith(".toml")]
    assert files, "the package ships its catalogue files"
    import tomllib
    for p in files:
        for key, entry in tomllib.loads(p.read_text(encoding="utf-8")).items():
            area = key.split(".", 1)[0]
            assert i18n.TABLES[area]["en"][key] == entry["en"] and i18n.TABLES[area]["zh"][key] == entry["zh"]


def test_the_worked_calculations_labels_are_a_flat_catalogue():
    from attnscope.i18n.catalog import flat
    files = [("a.toml", '["step_n"]\nen = "Step {n}"\nzh = "第 {n} 步"\n'), ("b.toml", '["toy.title"]\nen = "t"\nzh = "题"\n')]
    assert flat("attnscope.explain", "catalog", LANGS, files) == {
        "en": {"step_n": "Step {n}", "toy.title": "t"}, "zh": {"step_n": "第 {n} 步", "toy.title": "题"}}
    with pytest.raises(CatalogError, match="b.toml: 'step_n' is defined twice"):
        flat("attnscope.explain", "catalog", LANGS, files[:1] + [("b.toml", files[0][1])])
    with pytest.raises(CatalogError, match="'x' has languages \\['en'\\]"):
        flat("attnscope.explain", "catalog", LANGS, [("c.toml", '["x"]\nen = "a"\n')])


def test_the_package_ships_the_explain_labels():
    from attnscope.explain.i18n import LABELS
    assert LABELS["zh"]["step_n"] == "第 {n} 步：{title}" and len(LABELS["en"]) == len(LABELS["zh"]) > 500
