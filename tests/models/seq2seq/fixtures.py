"""Session fixtures of the encoder–decoder tests: the tiny T5/BART checkpoints (written once),
attnscope's models of them and transformers' eager models of the same folders."""

from __future__ import annotations

import pytest

import attnscope
from tests.models.seq2seq.tiny import BUILDERS, hf_seq2seq


@pytest.fixture(scope="session")
def seq2seq_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-seq2seq")
    return {name: build(root / name) for name, (build, _) in BUILDERS.items()}


@pytest.fixture(scope="session")
def seq2seq(seq2seq_dirs):
    return {name: attnscope.load(path) for name, path in seq2seq_dirs.items()}


@pytest.fixture(scope="session")
def hf_seq2seq_models(seq2seq_dirs):
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = hf_seq2seq(seq2seq_dirs[name])
        return cache[name]
    return get
