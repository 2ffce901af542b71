from tests.models.encoders.fixtures import encoder_dirs, encoders, hf_encoders  # noqa: F401
