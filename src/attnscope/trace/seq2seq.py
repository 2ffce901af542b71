"""Traces of encoder–decoder models (T5, BART): :class:`Seq2SeqTrace`, made by :func:`attnscope.trace.run.run_trace`.

Names (:data:`~attnscope.trace.names.SEQ2SEQ_NAMES`): every encoder name under ``encoder.``
(``encoder.layers.{i}.attn.weights`` (B, H, S, S)), the decoder's causal self-attention under
``decoder.layers.{i}.self_attn.*`` (B, H, T, T) and its cross-attention under
``decoder.layers.{i}.cross_attn.*`` (q (B, H, T, d), k and v (B, H, S, d), weights (B, H, T, S):
target rows, source columns). T5 records its relative position bias as ``…attn.bias`` /
``…self_attn.bias`` (B, H, L, L), the same tensor in every layer of a stack.

``trace.tokens`` / ``trace.lengths`` are the source's, ``trace.target_tokens`` /
``trace.target_lengths`` the decoder's (start token first). The read methods take ``attention=``
"encoder" (default), "self" or "cross"::

    tr.weights(0, heads=2, attention="cross", text=0)     # (T, S) of text 0's real tokens
    tr.mask(1, attention="self")                          # (B, 1, T, T) causal ∧ real target keys (a padded query: itself too)
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional, Union

import torch

from ..errors import InputError
from ..i18n import error
from .read import check_index
from .record import Trace

if TYPE_CHECKING:
    from ..modules.seq2seq import Seq2SeqConfig

Tensor = torch.Tensor

ATTENTIONS = ("encoder", "self", "cross")
#: Each attention's block (its name), the sides of its queries and keys, and whether it is causal.
BLOCKS = {"encoder": ("encoder.layers.{}.attn", "source", "source", False),
          "self": ("decoder.layers.{}.self_attn", "target", "target", True),
          "cross": ("decoder.layers.{}.cross_attn", "target", "source", False)}


class Seq2SeqTrace(Trace):
    """A :class:`Trace` with the target side too (see the module docstring)."""

    config: Seq2SeqConfig
    META_KEY = "seq2seq"  # what _meta_extra saves: Trace.load of its folder makes a Seq2SeqTrace

    def __init__(self, tensors, *, target_tokens: Optional[list] = None, decoder_input_ids: Optional[Tensor] = None,
                 decoder_attention_mask: Optional[Tensor] = None, target_texts: Optional[list] = None, **kw) -> None:
        super().__init__(tensors, **kw)
        self.target_tokens = target_tokens or []
        self.decoder_input_ids = decoder_input_ids
        self.decoder_attention_mask = decoder_attention_mask
        self.target_texts = target_texts or []

    @property
    def target_lengths(self) -> list[int]:
        return [len(t) for t in self.target_tokens]

    # ------------------------------------------------------------------------------------------
    # The read methods of Trace (step, qkv, mask, weights) take attention= "encoder" (the default),
    # "self" or "cross"; these three say what each names.
    def prefix(self, layer: int, attention: Optional[str] = None) -> str:
        """The name of one attention block: ``encoder.layers.{l}.attn``, ``decoder.layers.{l}.self_attn``
        or ``decoder.layers.{l}.cross_attn``."""
        attention = attention or "encoder"
        if attention not in ATTENTIONS:
            raise error(InputError, "errors.trace_attention_choice", choices=", ".join(ATTENTIONS), value=repr(attention))
        n = self.config.n_layers if attention == "encoder" else self.config.n_decoder_layers
        return BLOCKS[attention][0].format(check_index("layer", layer, n, "layer"))

    def _lengths(self, attention: Optional[str]) -> tuple[list[int], list[int]]:
        side = {"source": self.lengths, "target": self.target_lengths}
        _, queries, keys, _ = BLOCKS[attention or "encoder"]
        return side[queries], side[keys]

    def _sides(self, layer: int, attention: Optional[str]) -> tuple[Tensor, Tensor, bool, Optional[int]]:
        assert self.decoder_attention_mask is not None  # every traced or loaded Seq2SeqTrace has it
        side = {"source": self.attention_mask.bool(), "target": self.decoder_attention_mask.bool()}  # (B, S), (B, T)
        _, queries, keys, causal = BLOCKS[attention or "encoder"]
        return side[queries], side[keys], causal, None

    def _sees_itself(self, attention: Optional[str]) -> bool:
        return attention == "self"  # the decoder's causal mask is the decoders' (a padded query sees itself)

    def __repr__(self) -> str:
        assert self.decoder_input_ids is not None  # every traced or loaded Seq2SeqTrace has it
        return (f"Seq2SeqTrace(model={self.model_name!r}, texts={len(self.tokens)}, source length="
                f"{self.input_ids.shape[-1]}, target length={self.decoder_input_ids.shape[-1]}, "
                f"names={len(self)}, {self.nbytes / 2**20:.1f} MiB)")

    def _repr_html_(self) -> str:
        """A summary; the viewer of a (source, target) pair is made from the model (it reads T5's bias table)."""
        import html
        return (f"<pre>{html.escape(repr(self))}\nsource: {html.escape(' '.join(self.tokens[0]))}\n"
                f"target: {html.escape(' '.join(self.target_tokens[0]))}</pre>"
                "<p>For the encoder, decoder and cross views: <code>attnscope.viewer.seq2seq_page.save_html(model, "
                "source, target, 'page.html')</code> or <code>attnscope view SOURCE --target TARGET</code>; read the "
                "weights with <code>trace.weights(layer, attention='encoder'|'self'|'cross')</code>.</p>")

    # ------------------------------------------------------------------------------------------
    def _meta_extra(self) -> dict:  # saved under "seq2seq" in trace.json
        assert self.decoder_input_ids is not None and self.decoder_attention_mask is not None  # as in mask()
        return {"seq2seq": {"target_tokens": self.target_tokens, "target_texts": self.target_texts,
                            "decoder_input_ids": self.decoder_input_ids.tolist(),
                            "decoder_attention_mask": self.decoder_attention_mask.tolist()}}

    @classmethod
    def _meta_kw(cls, meta: dict, folder: Union[str, Path]) -> dict:
        s = meta.get("seq2seq")
        if not isinstance(s, dict):
            raise error(InputError, "errors.trace_not_seq2seq", folder=folder)
        path = Path(folder, "trace.json")
        out = {"target_texts": s.get("target_texts")}
        for field in ("target_tokens", "decoder_input_ids", "decoder_attention_mask"):
            if field not in s:
                raise error(InputError, "errors.trace_meta_missing", path=path, field=f"seq2seq.{field}")
            value = s[field]
            try:  # (B, T) ids and mask: one row of equal length per text
                fine = isinstance(value, list) and len(value) == len(meta["tokens"]) and all(
                    isinstance(r, list) and (field == "target_tokens" or len(r) == len(value[0])) for r in value)
                out[field] = value if field == "target_tokens" else torch.tensor(value, dtype=torch.long)
            except (TypeError, ValueError, RuntimeError, OverflowError):
                fine = False
            if not fine:
                raise error(InputError, "errors.trace_meta_field", path=path, field=f"seq2seq.{field}",
                            type=type(value).__name__)
        return out
