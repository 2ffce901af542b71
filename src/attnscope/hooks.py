"""Named hook points on every intermediate, in the manner of TransformerLens.

A :class:`HookPoint` is an identity module placed on a tensor that a user may want to read or
replace. Its *name* is its path in the model (``layers.3.attn.weights``), so that the names are
stable, documented, and the same as ``model.named_modules()``.

Hooks::

    hp.add_hook(fn)                      # forward: fn(tensor, name) -> replacement or None
    hp.add_hook(fn, dir="bwd")           # backward: fn(grad, name) -> replacement grad or None
    hp.add_hook(fn, head=3)              # head 3's slice t[:, 3] of a (B, H, …) tensor only
    handle = hp.add_hook(fn); handle.remove()

Hooks run in the order they were added; a replacement flows into every later hook and step. A
head hook sees ``t[:, h]`` and its answer is written back into that head only. While nothing is
attached a hook point costs one attribute check. Modules ask :attr:`HookPoint.active` before
computing an optional intermediate in full (the attention weights, say) and :attr:`HookPoint.heads`
for the heads that are wanted alone, so that hooking one head of one layer leaves the fast fused
kernel running everywhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Literal, Optional

import torch
from torch import nn

from .errors import InputError, fmt_shape, shape_or_type
from .i18n import error

#: ``fn(tensor, name)`` returns a replacement tensor, or None to leave it unchanged.
HookFn = Callable[[torch.Tensor, str], Optional[torch.Tensor]]
Direction = Literal["fwd", "bwd"]
DIRECTIONS = ("fwd", "bwd")


@dataclass(eq=False)
class Hook:
    """One attached function: its direction and, for a head hook, the head (dim 1) it sees."""

    fn: HookFn
    dir: Direction = "fwd"
    head: Optional[int] = None
    read_only: bool = False


class HookHandle:
    """Returned by :meth:`HookPoint.add_hook`; ``remove()`` detaches that hook (idempotent)."""

    def __init__(self, point: "HookPoint", hook: Hook) -> None:
        self.point, self.hook = point, hook

    def remove(self) -> None:
        hooks = self.point.hooks
        if self.hook in hooks:
            hooks.remove(self.hook)

    def __enter__(self) -> "HookHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


class HookPoint(nn.Module):
    """Identity on a named intermediate that lets hook functions read or replace it."""

    def __init__(self) -> None:
        super().__init__()
        self.name: str = ""
        self.hooks: list[Hook] = []

    # ------------------------------------------------------------------------------------------
    def add_hook(self, fn: HookFn, dir: Direction = "fwd", *, head: Optional[int] = None,
                 read_only: bool = False) -> HookHandle:
        """Attach ``fn``; see the module docstring. Returns a handle whose ``remove()`` detaches it.

        ``read_only=True`` (with ``head``) promises that ``fn`` only reads: a module may then
        compute that head of an L×S step aside, beside a fused kernel that never forms the step,
        and the answer of ``fn`` is ignored. A hook that may replace its head makes the module
        form the whole step, so that the replacement flows into the output.
        """
        if not callable(fn):
            raise error(InputError, "errors.core_hook_callable", name=repr(self.name), type=type(fn).__name__)
        if dir not in DIRECTIONS:
            raise error(InputError, "errors.core_hook_dir", value=repr(dir))
        if head is not None and (isinstance(head, bool) or not isinstance(head, int) or head < 0):
            raise error(InputError, "errors.core_hook_head_type", value=repr(head))
        hook = Hook(fn, dir, head, read_only and head is not None and dir == "fwd")
        self.hooks.append(hook)
        return HookHandle(self, hook)

    def remove_hooks(self, dir: Literal["fwd", "bwd", "both"] = "both") -> None:
        """Detach every hook of direction ``dir`` ("both": all of them)."""
        self.hooks = [h for h in self.hooks if dir != "both" and h.dir != dir]

    reset = remove_hooks

    @property
    def active(self) -> bool:
        """True when the whole tensor must exist: a hook on all of it, or one that may replace a head."""
        return any(not h.read_only for h in self.hooks)

    @property
    def heads(self) -> list[int]:
        """The heads that read-only hooks want alone, sorted (empty when none)."""
        return sorted({h.head for h in self.hooks if h.read_only})  # type: ignore[misc]

    # ------------------------------------------------------------------------------------------
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.hooks:
            return x
        return self._run(x, None)

    def forward_heads(self, x: torch.Tensor, heads: Iterable[int]) -> torch.Tensor:
        """The hooks of ``heads`` on a tensor that holds only those heads, ``(B, len(heads), …)``.

        Modules call this for a step they computed for a few heads only, beside a fused kernel
        that never formed the full tensor. Whole-tensor hooks are not run (none may be attached
        when a module takes this path: see :attr:`active`).
        """
        if not self.hooks:
            return x
        return self._run(x, list(heads))

    def _run(self, x: torch.Tensor, only: Optional[list[int]]) -> torch.Tensor:
        # only=None: x holds every head (dim 1 = head h); else x[:, j] is head only[j].
        def where(head: int) -> int:
            return head if only is None else only.index(head)

        for hook in self.hooks:
            if hook.dir != "fwd" or (only is not None and hook.head not in only):
                continue
            if hook.head is not None and only is None:
                _check_head(x, hook.head, self.name)
            # A head's slice is written back under autograd also when not replaced, so that what
            # the hook saw is what later steps are computed from (its gradient exists).
            x = _through(hook, x, self.name, where, write_back=not hook.read_only)
        bwd = [h for h in self.hooks if h.dir == "bwd" and (only is None or h.head in only)]
        if bwd and x.requires_grad:
            x.register_hook(_backward(bwd, self.name, where))
        return x

    def extra_repr(self) -> str:
        return f"name={self.name!r}" + (f", hooks={len(self.hooks)}" if self.hooks else "")


class Recorder:
    """A forward hook that stores what it sees in ``sink[name]`` (detached unless ``grad``; a sink
    with ``takes_live = True`` gets the tensor itself and detaches it, so that it can read what
    the kernel attached to it: :mod:`attnscope.kernels.derived`)."""

    def __init__(self, sink: dict, *, grad: bool = False) -> None:
        self.sink, self.grad = sink, grad
        self.live = grad or getattr(sink, "takes_live", False)

    def __call__(self, t: torch.Tensor, name: str) -> None:
        self.sink[name] = t if self.live else t.detach()

    def releases(self, t: torch.Tensor) -> bool:
        """Did the sink keep something other than ``t``'s memory (a trace keeps some steps as the
        call that made them: :mod:`attnscope.trace.derived`), so that the kernel may write over t?"""
        kept_as_call = getattr(self.sink, "kept_as_call", None)
        return kept_as_call is not None and bool(kept_as_call(t))


def _apply(fn: HookFn, t: torch.Tensor, name: str) -> torch.Tensor:
    out = fn(t, name)
    if out is None:
        return t
    if not isinstance(out, torch.Tensor) or out.shape != t.shape:
        raise error(InputError, "errors.core_hook_return", name=repr(name), shape=fmt_shape(t.shape),
                    got=shape_or_type(out))
    check_like(out, t, name=repr(name))
    return out


def check_like(out: torch.Tensor, t: torch.Tensor, key: str = "errors.core_hook_dtype", **where) -> None:
    """InputError ``key`` (with ``where``: the hook's name) unless ``out``, a hook's replacement of
    ``t``, has ``t``'s dtype and device: the next step would fail deep in torch (or a head's slice
    be cast silently)."""
    if out.dtype != t.dtype or out.device != t.device:
        raise error(InputError, key, dtype=t.dtype, device=t.device, got_dtype=out.dtype, got_device=out.device,
                    **where)


def _check_head(x: torch.Tensor, head: int, name: str) -> None:
    if x.dim() < 2 or head >= x.shape[1]:
        raise error(InputError, "errors.core_hook_head", head=head, name=repr(name), shape=tuple(x.shape),
                    last=x.shape[1] - 1 if x.dim() > 1 else 0)


def _through(hook: Hook, t: torch.Tensor, name: str, where: Callable[[int], int], *,
             write_back: bool = False) -> torch.Tensor:
    """``t`` through one hook: all of it, or for a head hook its slice ``t[:, where(head)]``, written
    back into a copy of ``t`` when the hook replaced it (with ``write_back``, when it requires grad too)."""
    if hook.head is None:
        return _apply(hook.fn, t, name)
    j = where(hook.head)
    part = t[:, j]
    out = _apply(hook.fn, part, f"{name}[{hook.head}]")
    if out is not part or (write_back and part.requires_grad):
        t = t.clone()
        t[:, j] = out
    return t


def _backward(hooks: list[Hook], name: str, where: Callable[[int], int]):
    """A tensor hook that runs ``hooks`` on the gradient, in order, like forward hooks."""
    def on_grad(g: torch.Tensor) -> torch.Tensor:
        for hook in hooks:
            g = _through(hook, g, name, where)
        return g
    return on_grad


def name_hook_points(root: nn.Module) -> dict[str, HookPoint]:
    """Give every HookPoint under ``root`` its path as name; return them by name, in order."""
    points = {}
    for path, module in root.named_modules():
        if isinstance(module, HookPoint):
            if module.__dict__.get("name") != path:  # nn.Module.__setattr__ is slow; a trace calls this twice
                module.name = path
            points[path] = module
    return points
