"""The encoder :class:`~attnscope.models.Model` with ALBERT's and ELECTRA's options: factorised
embeddings (E → d_model) and layers that share their weights (see
:mod:`attnscope.modules.encoder_variants`). DistilBERT and XLM-RoBERTa need neither and load as
plain :class:`~attnscope.models.Model` s."""

from __future__ import annotations

from ..hooks import name_hook_points
from ..modules.encoder_variants import EncoderConfig, FactorisedEmbeddings, share_layers
from .model import Model


class EncoderModel(Model):
    """A :class:`Model` whose ``embed`` may project E → d_model (``embed.projected``) and whose
    layers may share parameters. Built by :func:`attnscope.load` for albert and electra."""

    config: EncoderConfig

    def __init__(self, config: EncoderConfig, family, **kw) -> None:
        super().__init__(config, family, **kw)
        if config.factorised:
            self.embed = FactorisedEmbeddings(config)  # replaces the d_model-wide one, same place in order
        share_layers(self.layers, config)
        name_hook_points(self)  # the new embedding's hook points get their names too

    def extra_repr(self) -> str:
        c = self.config
        more = f", embedding_size={c.embedding_size}" if c.factorised else ""
        if c.layer_groups is not None:
            more += f", shared layer groups={c.layer_groups}"
        return super().extra_repr() + more


def with_encoder_options(base, **options) -> EncoderConfig:
    """The :class:`EncoderConfig` of a BERT-style ``TransformerConfig`` plus ``options``
    (``embedding_size``, ``layer_groups``)."""
    import dataclasses

    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
    return EncoderConfig(**fields, **options)
