"""The parts of a model the circuits read: the norm before each attention block (from the layer's
recipe), a norm's scale γ and shift β, the token embedding W_E and the unembedding W_U."""

from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from ..errors import InputError
from ..i18n import error
from ..modules.rmsnorm import RMSNorm
from ..recipe import get_layer_recipe

Tensor = torch.Tensor


def check_model(model) -> None:
    """InputError unless ``model`` is a one-stack model with a residual stream the heads read and
    write (not an encoder–decoder, not post-norm)."""
    if hasattr(model, "target_batch") or getattr(model.config, "kind", "") == "seq2seq":
        raise error(InputError, "errors.qkov_seq2seq", model=model.name)
    if model.config.norm == "post":
        raise error(InputError, "errors.qkov_post_norm", model=model.name)


def recipe_of(model, layer: int):
    """The layer's recipe: its own, or the one ``config.norm`` names."""
    recipe = getattr(model.layers[layer], "recipe", None)
    return recipe if recipe is not None else get_layer_recipe(model.config.norm)


def norm_before_attention(model, layer: int) -> Optional[tuple[str, nn.Module]]:
    """(recipe name, module) of the norm the layer's attention reads (``attn_in = ln1(x)``), or
    None when it reads the stream itself (OLMo 2's ``post_block``)."""
    recipe = recipe_of(model, layer)
    arg = next(s.args[0] for s in recipe.steps if s.op == "attention")
    while True:
        step = next((s for s in recipe.steps if s.name == arg), None)
        if step is None or step.op not in ("same", "norm"):
            return None
        if step.op == "norm":
            return str(step.module), getattr(model.layers[layer], str(step.module))
        arg = step.args[0]


def norm_scale_shift(norm: nn.Module, dtype: torch.dtype) -> tuple[Tensor, Optional[Tensor]]:
    """(γ (d,), β (d,) or None) of a LayerNorm or RMSNorm (γ = offset + w: Gemma's 1 + w)."""
    if isinstance(norm, nn.LayerNorm):
        d = norm.normalized_shape[-1]
        g = norm.weight.detach().to(dtype) if norm.weight is not None else torch.ones(d, dtype=dtype)
        return g, None if norm.bias is None else norm.bias.detach().to(dtype)
    if isinstance(norm, RMSNorm):
        return norm.offset + norm.weight.detach().to(dtype), None
    raise error(InputError, "errors.qkov_norm_kind", kind=type(norm).__name__)


def embedding_rows(model, dtype: torch.dtype = torch.float64) -> Tensor:
    """W_E (V, d): each token's row as it enters the residual stream — the token table times the
    family's embedding scale (Gemma: √d), through the embedding LayerNorm where there is one
    (BLOOM: exact, it has no position vectors to add first). GPT-2's learned position vectors are
    not in it (Elhage et al.'s W_E is the token embedding alone)."""
    emb = model.embed
    E = emb.token_embedding.weight.detach().to(dtype)  # (V, d)
    scale = float(getattr(model.config, "embed_scale", 1.0))
    if scale != 1.0:
        E = E * torch.tensor(scale, dtype=torch.float32).to(dtype)  # the model rounds √d to float32 too
    norm = getattr(emb, "norm", None)
    if norm is not None:
        E = torch.nn.functional.layer_norm(E, norm.normalized_shape, norm.weight.detach().to(dtype),
                                           norm.bias.detach().to(dtype), norm.eps)  # (V, d)
    return E


def unembedding(model, *, fold_norm: bool = True, dtype: torch.dtype = torch.float64) -> Tensor:
    """W_U (d, V) with ``logits = final_norm(x) @ W_U``; with ``fold_norm`` the final norm's γ is
    folded into its rows (diag(γ) W_U, as TransformerLens' fold_ln); its β (a constant logit per
    token) and the per-token 1/rms are not. Gemma's final soft-cap is left out."""
    if not getattr(model, "has_lm_head", False):
        raise error(InputError, "errors.qkov_needs_lm", model=model.name)
    rows = getattr(model, "lm_head_weight", None)  # the checkpoint's own output matrix, or the tied embedding
    rows = rows if rows is not None else model.embed.token_embedding.weight  # (V, d)
    W = rows.detach().to(dtype).T  # (d, V)
    if fold_norm:
        g, _ = norm_scale_shift(model.ln_f, dtype)
        W = g[:, None] * W
    return W
