"""One dataclass describes every Transformer stack attnscope builds.

BERT (post-LN, learned positions, segment embeddings, LayerNorm on the embeddings), GPT-2 (pre-LN,
causal, a final LayerNorm) and the small encoders of the experiments are all points in this space.
"""

from __future__ import annotations

from dataclasses import dataclass, asdict, field

from .errors import ConfigError
from .positions import get_position, position_names
from .scorings import SCORINGS

#: Position schemes known at import; :func:`attnscope.positions.position_names` is the live list.
POSITIONS = position_names()
NORMS = ("post", "pre")
ACTIVATIONS = ("gelu", "gelu_tanh", "relu")


@dataclass
class TransformerConfig:
    vocab_size: int = 30522
    d_model: int = 768
    n_heads: int = 12
    n_layers: int = 12
    d_ff: int = 3072
    max_positions: int = 512
    type_vocab_size: int = 2          # segment embeddings; 0 = none (GPT-2)
    position: str = "learned"         # "learned" | "sinusoidal" | "none"
    position_offset: int = 0          # RoBERTa numbers positions from padding_idx + 1
    norm: str = "post"                # "post" (BERT) | "pre" (GPT-2)
    embed_norm: bool = True           # LayerNorm after the embedding sum (BERT)
    final_norm: bool = False          # LayerNorm after the last layer (pre-LN stacks)
    activation: str = "gelu"          # "gelu" (erf) | "gelu_tanh" (GPT-2's gelu_new) | "relu"
    layer_norm_eps: float = 1e-12
    dropout: float = 0.1              # on embeddings, attention output and FFN output
    attn_dropout: float = 0.1         # on the attention weights
    bias: bool = True
    scoring: str = "scaled"
    causal: bool = False              # decoder-style stack: each token sees only its past
    pad_token_id: int = 0
    extra: dict = field(default_factory=dict)  # family-specific facts kept for the record

    def __post_init__(self) -> None:
        self.validate()

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    def validate(self) -> None:
        for name in ("vocab_size", "d_model", "n_heads", "n_layers", "d_ff", "max_positions"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ConfigError(f"config.{name} must be a positive integer, got {value!r}")
        if self.d_model % self.n_heads:
            raise ConfigError(f"config.d_model ({self.d_model}) must be divisible by config.n_heads "
                              f"({self.n_heads}); d_model % n_heads = {self.d_model % self.n_heads}")
        for name, allowed in (("position", position_names()), ("norm", NORMS), ("activation", ACTIVATIONS),
                              ("scoring", SCORINGS)):
            if getattr(self, name) not in allowed:
                raise ConfigError(f"config.{name} = {getattr(self, name)!r} is unknown; choose one of {', '.join(allowed)}")
        scheme = get_position(self.position)
        if scheme.check is not None:
            scheme.check(self)
        for name in ("dropout", "attn_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ConfigError(f"config.{name} must be in [0, 1), got {getattr(self, name)}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "TransformerConfig":
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        return cls(**known)
