"""Fixtures of the attribution tests: the packaged MiniLM and tiny random checkpoints of a decoder
(GPT-2), a grouped-query decoder with sliding-window layers (Gemma 3), DeBERTa v3, T5 and BART."""

from __future__ import annotations

import pytest

import attnscope
import tests.models.decoders.tiny  # noqa: F401  (registers gemma3)
import tests.models.encoders.tiny  # noqa: F401  (registers deberta_v3)
import tests.models.seq2seq.tiny  # noqa: F401  (registers t5)
from attnscope.testing.tiny import FAMILIES

TINY = ("gpt2", "gemma3", "deberta_v3", "t5", "bart")


@pytest.fixture(scope="session")
def minilm():
    return attnscope.load()


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-attribution")
    cache: dict = {}

    def get(name: str):
        if name not in cache:
            cache[name] = attnscope.load(FAMILIES[name].build(root / name))
        return cache[name]
    return get


@pytest.fixture(params=("minilm",) + TINY)
def model(request, minilm, tiny):
    """Every model the methods must run on."""
    return minilm if request.param == "minilm" else tiny(request.param)
