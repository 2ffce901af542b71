from tests.models.seq2seq.fixtures import hf_seq2seq_models, seq2seq, seq2seq_dirs  # noqa: F401
