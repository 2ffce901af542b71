"""nn.Modules: attention (single and multi-head), embeddings, encoder layers and stacks."""

from ..config import TransformerConfig
from .attention import MultiHeadAttention, SingleHeadAttention
from .embeddings import Embeddings, sinusoidal_positions
from .encoder import Encoder, EncoderLayer, FeedForward, TransformerEncoder

__all__ = ["TransformerConfig", "MultiHeadAttention", "SingleHeadAttention", "Embeddings", "sinusoidal_positions",
           "Encoder", "EncoderLayer", "FeedForward", "TransformerEncoder"]
