"""Model names a new user types (issue #23 item 6): the default model has a short name, an unknown
name lists the installed ones, an empty name and a folder called *.gguf say what they are."""

import pytest

import attnscope
from attnscope import ModelLoadError
from attnscope.cli import main
from attnscope.models import loader
from attnscope.models.packages import PACKAGES, installed_names


@pytest.mark.parametrize("name", ["all-minilm-l6-v2", "All-MiniLM-L6-v2", "all_minilm_l6_v2", "minilm",
                                  "sentence-transformers/all-MiniLM-L6-v2"])
def test_the_default_model_has_short_names(name):
    m = attnscope.load(name)
    assert m.name == loader.DEFAULT_NAME and m.path == loader.default_model_path()


def test_a_folder_of_that_name_wins(tmp_path, monkeypatch):
    (tmp_path / "minilm").mkdir()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ModelLoadError, match="config.json"):
        attnscope.load("minilm")


def test_an_unknown_name_lists_the_installed_models():
    with pytest.raises(ModelLoadError) as e:
        attnscope.load("no-such-model")
    msg = str(e.value)
    assert msg.startswith("no model folder, model file or installed model called 'no-such-model'; the installed models "
                          "are: all-minilm-l6-v2 (the default)")
    for p in PACKAGES:
        assert (p.name in msg) == (p.name in installed_names())


def test_only_installed_packages_are_listed(monkeypatch):
    from attnscope.models import packages
    monkeypatch.setattr(packages, "_package_dir", lambda module: None)
    assert packages.installed_names() == []
    assert loader.installed_model_names() == ["all-minilm-l6-v2 (the default)"]


@pytest.mark.parametrize("name", ["", "   "])
def test_an_empty_name_says_so(name):
    with pytest.raises(ModelLoadError, match=r"^the model name is empty; give a model name \(all-minilm-l6-v2"):
        attnscope.load(name)


def test_a_folder_named_gguf_is_a_folder_not_a_file(tmp_path):
    (tmp_path / "x.gguf").mkdir()
    with pytest.raises(ModelLoadError, match=r"x\.gguf is a folder, not a GGUF file; pass the \.gguf file itself"):
        attnscope.load(tmp_path / "x.gguf")


@pytest.mark.parametrize("model, says", [("", "the model name is empty"), ("nosuch", "the installed models are")])
def test_the_command_line_says_it_in_one_line(capsys, model, says):
    assert main(["explain", "--model", model, "--text", "hi", "--token", "hi"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err
