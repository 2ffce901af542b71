from tests.viewer.fixtures import full_trace, minilm, tiny_models, trace  # noqa: F401
