"""Every integer option of every command is range-checked when the command line is read: a value
outside its range (``generate --seed 99999999999999999999999``) or not an integer is one sentence
naming the option and its range, exit status 2, before any model loads."""

import argparse

import pytest

from attnscope.cli import IntList, IntRange, build_parser, main


def _options():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for command, p in sub.choices.items():
        for action in p._actions:
            if action.option_strings and not isinstance(action, (argparse._HelpAction, argparse._StoreTrueAction,
                                                                 argparse._StoreConstAction)):
                yield command, action


def test_no_option_takes_an_unchecked_integer():
    loose = [f"{c} {a.option_strings[-1]}" for c, a in _options()
             if a.type is int or (a.type is None and isinstance(a.default, int) and not isinstance(a.default, bool))]
    assert loose == []


RANGED = [(c, max(a.option_strings, key=len), a.type) for c, a in _options() if isinstance(a.type, IntRange)]


def test_the_ranged_options_are_the_integer_options():
    names = {f"{c} {flag}" for c, flag, _ in RANGED}
    for expected in ("generate --seed", "generate --max-new-tokens", "patch --batch-size", "explain --layer",
                     "explain --offset", "view --decimals", "serve --port", "analyze --threads", "plot --dpi",
                     "exercise --tokens", "experiment --d-k", "experiment --jobs"):
        assert expected in names
    assert len(RANGED) >= 50


def _one_line(capsys, argv) -> str:
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("command, flag, kind", RANGED, ids=[f"{c}{f}" for c, f, _ in RANGED])
def test_out_of_range_is_one_sentence_naming_the_option_and_its_range(capsys, command, flag, kind):
    span = f"from {kind.low} to {kind.high}"
    for bad in (kind.high + 1, kind.low - 1, 99999999999999999999999, -99999999999999999999999):
        err = _one_line(capsys, [command, flag, str(bad)])
        if isinstance(kind, IntList):
            assert err == f"attnscope {command}: error: {flag} must be comma-separated integers, each {span}, got {bad}"
        else:
            assert err == f"attnscope {command}: error: {flag} must be {span}, got {bad}"
    err = _one_line(capsys, [command, flag, "twelve"])
    assert err.startswith(f"attnscope {command}: error: {flag} must be ") and "got 'twelve'" in err
    if not isinstance(kind, IntList):
        assert kind(str(kind.low)) == kind.low and kind(str(kind.high)) == kind.high  # the ends are in range


def test_the_issues_seed(capsys):
    err = _one_line(capsys, ["generate", "The capital of France is", "--seed", "99999999999999999999999"])
    assert err == "attnscope generate: error: --seed must be from 0 to 2147483647, got 99999999999999999999999"


def test_a_list_option_checks_each_item(capsys):
    err = _one_line(capsys, ["experiment", "variance", "--d-k", "4,0,8"])
    assert err == "attnscope experiment: error: --d-k must be comma-separated integers, each from 1 to 65536, got 0"
    assert _one_line(capsys, ["experiment", "variance", "--d-k", ","]).endswith("--d-k is empty: give comma-separated "
                                                                                "integers, each from 1 to 65536")


LISTS = [(c, f) for c, f, kind in RANGED if isinstance(kind, IntList)]


@pytest.mark.parametrize("command, flag", LISTS, ids=[f"{c}{f}" for c, f in LISTS])
@pytest.mark.parametrize("sep", ["，", "、"])
def test_a_list_typed_with_a_chinese_comma_is_named(capsys, command, flag, sep):
    """'patch --layers "0，5"' said only 'must be comma-separated integers'."""
    err = _one_line(capsys, [command, flag, f"1{sep}2"])
    assert err == (f"attnscope {command}: error: {flag}: '1{sep}2' holds the full-width '{sep}' of a Chinese input "
                   f"method; separate the integers with ',' (half-width)")
    err = _one_line(capsys, [command, flag, f"1{sep}2", "--lang", "zh"])
    assert err.endswith(f"{flag}：'1{sep}2' 里有中文输入法的全角“{sep}”；整数之间请用半角 ','"), err
