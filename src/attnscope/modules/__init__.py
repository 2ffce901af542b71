"""nn.Modules: attention (single and multi-head, grouped-query), embeddings, encoder layers and
stacks, and the decoder layers and stacks of the Llama kind (RMSNorm, gated MLP, rotary attention
with a key/value cache)."""

from ..config import DecoderConfig, TransformerConfig
from .attention import MultiHeadAttention, SingleHeadAttention
from .decoder import DecoderLayer, GatedFeedForward, TransformerDecoder
from .decoder_attention import DecoderAttention, KVCache
from .embeddings import Embeddings, sinusoidal_positions
from .encoder import Encoder, EncoderLayer, FeedForward, TransformerEncoder
from .rmsnorm import RMSNorm

__all__ = ["TransformerConfig", "DecoderConfig", "MultiHeadAttention", "SingleHeadAttention", "Embeddings",
           "sinusoidal_positions", "Encoder", "EncoderLayer", "FeedForward", "TransformerEncoder", "RMSNorm",
           "GatedFeedForward", "DecoderAttention", "KVCache", "DecoderLayer", "TransformerDecoder"]
