"""Record (and replace) every intermediate of a forward pass under stable names.

    >>> import attnscope
    >>> model = attnscope.load()                                   # all-MiniLM-L6-v2
    >>> tr = model.trace("The cat sat on the mat.", names="layers.*.attn.weights")
    >>> tr["layers.0.attn.weights"].shape                          # (B, H, L, L)

Names (public API, pinned by a test: :data:`TRACE_NAMES`; ``{i}`` = layer index), in forward order:

=================================  ====================  ========================================
name                               shape                 what
=================================  ====================  ========================================
``embed.tokens``                   (B, L, d)             token embedding rows
``embed.segments``                 (B, L, d)             segment (token type) embeddings; not GPT-2
``embed.positions``                (B, L, d)             position embeddings (one row per position)
``embed.out``                      (B, L, d)             sum (+ LayerNorm in BERT/RoBERTa)
``layers.{i}.attn_in``             (B, L, d)             attention input (after ln1 in GPT-2)
``layers.{i}.attn.q|k|v``          (B, H, L, d_head)     per-head projections
``layers.{i}.attn.scores``         (B, H, L, L)          raw q·kᵀ
``layers.{i}.attn.scaled``         (B, H, L, L)          scores / √d_head
``layers.{i}.attn.masked``         (B, H, L, L)          + mask (-inf at padding / future keys)
``layers.{i}.attn.weights``        (B, H, L, L)          softmax; each row sums to 1
``layers.{i}.attn.z``              (B, H, L, d_head)     weights · v, per head
``layers.{i}.attn.merged``         (B, L, d)             heads concatenated
``layers.{i}.attn.out``            (B, L, d)             after W_O
``layers.{i}.attn_resid``          (B, L, d)             residual stream + attention
``layers.{i}.ffn_in``              (B, L, d)             FFN input (LayerNorm of the above)
``layers.{i}.ffn.hidden``          (B, L, d_ff)          act(W_1 x + b_1)
``layers.{i}.ffn.out``             (B, L, d)             W_2 hidden + b_2
``layers.{i}.ffn_resid``           (B, L, d)             + the residual
``layers.{i}.out``                 (B, L, d)             the layer's output (after ln2 in BERT)
``final_norm``                     (B, L, d)             after the final LayerNorm; GPT-2 only
=================================  ====================  ========================================

**One head.** A ``[h]`` suffix on a per-head name (``q k v scores scaled masked weights z``)
selects head h and drops the head axis: ``layers.3.attn.weights[5]`` is ``(B, L, L)``. Globs
work with it (``layers.*.attn.weights[0]``). Asking for one head's scores/weights computes them
for that head only, beside the fast fused kernel that still computes the layer's output, so it
costs about 1/H of a full weights trace of that layer; asking for the full ``layers.3.attn.weights``
switches only layer 3 to the explicit (step-by-step) path. Other layers are untouched.

**Hooks.** ``hooks={name_or_glob: fn}``; ``fn(tensor, name)`` returns a replacement of the same
shape, or None to leave it. A replacement flows into every later step and the output. A hook on
``name[h]`` receives head h's slice and its replacement is written back into that head only.
Hooks on scores/scaled/masked/weights put that layer on the explicit path.

**Padding.** A list of texts runs as one batch, right-padded to the longest. ``trace.tokens``
lists each text's tokens without padding and ``trace.lengths`` their counts; the recorded
tensors still have all L positions. Keys at padded positions are masked (``masked`` holds -inf
there, ``weights`` 0); rows and vectors *at* padded positions are computed but meaningless —
slice ``[:n]`` with ``n = trace.lengths[b]``.
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import re
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence, Union

import numpy as np
import torch

from .config import TransformerConfig
from .errors import InputError

Tensor = torch.Tensor

#: Name templates of every traceable intermediate, in forward order. Public API.
TRACE_NAMES: tuple[str, ...] = (
    "embed.tokens", "embed.segments", "embed.positions", "embed.out",
    "layers.{i}.attn_in",
    "layers.{i}.attn.q", "layers.{i}.attn.k", "layers.{i}.attn.v",
    "layers.{i}.attn.scores", "layers.{i}.attn.scaled", "layers.{i}.attn.masked", "layers.{i}.attn.weights",
    "layers.{i}.attn.z", "layers.{i}.attn.merged", "layers.{i}.attn.out",
    "layers.{i}.attn_resid", "layers.{i}.ffn_in", "layers.{i}.ffn.hidden", "layers.{i}.ffn.out",
    "layers.{i}.ffn_resid", "layers.{i}.out",
    "final_norm",
)

#: Steps of ``layers.{i}.attn`` that have a head axis (dim 1) and accept a ``[h]`` suffix.
HEAD_STEPS: tuple[str, ...] = ("q", "k", "v", "scores", "scaled", "masked", "weights", "z")

#: Of those, the ones that need the L×L score matrix (the explicit path) when recorded in full.
SCORE_STEPS: tuple[str, ...] = ("scores", "scaled", "masked", "weights")

_HEAD_SUFFIX = re.compile(r"^(.*)\[(\d+)\]$")

FORMAT = "attnscope.trace"
FORMAT_VERSION = 1


def expand_names(config: TransformerConfig) -> list[str]:
    """Every concrete name for a model with ``config``, in forward order.

    Names that never fire for this architecture are left out: ``embed.segments`` without segment
    embeddings (GPT-2), ``embed.positions`` without positions, ``final_norm`` without a final
    LayerNorm (BERT, RoBERTa).
    """
    out = []
    for t in TRACE_NAMES:
        if t == "embed.segments" and config.type_vocab_size == 0:
            continue
        if t == "embed.positions" and config.position == "none":
            continue
        if t == "final_norm" and not config.final_norm:
            continue
        if "{i}" in t:
            continue
        out.append(t)
    layer_templates = [t for t in TRACE_NAMES if "{i}" in t]
    head = out[: out.index("embed.out") + 1]
    tail = [n for n in out if n not in head]
    return head + [t.format(i=i) for i in range(config.n_layers) for t in layer_templates] + tail


def _split_head(pattern: str) -> tuple[str, Optional[int]]:
    m = _HEAD_SUFFIX.match(pattern)
    return (m.group(1), int(m.group(2))) if m else (pattern, None)


def _is_head_step(name: str) -> bool:
    parts = name.split(".")
    return len(parts) == 4 and parts[0] == "layers" and parts[2] == "attn" and parts[3] in HEAD_STEPS


def resolve(patterns: Union[None, str, Iterable[str]], all_names: Sequence[str], n_heads: int,
            what: str = "names") -> list[tuple[str, Optional[int]]]:
    """Exact names or globs (with an optional ``[h]`` suffix) → ``[(name, head or None)]``, in
    forward order, without repeats. InputError for a pattern that matches nothing (with the
    closest names), a ``[h]`` on a name without heads, or h out of range."""
    if patterns is None:
        return [(n, None) for n in all_names]
    if isinstance(patterns, str):
        patterns = [patterns]
    try:
        patterns = list(patterns)
    except TypeError:
        raise InputError(f"{what} must be a string or a list of strings, got {type(patterns).__name__}") from None
    chosen: set[tuple[str, Optional[int]]] = set()
    for p in patterns:
        if not isinstance(p, str):
            raise InputError(f"{what} must be strings, got {p!r}")
        base, head = _split_head(p.strip())
        matched = [n for n in all_names if fnmatch.fnmatchcase(n, base)]
        if not matched:
            close = difflib.get_close_matches(base, all_names, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else f"; see model.hook_names ({len(all_names)} names)"
            raise InputError(f"{what}: {p!r} matches no trace name{hint}")
        if head is not None:
            bad = [n for n in matched if not _is_head_step(n)]
            if bad:
                raise InputError(f"{what}: {p!r}: a [head] suffix needs a per-head name "
                                 f"(layers.{{i}}.attn.{{{','.join(HEAD_STEPS)}}}), got {bad[0]!r}")
            if not 0 <= head < n_heads:
                raise InputError(f"{what}: {p!r}: head {head} out of range; the model has {n_heads} heads (0..{n_heads - 1})")
        chosen.update((n, head) for n in matched)
    order = {n: i for i, n in enumerate(all_names)}
    return sorted(chosen, key=lambda nh: (order[nh[0]], -1 if nh[1] is None else nh[1]))


def key(name: str, head: Optional[int]) -> str:
    return name if head is None else f"{name}[{head}]"


class _Sink(dict):
    """Where hook points record. A tensor that is a view of a bigger buffer (q of the fused qkv,
    one head of all heads) is copied, so that the trace keeps only the bytes it shows."""

    def __setitem__(self, name: str, t: Tensor) -> None:
        t = t.detach()
        if t.untyped_storage().nbytes() > t.numel() * t.element_size():
            t = t.clone()
        super().__setitem__(name, t)


def _head_hook(fn: Callable, head: int, pattern: str) -> Callable:
    """A hook on the full tensor that shows ``fn`` head ``head``'s slice and writes its answer back."""
    def hook(t: Tensor, name: str):
        part = t[:, head]
        out = fn(part, f"{name}[{head}]")
        if out is None:
            return None
        _check_replacement(out, part, pattern, f"{name}[{head}]")
        t = t.clone()
        t[:, head] = out
        return t
    return hook


def _checked_hook(fn: Callable, pattern: str) -> Callable:
    def hook(t: Tensor, name: str):
        out = fn(t, name)
        if out is not None:
            _check_replacement(out, t, pattern, name)
        return out
    return hook


def _check_replacement(out, t: Tensor, pattern: str, name: str) -> None:
    if not isinstance(out, torch.Tensor):
        raise InputError(f"hook {pattern!r} on {name} must return None or a tensor, got {type(out).__name__}")
    if out.shape != t.shape:
        raise InputError(f"hook {pattern!r} on {name} must return a tensor of shape {tuple(t.shape)}, "
                         f"got {tuple(out.shape)}")


# ----------------------------------------------------------------------------------------------

class Trace:
    """The intermediates of one forward pass, by name, with the tokens they belong to.

    ``trace[name]`` is a tensor with the batch first (see the table in :mod:`attnscope.trace`);
    ``trace.names`` lists the recorded names in forward order; ``trace.tokens`` the token strings
    of each text (no padding); ``trace.output`` the model's last hidden states (B, L, d).
    """

    def __init__(self, tensors: dict[str, Tensor], *, tokens: list[list[str]], input_ids: Tensor,
                 attention_mask: Tensor, model_name: str, family: str, config: TransformerConfig,
                 texts: Optional[list[str]] = None, output: Optional[Tensor] = None) -> None:
        self._tensors = dict(tensors)
        self.tokens = tokens
        self.input_ids = input_ids
        self.attention_mask = attention_mask
        self.model_name = model_name
        self.family = family
        self.config = config
        self.texts = texts or []
        self.output = output

    @property
    def names(self) -> list[str]:
        return list(self._tensors)

    @property
    def lengths(self) -> list[int]:
        """Real tokens of each text (positions ``[:n]`` of every tensor)."""
        return [len(t) for t in self.tokens]

    @property
    def ids(self) -> list[list[int]]:
        return [row[:n].tolist() for row, n in zip(self.input_ids, self.lengths)]

    def __getitem__(self, name: str) -> Tensor:
        if name in self._tensors:
            return self._tensors[name]
        close = difflib.get_close_matches(name, self.names, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise TraceKeyError(f"{name!r} is not in this trace ({len(self._tensors)} names recorded; "
                            f"trace with names=[{name!r}] to record it){hint}")

    def get(self, name: str, default=None):
        return self._tensors.get(name, default)

    def __contains__(self, name: object) -> bool:
        return name in self._tensors

    def __iter__(self):
        return iter(self._tensors)

    def __len__(self) -> int:
        return len(self._tensors)

    def items(self):
        return self._tensors.items()

    def select(self, pattern: str) -> dict[str, Tensor]:
        """The recorded tensors whose names match a glob, in order."""
        return {n: t for n, t in self._tensors.items() if fnmatch.fnmatchcase(n, pattern)}

    @property
    def nbytes(self) -> int:
        """Bytes of memory the recorded tensors hold. Names that are the same tensor (BERT's
        ``layers.{i}.out`` is ``layers.{i+1}.attn_in``) and the batch-broadcast positions count once."""
        storages = {}
        for t in self._tensors.values():
            st = t.untyped_storage()
            storages[(st.device.type, st.data_ptr())] = st.nbytes()
        return sum(storages.values())

    def numpy(self) -> dict[str, np.ndarray]:
        """Every tensor as a NumPy array (copied to the CPU), by name."""
        return {n: t.detach().cpu().numpy() for n, t in self._tensors.items()}

    # ------------------------------------------------------------------------------------------
    def save(self, folder: Union[str, Path]) -> Path:
        """Write ``tensors.safetensors`` and ``trace.json`` (names, tokens, ids, model, config).

        Names that are one tensor (BERT's ``layers.{i}.out`` is ``layers.{i+1}.attn_in``;
        ``scaled`` is ``masked`` when nothing is masked) are written once and listed as aliases,
        so that the file holds each number once and loads back with the same names.
        """
        from safetensors.torch import save_file
        folder = Path(folder)
        tensors, aliases = _distinct_tensors(self._tensors)
        if self.output is not None:
            tensors["__output__"] = self.output.detach().cpu().contiguous().clone()
        try:
            folder.mkdir(parents=True, exist_ok=True)
            save_file(tensors, str(folder / "tensors.safetensors"))
            meta = {
                "format": FORMAT, "version": FORMAT_VERSION, "names": self.names, "aliases": aliases,
                "model_name": self.model_name, "family": self.family, "config": self.config.to_dict(),
                "texts": self.texts, "tokens": self.tokens, "input_ids": self.input_ids.tolist(),
                "attention_mask": self.attention_mask.tolist(),
            }
            (folder / "trace.json").write_text(json.dumps(meta, ensure_ascii=False, indent=1), encoding="utf-8")
        except OSError as e:
            raise InputError(f"cannot save the trace to {folder}: {e}") from None
        return folder

    @classmethod
    def load(cls, folder: Union[str, Path]) -> "Trace":
        """Read a trace written by :meth:`save`."""
        from safetensors.torch import load_file
        folder = Path(folder)
        meta_file, tensor_file = folder / "trace.json", folder / "tensors.safetensors"
        for f in (meta_file, tensor_file):
            if not f.is_file():
                raise InputError(f"{f} not found; a saved trace is a folder with trace.json and tensors.safetensors")
        try:
            meta = json.loads(meta_file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise InputError(f"cannot read {meta_file}: {e}") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise InputError(f"{meta_file} is not an attnscope trace (format {meta.get('format') if isinstance(meta, dict) else None!r})")
        if meta.get("version") != FORMAT_VERSION:
            raise InputError(f"{meta_file}: trace format version {meta.get('version')!r} is not supported "
                             f"(this attnscope reads version {FORMAT_VERSION})")
        try:
            tensors = load_file(str(tensor_file))
        except Exception as e:  # safetensors raises its own error types
            raise InputError(f"cannot read {tensor_file}: {type(e).__name__}: {e}") from None
        aliases = meta.get("aliases") or {}
        if not isinstance(aliases, dict) or any(a not in tensors for a in aliases.values()):
            raise InputError(f"{meta_file}: its aliases name tensors that {tensor_file.name} lacks")
        for name, same in aliases.items():
            tensors[name] = tensors[same]
        missing = [n for n in meta["names"] if n not in tensors]
        if missing:
            raise InputError(f"{tensor_file} lacks {missing[:3]} listed in {meta_file.name}")
        return cls({n: tensors[n] for n in meta["names"]}, tokens=meta["tokens"],
                   input_ids=torch.tensor(meta["input_ids"], dtype=torch.long),
                   attention_mask=torch.tensor(meta["attention_mask"], dtype=torch.long),
                   model_name=meta["model_name"], family=meta["family"],
                   config=TransformerConfig.from_dict(meta["config"]), texts=meta.get("texts"),
                   output=tensors.get("__output__"))

    def __repr__(self) -> str:
        return (f"Trace(model={self.model_name!r}, texts={len(self.tokens)}, length={self.input_ids.shape[-1]}, "
                f"names={len(self._tensors)}, {self.nbytes / 2**20:.1f} MiB)")

    def _repr_html_(self) -> str:
        """Jupyter shows the interactive viewer (:mod:`attnscope.viewer`); it needs q, k, v."""
        from .viewer import repr_html
        return repr_html(self)


def _distinct_tensors(named: dict[str, Tensor]) -> tuple[dict[str, Tensor], dict[str, str]]:
    """``(tensors, aliases)``: one compact CPU tensor per distinct tensor of ``named`` (safetensors
    refuses tensors that share memory), and ``{name: the name saved in its place}`` for the rest."""
    distinct: dict[str, Tensor] = {}
    aliases: dict[str, str] = {}
    seen: dict[tuple, str] = {}
    users: dict[tuple, int] = {}  # storage → how many distinct tensors view it
    for name, t in named.items():
        t = t.detach()
        storage = (t.device, t.untyped_storage().data_ptr())
        same = (*storage, t.storage_offset(), tuple(t.shape), t.stride(), t.dtype)
        if same in seen:
            aliases[name] = seen[same]
            continue
        seen[same] = name
        users[storage] = users.get(storage, 0) + 1
        distinct[name] = t
    out = {}
    for name, t in distinct.items():
        own = users[(t.device, t.untyped_storage().data_ptr())] == 1 and t.is_contiguous() \
            and t.untyped_storage().nbytes() == t.numel() * t.element_size()
        t = t.cpu()
        out[name] = t if own else t.contiguous().clone()  # views of one buffer get copies of their own
    return out, aliases


class TraceKeyError(InputError, KeyError):
    """A name that the trace does not hold."""

    def __str__(self) -> str:  # KeyError would print the message in quotes
        return str(self.args[0])


# ----------------------------------------------------------------------------------------------

def run_trace(model, texts, names=None, hooks: Optional[dict] = None, *, truncate: bool = False) -> Trace:
    """Run ``texts`` through ``model`` recording ``names`` and applying ``hooks``; see the module doc.

    Args:
        model: an :class:`attnscope.models.Model`.
        texts: a string, a list of strings (one padded batch), or a Batch from ``model.encode``.
        names: exact names or globs, optionally with ``[h]``; None records every name; ``[]``
            records nothing (useful with hooks).
        hooks: ``{name_or_glob: fn(tensor, name) -> tensor | None}``.
        truncate: cut texts longer than the model's positions instead of raising.
    """
    all_names = model.hook_names
    n_heads = model.config.n_heads
    wanted = resolve(names, all_names, n_heads)
    hook_targets: list[tuple[str, Optional[int], Callable, str]] = []
    if hooks is not None:
        if not isinstance(hooks, dict):
            raise InputError(f"hooks must be a dict {{name_or_glob: fn}}, got {type(hooks).__name__}")
        for pattern, fn in hooks.items():
            if not callable(fn):
                raise InputError(f"hooks[{pattern!r}] must be callable fn(tensor, name), got {type(fn).__name__}")
            for n, h in resolve([pattern], all_names, n_heads, what="hooks"):
                hook_targets.append((n, h, fn, pattern))

    batch = model.as_batch(texts, truncate=truncate)
    with model.lock:  # hooks sit on the shared modules until the finally below removes them
        output, sink = _traced_forward(model, batch, wanted, hook_targets)
    B = batch.input_ids.shape[0]
    tensors = {}
    for n, h in wanted:
        k = key(n, h)
        if k not in sink:  # cannot happen for names from model.hook_names; guard the invariant
            raise RuntimeError(f"internal: {k} was requested but not recorded")
        t = sink[k]
        if t.shape[0] != B:  # positions are shared by the batch: (1, L, d) → (B, L, d), a view
            t = t.expand(B, *t.shape[1:])
        tensors[k] = t
    return Trace(tensors, tokens=batch.tokens, input_ids=batch.input_ids.cpu(),
                 attention_mask=batch.attention_mask.cpu(), model_name=model.name, family=model.family,
                 config=model.config, texts=batch.texts, output=output)


def _traced_forward(model, batch, wanted, hook_targets):
    from .hooks import name_hook_points

    points = name_hook_points(model)
    sink = _Sink()
    touched = []
    try:
        for n, h in wanted:
            if h is None:
                points[n].sink = sink
                touched.append(points[n])
            else:
                module = model.get_submodule(n.rsplit(".", 1)[0])
                module.head_taps.setdefault(n.rsplit(".", 1)[1], set()).add(h)
                module.head_sink = sink
                touched.append(module)
        for n, h, fn, pattern in hook_targets:
            points[n].fns.append(_checked_hook(fn, pattern) if h is None else _head_hook(fn, h, pattern))
            touched.append(points[n])
        with torch.no_grad():
            output = model(batch.input_ids, batch.attention_mask, batch.token_type_ids)  # (B, L, d)
    finally:
        for t in touched:
            if hasattr(t, "head_taps"):
                t.head_taps = {}
                t.head_sink = None
            else:
                t.reset()
    return output, sink
