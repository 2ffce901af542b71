"""``attnscope serve`` argument errors are one line and exit 2 (the server itself runs in
tests/browser, started as a real uvicorn process)."""

import pytest

from attnscope.cli import main


@pytest.mark.parametrize("argv, msg", [
    (["serve", "--port", "99999"], "--port must be in 0..65535, got 99999"),
    (["serve", "--max-chars", "0"], "--max-chars must be in 1..50000, got 0"),
])
def test_bad_arguments(capsys, argv, msg):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1
