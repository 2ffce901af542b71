"""Session fixtures shared by tests/plot, tests/viewer, tests/server and tests/browser."""

from __future__ import annotations

import pytest

import attnscope
from attnscope.viewer.run import trace_texts

#: The first article's sentence plus English words the default (uncased English) vocabulary knows.
TEXT = "我喜欢人工智能 the bank of the river"
OTHER = "I deposited money at the bank"


@pytest.fixture(scope="session")
def minilm():
    return attnscope.load()


@pytest.fixture(scope="session")
def trace(minilm):
    """TEXT and OTHER traced with what the viewer records (q, k, v, hidden states, layer 0 weights)."""
    return trace_texts(minilm, [TEXT, OTHER])


@pytest.fixture(scope="session")
def full_trace(minilm):
    """TEXT traced with every name recorded, weights of every layer included (the reference)."""
    return minilm.trace([TEXT])


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory):
    """Tiny random checkpoints: "bert-chinese" (tokens 我 喜 欢 … as in the article) and "gpt2" (causal)."""
    from attnscope.testing import tiny as testing
    root = tmp_path_factory.mktemp("tiny-viewer")
    return {name: attnscope.load(testing.BUILDERS[name](root / name)) for name in ("bert-chinese", "gpt2")}
