from tests.models.decoders.fixtures import decoder_dirs, decoders, hf_decoders  # noqa: F401
from tests.models.encoders.fixtures import encoder_dirs, encoders  # noqa: F401
from tests.models.fixtures import hf_models, minilm, tiny_dirs, tiny_models  # noqa: F401
from tests.models.seq2seq.fixtures import seq2seq, seq2seq_dirs  # noqa: F401
