"""Fixtures of the attribution tests: the packaged MiniLM and tiny random checkpoints of a decoder
(GPT-2), a grouped-query decoder with sliding-window layers (Gemma 3), DeBERTa v3, T5 and BART."""

from __future__ import annotations

import pytest

import attnscope
import tests.models.decoders.tiny  # noqa: F401  (registers gemma3)
import tests.models.encoders.tiny  # noqa: F401  (registers deberta_v3)
import tests.models.seq2seq.tiny  # noqa: F401  (registers t5)
from attnscope.testing.tiny import FAMILIES
from tests.memory_report import release_memory

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


@pytest.fixture(scope="module", params=("smollm2-135m", "gemma-3-270m"))
def real(request):
    """An installed decoder package, loaded once per test module that asks for it."""
    m = attnscope.load(request.param)
    release_memory()
    yield m
    del m
    release_memory()
