"""One generic Transformer layer that runs a :class:`~attnscope.recipe.LayerRecipe`.

The recipe (``config.norm`` names one: ``post``, ``pre``, ``sandwich``, ``post_block``) says which
steps the layer takes and in which order; the stack says what the pieces are::

    RecipeLayer(recipe, attn=<attention block>, ffn=<MLP block>, norm=<factory of one norm>)

For every step the layer registers, in the recipe's order, the module the step needs: a norm
module under the name the recipe gives (``ln1``, ``ln2``, ``ln_attn_post``, ``ln_ffn_post``: the
weight-loading rules and ``state_dict`` keys use these names), the block under the step's name
(``attn``, ``ffn``), and a :class:`~attnscope.hooks.HookPoint` under the step's name for every
step that is not a block. So ``named_modules()`` lists the hook points in forward order and their
names are the recipe's (``attn_in``, ``attn_post_norm``, ``attn_resid``, ``ffn_in``, …, ``out``).

``forward(x, *args, need_weights=False, cross=None, **kwargs)`` passes ``args`` and ``kwargs`` to the
attention block (each kind of attention takes its own: masks and causality in the encoders, rotary
tables, mask and cache in the decoders, relative embeddings in DeBERTa, a score bias in T5) and
the keywords ``cross`` to a ``cross_attention`` block (an encoder–decoder's decoder layer: the
encoder's output as ``context``); with ``need_weights`` each attention block's weights come back
after the output, ``(out, weights)`` or ``(out, self_weights, cross_weights)``. Dropout (encoders train with it)
acts on the right operand of each residual sum, the block's output.
"""

from __future__ import annotations

from typing import Callable, Optional, Union, cast

import torch
from torch import nn

from ..errors import ConfigError
from ..hooks import HookPoint
from ..i18n import error
from ..kernels.validate import check_flag
from ..recipe import BLOCK_OPS, INPUT, LayerRecipe, get_layer_recipe

Tensor = torch.Tensor


class RecipeLayer(nn.Module):
    """The layer of ``recipe`` (a :class:`LayerRecipe` or a registered name) around the blocks
    ``attn`` and ``ffn``; ``norm()`` makes one norm module; ``dropout`` on each block's output in
    the residual sums while training. ``x (B, L, d)`` → ``(B, L, d)``."""

    # hook points every registered recipe has, registered by name in __init__ (for a type checker)
    attn_in: HookPoint
    attn_resid: HookPoint
    ffn_in: HookPoint
    ffn_resid: HookPoint
    out: HookPoint

    def __init__(self, recipe: Union[LayerRecipe, str], *, attn: nn.Module, ffn: nn.Module,
                 norm: Callable[[], nn.Module], dropout: float = 0.0,
                 cross_attn: Optional[nn.Module] = None) -> None:
        super().__init__()
        self.recipe = get_layer_recipe(recipe) if isinstance(recipe, str) else recipe
        blocks = {"attention": attn, "cross_attention": cross_attn, "mlp": ffn}
        for step in self.recipe.steps:  # registration order = forward order (named_modules)
            if step.op == "norm" and step.module is not None and step.module not in self._modules:
                self.add_module(step.module, norm())
            block = blocks.get(step.op) if step.op in BLOCK_OPS else HookPoint()
            if block is None:
                raise error(ConfigError, "errors.core_recipe_no_module", name=repr(self.recipe.name), op=step.op,
                            step_name=repr(step.name))
            self.add_module(step.name, block)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: Tensor, *args, need_weights: bool = False, cross: Optional[dict] = None, **kwargs):
        """``x (B, L, d)`` → ``(B, L, d)``; ``args``/``kwargs`` go to the attention block, ``cross``
        (keywords: ``context``, the encoder's output, …) to the cross-attention block. With
        ``need_weights``: ``(out, weights (B, H, L, S), …)``, one per attention block in order."""
        need_weights = check_flag(need_weights, "need_weights")  # 'no' would be truthy
        values: dict[str, Tensor] = {INPUT: x}
        modules = cast("dict[str, nn.Module]", self._modules)
        drop = self.training and self.drop.p > 0.0
        weights = []
        for step in self.recipe.steps:
            a = values[step.args[0]]
            if step.op in ("attention", "cross_attention"):
                call_args, call_kw = (args, kwargs) if step.op == "attention" else ((), cross or {})
                if need_weights:
                    values[step.name], w = modules[step.name](a, *call_args, need_weights=True, **call_kw)  # (B, L, d)
                    weights.append(w)  # (B, H, L, S)
                else:
                    values[step.name] = modules[step.name](a, *call_args, **call_kw)  # (B, L, d)
                continue
            if step.op == "mlp":
                values[step.name] = modules[step.name](a)  # (B, L, d)
                continue
            if step.op == "norm":
                a = modules[str(step.module)](a)  # (B, L, d)
            elif step.op == "add":
                b = values[step.args[1]]
                a = a + (self.drop(b) if drop else b)  # (B, L, d)
            values[step.name] = modules[step.name](a)  # the step's hook point, (B, L, d)
        out = values["out"]  # (B, L, d)
        return (out, *weights) if need_weights else out

    def extra_repr(self) -> str:
        return f"recipe={self.recipe.name!r}"
