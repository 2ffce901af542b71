"""nn.Modules: attention (single and multi-head), embeddings, encoder layers and stacks."""

from .attention import MultiHeadAttention, SingleHeadAttention
from .embeddings import Embeddings, sinusoidal_positions
from .encoder import Encoder, EncoderLayer, FeedForward, TransformerEncoder

__all__ = ["MultiHeadAttention", "SingleHeadAttention", "Embeddings", "sinusoidal_positions",
           "Encoder", "EncoderLayer", "FeedForward", "TransformerEncoder"]
