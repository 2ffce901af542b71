"""``-o`` naming a folder (``-o .``) says it is a folder and suggests a file name (issue #23: plot
said "cannot tell the format of ''", patch "cannot tell what to write to ''")."""

import pytest

from attnscope.cli import main

PATCH = ["patch", "--clean", "a b", "--corrupted", "a c", "--answer", "b", "--wrong", "c"]


@pytest.mark.parametrize("argv, out, says", [
    (["plot", "--kind", "hist"], ".", "-o '.' is a folder; give a file name such as 'scores.png'"),
    (["plot", "--kind", "hist"], "sub/", "-o 'sub/' is a folder; give a file name such as 'sub/scores.png'"),
    (["plot", "--kind", "hist"], "", "-o is empty; give a file name such as scores.png"),
    (PATCH, ".", "-o '.' is a folder; give a file name such as 'patch.png'"),
    (PATCH, "sub", "-o 'sub' is a folder; give a file name such as 'sub/patch.png'"),
    (PATCH, "", "-o is empty; give a file name such as patch.png or patch.json"),
    (["explain", "--example", "three-tokens"], ".", "-o '.' is a folder; give a file name such as 'explain.txt'"),
    (["explain", "--example", "three-tokens", "--format", "markdown"], "sub",
     "-o 'sub' is a folder; give a file name such as 'sub/explain.md'"),
])
def test_a_folder_is_not_a_file_name(tmp_path, monkeypatch, capsys, argv, out, says):
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    assert main([*argv, "-o", out]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sub"]  # nothing written, no model loaded first
