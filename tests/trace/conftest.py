from tests.models.fixtures import hf_models, minilm, tiny_dirs, tiny_models  # noqa: F401
