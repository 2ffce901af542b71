"""attnscope: Transformer self-attention you can see every number of.

    >>> import torch, attnscope
    >>> q = k = v = torch.randn(1, 12, 9, 64)            # (B, H, L, d_head)
    >>> out, w = attnscope.attention(q, k, v, return_weights=True)
    >>> w.sum(-1)                                          # every row sums to 1
"""

from . import positions, reference, scorings
from .blockwise import attention_weights, blockwise_attention
from .check import check  # the function (its package is attnscope.check's modules)
from .config import TransformerConfig
from .errors import AttnscopeError, ConfigError, InputError, ModelLoadError, NonFiniteError, ShapeError
from .explain import explain
from .functional import SCORINGS, attention, attention_steps, log_softmax, softmax
from .hooks import HookPoint, name_hook_points
from .kernels import checking_finite
from .models import Model, load
from .modules import (
    Embeddings,
    Encoder,
    EncoderLayer,
    FeedForward,
    MultiHeadAttention,
    SingleHeadAttention,
    TransformerEncoder,
    sinusoidal_positions,
)
from .positions import PositionScheme, register_position
from .scorings import Scoring, register_scoring
from .trace import TRACE_NAMES, Trace

__version__ = "0.1.0"

__all__ = [
    "TransformerConfig", "AttnscopeError", "ConfigError", "InputError", "ModelLoadError", "NonFiniteError", "ShapeError",
    "SCORINGS", "attention", "attention_steps", "log_softmax", "softmax", "HookPoint", "name_hook_points",
    "Embeddings", "Encoder", "EncoderLayer", "FeedForward", "MultiHeadAttention", "SingleHeadAttention",
    "TransformerEncoder", "sinusoidal_positions", "__version__", "load", "Model", "Trace", "TRACE_NAMES", "explain", "check",
    "blockwise_attention", "attention_weights", "checking_finite", "Scoring", "register_scoring",
    "PositionScheme", "register_position", "reference", "scorings", "positions",
]
