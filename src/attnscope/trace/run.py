"""Running a model with recorders and hooks: :func:`run_trace` and :func:`attached_hooks`.

Both resolve names and globs (``layers.*.attn.weights[3]``) against the model's hook points and
attach plain :class:`~attnscope.hooks.HookPoint` hooks for the duration of one forward pass (or of
a ``with`` block), under the model's lock, and always remove them again.
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator, Optional

import torch

from ..errors import InputError
from ..hooks import HookHandle, HookPoint, Recorder, check_like, name_hook_points
from ..i18n import error
from ..kernels.derived import keeping
from .derived import KEPT, RECIPE_STEPS, Derived, Keeper
from .names import in_vocabulary, key, resolve
from .record import Trace
from .replay import LayerReplay, ReplayCache, Replayed, kept_in_pass, layer_of, replayable
from .seq2seq import Seq2SeqTrace

Tensor = torch.Tensor
HookMap = Optional[dict]


class Sink(dict):
    """Where recorders write. A tensor that is a view of a bigger buffer (q of the fused qkv, one
    head of all heads) is copied, so that the trace keeps only the bytes it shows; a step that the
    kernel marked as a cheap exact function of an earlier one is kept as that call
    (:class:`~attnscope.trace.derived.Derived`, chosen by ``keeper``). With ``grad`` the tensors
    are kept as they are, in the autograd graph."""

    takes_live = True  # the Recorder hands over the tensor itself (see hooks.Recorder)

    def __init__(self, *, grad: bool = False, keeper: Optional[Keeper] = None) -> None:
        super().__init__()
        self.grad = grad
        self.keeper = None if grad else keeper

    def __setitem__(self, name: str, t: Tensor) -> None:
        if self.grad:  # the tensor itself, the one later steps use: a copy would have no gradient
            super().__setitem__(name, t)
            return
        if self.keeper is not None and (d := self.keeper.keep(name, t)) is not None:
            super().__setitem__(name, d)
            return
        t = t.detach()
        if t.untyped_storage().nbytes() > t.numel() * t.element_size():
            t = t.clone()
        if self.keeper is not None:
            self.keeper.hold(t)
        super().__setitem__(name, t)

    def kept_as_call(self, t: Tensor) -> bool:
        """Is ``t`` kept as the call that made it (:class:`Derived`), not as its memory?"""
        return self.keeper is not None and isinstance(t.__dict__.get(KEPT), Derived)


def _checked(fn: Callable, pattern: str) -> Callable:
    """``fn`` with errors that name the pattern the user wrote, not only the hook point."""
    def hook(t: Tensor, name: str):
        out = fn(t, name)
        if out is None:
            return None
        if not isinstance(out, torch.Tensor):
            raise error(InputError, "errors.trace_hook_return", pattern=repr(pattern), name=name, type=type(out).__name__)
        if out.shape != t.shape:
            raise error(InputError, "errors.trace_hook_shape", pattern=repr(pattern), name=name, shape=tuple(t.shape),
                        got=tuple(out.shape))
        check_like(out, t, "errors.trace_hook_dtype", pattern=repr(pattern), name=name)
        return out
    return hook


def hook_targets(model, hooks: HookMap, what: str) -> list[tuple[str, Optional[int], Callable, str]]:
    """``{name_or_glob: fn}`` checked and resolved against the model's hook points: (name, head or
    None, fn, the pattern written) per point; InputError naming ``what`` for a bad map."""
    if hooks is None:
        return []
    if not isinstance(hooks, dict):
        raise error(InputError, "errors.trace_hooks_type", what=what, type=type(hooks).__name__)
    out = []
    names = model.hook_names if hooks else []  # read from the module tree: once, not once a pattern
    for pattern, fn in hooks.items():
        if not callable(fn):
            raise error(InputError, "errors.trace_hook_callable", what=what, pattern=repr(pattern), type=type(fn).__name__)
        for n, h in resolve([pattern], names, model.config.n_heads, what=what):
            out.append((n, h, fn, pattern))
    return out


def attach(points: dict[str, HookPoint], targets, dir: str) -> list[HookHandle]:
    """Add each target of :func:`hook_targets` to its hook point (``dir`` "fwd" or "bwd"); the handles."""
    return [points[n].add_hook(_checked(fn, pattern), dir, head=h) for n, h, fn, pattern in targets]  # type: ignore[arg-type]


@contextlib.contextmanager
def attached_hooks(model, fwd: HookMap = None, bwd: HookMap = None) -> Iterator[None]:
    """Attach ``{name_or_glob: fn}`` forward and backward hooks while the block runs.

    ``fn(tensor, name)`` returns a replacement of the same shape or None; a ``[h]`` suffix gives
    fn head h's slice and writes its answer back into that head. Backward hooks receive the
    gradient of the step's output and may return a replacement gradient. The model's lock is
    held for the block (one hooked pass at a time); the hooks are removed however it ends.
    """
    targets = hook_targets(model, fwd, "hooks"), hook_targets(model, bwd, "bwd hooks")
    with model.lock:
        # the walk over every module (~1 ms on SmolLM2) only when there is something to attach
        points = name_hook_points(model) if targets[0] or targets[1] else {}
        handles: list[HookHandle] = []
        try:
            handles += attach(points, targets[0], "fwd")
            handles += attach(points, targets[1], "bwd")
            yield
        finally:
            for handle in handles:
                handle.remove()


def record_pass(model, points: dict[str, HookPoint], wanted: list, targets: list, bwd_hooks: HookMap, grad: bool,
                batch_size: int, forward: Callable[[], Tensor], replay: bool = False) -> tuple[dict, Tensor]:
    """Run ``forward()`` under the model's lock with the forward hooks ``targets`` (of
    :func:`hook_targets`) and ``bwd_hooks`` attached to the model's hook points ``points`` (by
    name, :func:`~attnscope.hooks.name_hook_points`) and a recorder on each ``(name, head)`` of
    ``wanted``; the hooks go again however it ends. Returns the recorded tensors by trace key, each
    with the batch axis ``batch_size`` (what every position shares, ``(1, L, d)``, becomes a view
    ``(B, L, d)``), and the output. With ``replay`` the steps of a layer other than its attention
    matrices and output are kept as :class:`~attnscope.trace.replay.Replayed` (the layer's
    arguments captured, the layer run again on read)."""
    replays, later = _replays(model, wanted, batch_size) if replay else ({}, set())
    bwd = hook_targets(model, bwd_hooks, "bwd hooks")
    with model.lock:
        handles = attach(points, bwd, "bwd") + attach(points, targets, "fwd")  # first: recorders record the replacement
        sink = Sink(grad=grad, keeper=None if grad else Keeper(_foreign(points)))
        try:
            for path, rep in replays.items():
                handles.append(model.get_submodule(path).register_forward_pre_hook(rep.capture, with_kwargs=True))
            for n, h in wanted:
                if (n, h) in later:
                    continue
                # One head of an L×S step is computed aside (about 1/H of the explicit path) unless
                # its gradient is wanted: then it must be the slice the output was computed from.
                handles.append(points[n].add_hook(Recorder(sink, grad=grad), head=h, read_only=not grad))
            with torch.enable_grad() if grad else torch.no_grad(), \
                    keeping() if not grad else contextlib.nullcontext():
                output = forward()
        finally:
            for handle in handles:
                handle.remove()
    tensors: dict = {}
    for n, h in wanted:
        k = key(n, h)
        if (n, h) in later:
            lay = layer_of(n)
            assert lay is not None  # only steps inside a layer are replayed
            tensors[k] = Replayed(replays[lay[0]], k)
            replays[lay[0]].steps.append(k)
            continue
        if k not in sink:  # cannot happen for names from model.hook_names; guard the invariant
            raise RuntimeError(f"internal: {k} was requested but not recorded")
        t = sink[k]
        if t.shape[0] != batch_size:
            t = t.value() if isinstance(t, Derived) else t
            t = t.expand(batch_size, *t.shape[1:])
        tensors[k] = t
    return tensors, output


def _replays(model, wanted: list, batch_size: int) -> tuple[dict[str, LayerReplay], set]:
    """One :class:`LayerReplay` per layer with a step to replay, by layer path, and the
    ``(name, head)`` pairs left to the replays."""
    cache = ReplayCache()
    by_layer: dict[str, list] = {}
    later = set()
    for n, h in wanted:
        lay = layer_of(n)
        if lay is not None:
            by_layer.setdefault(lay[0], []).append((n, h))
            if not kept_in_pass(lay[1]):
                later.add((n, h))
    replays = {path: LayerReplay(model, path, steps, batch_size, cache) for path, steps in by_layer.items()
               if any(s in later for s in steps)}
    return replays, later


def _foreign(points: dict[str, HookPoint]) -> frozenset:
    """Attention blocks with a forward hook (the user's, or one attached outside this pass) on a
    step that a kept recipe depends on: such a hook may change the step in place."""
    out = set()
    for name, point in points.items():
        block, _, step = name.rpartition(".")
        if step in RECIPE_STEPS and any(h.dir == "fwd" and not isinstance(h.fn, Recorder) for h in point.hooks):
            out.add(block)
    return frozenset(out)


def torch_hooked_in_layers(model) -> bool:
    """Has a module inside a layer a torch forward (pre-)hook (nnsight's way of changing a step)?
    The layers' own hooks (placement, streaming) move inputs and weights and change no value."""
    return any(m._forward_hooks or m._forward_pre_hooks for path, m in model.named_modules()
               if layer_of(path) is not None)


def run_trace(model, texts, names=None, hooks: HookMap = None, *, target=None, truncate: bool = False,
              grad: bool = False, bwd_hooks: HookMap = None, max_memory=None,
              replay: Optional[bool] = None) -> Trace:
    """Run ``texts`` through ``model`` recording ``names`` and applying ``hooks``; see :mod:`attnscope.trace`.

    Args:
        model: an :class:`attnscope.models.Model`.
        texts: a string, a list of strings (one padded batch), or a Batch from ``model.encode``;
            for an encoder–decoder model the source(s) the encoder reads.
        names: exact names or globs, optionally with ``[h]``; None records every name; ``[]``
            records nothing (useful with hooks).
        hooks: ``{name_or_glob: fn(tensor, name) -> tensor | None}``, forward.
        target: an encoder–decoder model's target text(s) for the decoder (one per source): the
            trace is then a :class:`~attnscope.trace.seq2seq.Seq2SeqTrace`.
        truncate: cut texts longer than the model's positions instead of raising.
        grad: run with autograd on: the recorded tensors and ``trace.output`` stay in the graph,
            so that ``torch.autograd.grad(loss(trace.output), trace[name])`` works.
        bwd_hooks: ``{name_or_glob: fn(grad, name) -> grad | None}``, called during a later
            ``backward()`` of the output (so they need ``grad=True``: InputError without it).
        max_memory: bytes, or a size like ``"2GB"``: refuse (InputError with the estimate) a
            trace estimated to need more (:func:`attnscope.trace.memory.estimate_trace_memory`).
    """
    points = name_hook_points(model)  # one walk over the module tree gives the names and the points
    wanted = resolve(names, [n for n in points if in_vocabulary(n)], model.config.n_heads)  # model.hook_names
    # hooks attached outside this call (model.hooks, a patch, a torch hook inside a layer) change the
    # pass as the call's own do: a layer run again on read would run without them
    attached = any(p.hooks for p in points.values()) or torch_hooked_in_layers(model)
    if replay is None:
        replay = not attached and replayable(names, hooks, bwd_hooks, grad)
    elif replay and (attached or not replayable(None, hooks, bwd_hooks, grad)):
        raise error(InputError, "errors.trace_replay_hooks")
    targets = hook_targets(model, hooks, "hooks")
    if bwd_hooks and not grad:  # the pass runs without autograd: the hooks would never be called
        raise error(InputError, "errors.trace_bwd_needs_grad")
    two = hasattr(model, "target_batch")  # two stacks: the encoder reads texts, the decoder target
    batch = model.source_batch(texts, truncate=truncate) if two else model.as_batch(texts, truncate=truncate)
    kw: dict = {}
    if two:
        dec_ids, dec_mask, kw["target_tokens"] = model.target_batch(target, len(batch), truncate=truncate)
        kw.update(decoder_input_ids=dec_ids, decoder_attention_mask=dec_mask,
                  target_texts=[target] if isinstance(target, str) else list(target))
        run = {"decoder_input_ids": dec_ids.to(model.device), "decoder_attention_mask": dec_mask.to(model.device)}
    elif target is not None:
        raise error(InputError, "errors.trace_target_one_text", name=model.name)
    else:
        run, kw["labels"] = {"token_type_ids": batch.token_type_ids}, batch.labels
    if max_memory is not None:
        from .memory import check_fits
        check_fits(model, batch, names, hooks, max_memory)
    tensors, output = record_pass(model, points, wanted, targets, bwd_hooks, grad, batch.input_ids.shape[0],
                                  lambda: model(batch.input_ids, batch.attention_mask, **run),  # (B, L, d)
                                  replay=replay)
    return (Seq2SeqTrace if two else Trace)(
        tensors, tokens=batch.tokens, input_ids=batch.input_ids.cpu(), attention_mask=batch.attention_mask.cpu(),
        model_name=model.name, family=model.family, config=model.config, texts=batch.texts,
        output=output if grad else output.detach(), **kw)
