"""An empty --text or --target is refused with one sentence naming it, for an encoder–decoder
model too (issue #23: ``--target ""`` was taken as a target and ``--text ""`` with a T5 model ended
in an AttributeError)."""

import pytest

from attnscope.cli import main
from tests.models.seq2seq import tiny


@pytest.fixture(scope="module")
def t5(tmp_path_factory):
    return str(tiny.t5(tmp_path_factory.mktemp("t5") / "t5"))


@pytest.mark.parametrize("argv, says", [
    (["--text", "translate: hi", "--target", ""], "target is empty"),
    (["--text", "translate: hi", "--target", "  \n"], "target is empty"),
    (["--text", "translate: hi", "--target", "", "--path", "--token", "hi"], "target is empty"),
    (["--text", ""], "text is empty"),
    (["--text", " ", "--target", "Hallo."], "text is empty"),
])
def test_empty_text_or_target_is_one_sentence(t5, capsys, argv, says):
    assert main(["explain", "--model", t5, *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and "Traceback" not in err, err
