"""--help of every command reads as plain text: no reST markup, every option explained."""

import argparse

import pytest

from attnscope.cli import COMMANDS, build_parser, main


def _subparsers():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_has_help_and_no_rest_markup(name, capsys):
    sp = _subparsers()[name]
    undocumented = [a.option_strings or a.dest for a in sp._actions
                    if not isinstance(a, argparse._HelpAction) and not a.help]
    assert not undocumented, f"{name}: options without help: {undocumented}"
    with pytest.raises(SystemExit) as e:
        main([name, "--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    assert "``" not in text and "`" not in text, text
    assert "kept for compatibility" not in text


def test_example_help_says_what_it_is(capsys):
    with pytest.raises(SystemExit):
        main(["example", "--help"])
    out = capsys.readouterr().out
    assert "attnscope example: a built-in worked example" in out and "attnscope explain --example NAME" in out
    assert "which example (default: three-tokens)" in out


def test_explain_help_says_toy_problems_are_exact(capsys):
    """explain --help said "All arithmetic is float64"; a toy problem is exact: 0.1 + 0.2 is 0.3,
    where float64 gives 0.30000000000000004 (checked here on the JSON of the worked problem)."""
    import json

    assert 0.1 + 0.2 != 0.3  # what float64 arithmetic would show
    main(["explain", "-X", "0.1,0.2;1,0", "--wq", "1;1", "--wk", "1;1", "--wv", "1;1", "--format", "json"])
    assert json.loads(capsys.readouterr().out)["values"]["Q"][0][0] == 0.3
    with pytest.raises(SystemExit):
        main(["explain", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "All arithmetic is float64" not in out
    assert "Toy problems are exact" in out and "a real model's row in float64" in out


def test_example_help_says_the_examples_are_exact(capsys):
    """example --help said "step by step in float64"; its examples are toy problems, worked exactly
    as test_explain_help_says_toy_problems_are_exact shows on the same code path."""
    with pytest.raises(SystemExit):
        main(["example", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "float64" not in out and "computed exactly" in out
