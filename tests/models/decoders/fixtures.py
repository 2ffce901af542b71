"""Session fixtures of the decoder tests: the tiny checkpoints (written once), attnscope's models
of them and transformers' eager models of the same folders (the reference)."""

from __future__ import annotations

import pytest

import attnscope
from tests.models.decoders.tiny import build_all, hf_model


@pytest.fixture(scope="session")
def decoder_dirs(tmp_path_factory):
    return build_all(tmp_path_factory.mktemp("tiny-decoders"))


@pytest.fixture(scope="session")
def decoders(decoder_dirs):
    return {name: attnscope.load(path) for name, path in decoder_dirs.items()}


@pytest.fixture(scope="session")
def hf_decoders(decoder_dirs):
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = hf_model(decoder_dirs[name])
        return cache[name]
    return get
