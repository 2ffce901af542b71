"""Session fixtures of the encoder-family tests: the tiny checkpoints (written once), attnscope's
models of them and transformers' eager models of the same folders (the reference)."""

from __future__ import annotations

import pytest

import attnscope
from tests.models.encoders.tiny import BUILDERS, hf_encoder


@pytest.fixture(scope="session")
def encoder_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-encoders")
    return {name: build(root / name) for name, (build, _) in BUILDERS.items()}


@pytest.fixture(scope="session")
def encoders(encoder_dirs):
    return {name: attnscope.load(path) for name, path in encoder_dirs.items()}


@pytest.fixture(scope="session")
def hf_encoders(encoder_dirs):
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = hf_encoder(encoder_dirs[name])
        return cache[name]
    return get
