"""Named hook points on every intermediate, in the manner of TransformerLens.

A :class:`HookPoint` is an identity module placed on a tensor that a user may want to read or
replace. Its *name* is its path in the model (``layers.3.attn.weights``), so that the names are
stable, documented, and the same as ``model.named_modules()``.

While nothing is attached a hook point costs one attribute check. Modules ask ``hp.active`` before
computing an optional intermediate (for example the attention weights), so that a trace of one
layer does not slow the others down.
"""

from __future__ import annotations

from typing import Callable, Optional

import torch
from torch import nn

#: ``fn(tensor, name)`` returns a replacement tensor, or None to leave it unchanged.
HookFn = Callable[[torch.Tensor, str], Optional[torch.Tensor]]


class HookPoint(nn.Module):
    """Identity on a named intermediate; records it and/or lets hook functions replace it."""

    def __init__(self) -> None:
        super().__init__()
        self.name: str = ""
        self.fns: list[HookFn] = []
        self.sink: Optional[dict] = None  # where to record the (possibly replaced) tensor

    @property
    def active(self) -> bool:
        return self.sink is not None or bool(self.fns)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.fns and self.sink is None:
            return x
        for fn in self.fns:
            out = fn(x, self.name)
            if out is not None:
                if not isinstance(out, torch.Tensor) or out.shape != x.shape:
                    got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
                    raise ValueError(f"hook on {self.name!r} must return None or a tensor of shape "
                                     f"{tuple(x.shape)}, got {got}")
                x = out
        if self.sink is not None:
            self.sink[self.name] = x.detach()
        return x

    def reset(self) -> None:
        self.fns = []
        self.sink = None

    def extra_repr(self) -> str:
        return f"name={self.name!r}"


def name_hook_points(root: nn.Module) -> dict[str, HookPoint]:
    """Give every HookPoint under ``root`` its path as name; return them by name, in order."""
    points = {}
    for path, module in root.named_modules():
        if isinstance(module, HookPoint):
            module.name = path
            points[path] = module
    return points
