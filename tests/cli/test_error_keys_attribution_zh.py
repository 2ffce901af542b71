"""The errors of model.attribute and of evaluate-attribution in Chinese: a method that is not
there, a layer or a target out of range, a baseline of the wrong shape, a text too short for
leave-one-out, and evaluate-attribution's own option errors. Each carries its key and values; in
English the message is what it was, byte for byte; in Chinese it has the same values and no
English words but the values and the names a user types."""

from __future__ import annotations

import re

import pytest
import torch

import attnscope
from attnscope.attribution import METHODS
from attnscope.cli import main
from attnscope.errors import InputError
from attnscope.i18n import error_message
from tests.cli.test_error_keys_zh import english_words


@pytest.fixture(scope="module")
def minilm():
    return attnscope.load()


CASES = [
    # (what to call, the English message as it was written before it was keyed, words the zh line may keep)
    (lambda m: m.attribute("a cat sat", method="nope"),
     "unknown attribution method 'nope'; choose one of ", tuple(METHODS)),
    (lambda m: m.attribute("a cat sat", method="rollout", layer=9),
     "layer 9 is out of range; the model has 6 layers (0..5)", ()),
    (lambda m: m.attribute("a cat sat", method="grad_input", target=999),
     "target 999 is out of range: embedding features are 0..383", ()),
    (lambda m: m.attribute("a cat sat", method="grad_input", target=(3, 3)),
     "a target difference needs two different embedding features, got (3, 3)", ()),
    (lambda m: m.attribute("a cat sat", method="integrated_gradients", baseline=torch.zeros(7)),
     "baseline must have shape (384,) or (5, 384) (the text's embedding output), got (7,)", ("baseline",)),
    (lambda m: m.attribute("a cat sat", method="rollout", target=1),
     "rollout scores every output position against every input token; it takes no target (got 1)", ("rollout",)),
    (lambda m: m.attribute("a cat sat", method="leave_one_out", layer=1),
     "leave_one_out explains the model's output, not a layer; leave layer unset", ("leave_one_out", "layer")),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_attribute_errors_in_both_languages(minilm, case):
    call, english, keep = CASES[case]
    with pytest.raises(InputError) as e:
        call(minilm)
    assert str(e.value).startswith(english) and e.value.key.startswith("errors.attribution_")
    assert error_message(e.value, "en") == str(e.value)
    zh = error_message(e.value, "zh")
    assert english_words(zh, *keep) == set(), zh
    assert any("\u4e00" <= c <= "\u9fff" for c in zh)
    for number in re.findall(r"\d+", english):
        assert number in zh


@pytest.mark.parametrize("argv, english", [
    (["--methods", "attention,bogus"], "unknown attribution method 'bogus'; choose from "),
    (["--methods", "attention,attention"], "method 'attention' is named twice"),
    (["--limit", "alti=x"], "--limit takes METHOD=N with N a positive integer, got 'alti=x'"),
    (["--ig-baseline", "pad"], "--ig-baseline takes zero or a token id, got 'pad'"),
])
def test_evaluate_attribution_option_errors(capsys, tmp_path, argv, english):
    base = ["evaluate-attribution", "-o", str(tmp_path / "out")] + argv
    assert main(base) == 2
    en = capsys.readouterr().err.strip().splitlines()[-1]
    assert en.startswith("attnscope evaluate-attribution: error: " + english), en
    assert main(base + ["--lang", "zh"]) == 2
    zh = capsys.readouterr().err.strip().splitlines()[-1]
    assert any("\u4e00" <= c <= "\u9fff" for c in zh) and "error:" not in zh, zh
