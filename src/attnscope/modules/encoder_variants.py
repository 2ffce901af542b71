"""What BERT's relatives change in the encoder: factorised embeddings and shared layers.

* **Factorised embeddings** (ALBERT, ELECTRA): token, segment and position vectors live in a
  narrower space of width ``embedding_size`` E (ALBERT-base: 128 for d_model 768) and one linear
  map E → d_model takes their (LayerNorm'ed) sum into the residual stream::

      embed.out        = LayerNorm_E(token + segment + position)        (B, L, E)
      embed.projected  = embed.out W_projᵀ + b_proj                     (B, L, d_model)

  so the vocabulary costs V·E + E·d parameters instead of V·d.
* **Shared layers** (ALBERT): every layer uses the weights of one group (``layer_groups`` groups,
  layer i uses group ``⌊i / (n_layers / groups)⌋`` as transformers does; ALBERT-base has one).
  The layers are separate modules whose parameters are the same ``nn.Parameter`` objects, so each
  layer keeps its own hook points (``layers.3.attn.weights`` is layer 3's attention, not layer
  0's) while a gradient adds up over every layer that uses a weight, as in ALBERT's training.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

import torch
from torch import nn

from ..config import TransformerConfig
from ..errors import ConfigError
from ..hooks import HookPoint
from ..i18n import error
from .embeddings import Embeddings

Tensor = torch.Tensor


@dataclass
class EncoderConfig(TransformerConfig):
    """A BERT-style encoder with ALBERT's and ELECTRA's options (see the module docstring).

    ``embedding_size``: width E of the embeddings (None: d_model, no projection).
    ``layer_groups``: the number of distinct layers whose weights the ``n_layers`` layers share
    (None: every layer its own).
    """

    embedding_size: Optional[int] = None
    layer_groups: Optional[int] = None

    kind = "encoder"

    def validate(self) -> None:
        super().validate()
        for name in ("embedding_size", "layer_groups"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v <= 0):
                raise error(ConfigError, "errors.core_positive_int_or_none", name=f"config.{name}", value=repr(v))
        if self.layer_groups is not None and self.layer_groups > self.n_layers:
            raise error(ConfigError, "errors.kernel_layer_groups", groups=self.layer_groups, n=self.n_layers)

    @property
    def factorised(self) -> bool:
        """True when the embeddings have their own width and a projection to d_model."""
        return self.embedding_size is not None and self.embedding_size != self.d_model

    def group_of(self, i: int) -> int:
        """The weight group that layer ``i`` uses (its own index without sharing)."""
        if self.layer_groups is None:
            return i
        return int(i / (self.n_layers / self.layer_groups))  # transformers' AlbertTransformer


class FactorisedEmbeddings(Embeddings):
    """:class:`Embeddings` of width E, then ``proj`` E → d_model; hook point ``projected`` (B, L, d_model)
    after ``out`` (B, L, E)."""

    def __init__(self, config: EncoderConfig) -> None:
        E = config.embedding_size
        assert E is not None  # made only for factorised configs (config.factorised)
        # the same embedding sum in E dimensions; heads play no part in it
        super().__init__(dataclasses.replace(config, d_model=E, n_heads=1, n_kv_heads=None, head_dim=None))
        self.proj = nn.Linear(E, config.d_model)
        self.projected = HookPoint()

    def forward(self, input_ids: Tensor, token_type_ids: Optional[Tensor] = None,
                position_ids: Optional[Tensor] = None) -> Tensor:
        x = super().forward(input_ids, token_type_ids, position_ids)  # (B, L, E)
        return self.projected(self.proj(x))  # (B, L, d_model)


def share_parameters(dst: nn.Module, src: nn.Module) -> None:
    """Make every parameter of ``dst`` (recursively) the very ``nn.Parameter`` of ``src`` at the same path."""
    for name, p in src.named_parameters():
        *path, leaf = name.split(".")
        owner = dst.get_submodule(".".join(path)) if path else dst
        setattr(owner, leaf, p)


def share_layers(layers: nn.ModuleList, config: EncoderConfig) -> None:
    """Tie each layer's parameters to those of the first layer of its group (ALBERT)."""
    if config.layer_groups is None:
        return
    first: dict[int, nn.Module] = {}
    for i, layer in enumerate(layers):
        g = config.group_of(i)
        if g in first:
            share_parameters(layer, first[g])
        else:
            first[g] = layer
