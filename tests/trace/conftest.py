from tests.models.decoders.fixtures import decoder_dirs, decoders, hf_decoders  # noqa: F401
from tests.models.fixtures import hf_models, minilm, tiny_dirs, tiny_models  # noqa: F401
