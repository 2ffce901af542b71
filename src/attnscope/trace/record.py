"""The :class:`Trace` container: recorded intermediates by name, their tokens, save and load."""

from __future__ import annotations

import difflib
import fnmatch
import json
from pathlib import Path
from typing import Optional, TypeVar, Union

import numpy as np
import torch

from ..config import TransformerConfig
from ..errors import InputError
from ..i18n import error
from ..tokenizer import TokenRows
from .derived import Derived, Stored, storage_key, value_of
from .read import TraceReader
from .replay import LayerReplay, Replayed

Tensor = torch.Tensor

_T = TypeVar("_T", bound="Trace")  # load() makes the class it is called on

FORMAT = "attnscope.trace"
FORMAT_VERSION = 1


class Trace(TraceReader, TokenRows):
    """The intermediates of one forward pass, by name, with the tokens they belong to.

    ``trace[name]`` is a tensor with the batch first (see the table in :mod:`attnscope.trace`);
    ``trace.names`` lists the recorded names in forward order; ``trace.tokens`` the token strings
    of each text (no padding), ``trace.labels`` the same as a person reads them (byte-level pieces
    decoded, :mod:`attnscope.pieces`); ``trace.output`` the model's last hidden states (B, L, d).

    Steps that are a cheap exact function of another recorded step (``scaled``, ``masked`` and
    ``weights`` of the explicit path, from ``scores``) are kept as that call and computed again
    on each read, bit for bit what the forward used (``trace.derived`` lists them; see
    :mod:`attnscope.trace.derived`).
    """

    #: The key of trace.json that marks a trace of this class (an encoder–decoder trace's
    #: "seq2seq"): ``Trace.load`` of such a folder makes this class.
    META_KEY: Optional[str] = None

    def __init__(self, tensors: dict[str, Stored], *, tokens: list[list[str]], input_ids: Tensor,
                 attention_mask: Tensor, model_name: str, family: str, config: TransformerConfig,
                 texts: Optional[list[str]] = None, output: Optional[Tensor] = None,
                 labels: Optional[list[list[str]]] = None) -> None:
        self._tensors = dict(tensors)
        self.tokens = tokens
        self.labels = labels if labels else [list(t) for t in tokens]
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
    def derived(self) -> list[str]:
        """The names kept as the call that made them (computed again on each read)."""
        return [n for n, t in self._tensors.items() if isinstance(t, Derived)]

    @property
    def replays(self) -> list[LayerReplay]:
        """The layers whose steps are kept as their call, run again on read (one entry per layer)."""
        return list({id(t.replay): t.replay for t in self._tensors.values() if isinstance(t, Replayed)}.values())

    def __getitem__(self, name: str) -> Tensor:
        if name in self._tensors:
            return value_of(self._tensors[name])
        close = difflib.get_close_matches(name, self.names, n=3)
        raise error(TraceKeyError, "errors.trace_key_missing_close", name=repr(name), n=len(self._tensors),
                    close=", ".join(close)) if close \
            else error(TraceKeyError, "errors.trace_key_missing", name=repr(name), n=len(self._tensors))

    def get(self, name: str, default=None):
        return value_of(self._tensors[name]) if name in self._tensors else default

    def __contains__(self, name: object) -> bool:
        return name in self._tensors

    def __iter__(self):
        return iter(self._tensors)

    def __len__(self) -> int:
        return len(self._tensors)

    def items(self):
        """``(name, tensor)`` pairs in order (derived steps computed as they are reached)."""
        return ((n, value_of(t)) for n, t in self._tensors.items())

    def select(self, pattern: str) -> dict[str, Tensor]:
        """The recorded tensors whose names match a glob, in order."""
        return {n: value_of(t) for n, t in self._tensors.items() if fnmatch.fnmatchcase(n, pattern)}

    @property
    def nbytes(self) -> int:
        """Bytes of memory the recorded tensors hold. Names that are the same tensor (BERT's
        ``layers.{i}.out`` is ``layers.{i+1}.attn_in``) and the batch-broadcast positions count once;
        a derived step counts the tensors it is computed from (once, however many steps share them)."""
        storages = {}
        for t in self._tensors.values():
            for root in (t.roots() if isinstance(t, Derived) else (t,)):
                storages[storage_key(root)] = root.untyped_storage().nbytes()
        return sum(storages.values())

    def numpy(self) -> dict[str, np.ndarray]:
        """Every tensor as a NumPy array (copied to the CPU), by name. NumPy has no bfloat16: a
        bfloat16 tensor comes as float32, which holds each of its values exactly."""
        def array(t: Tensor) -> np.ndarray:
            t = t.detach().cpu()
            return (t.float() if t.dtype == torch.bfloat16 else t).numpy()
        return {n: array(value_of(t)) for n, t in self._tensors.items()}

    # ------------------------------------------------------------------------------------------
    def save(self, folder: Union[str, Path], *, overwrite: bool = False) -> Path:
        """Write ``tensors.safetensors`` and ``trace.json`` (names, tokens, ids, model, config).

        Names that are one tensor (BERT's ``layers.{i}.out`` is ``layers.{i+1}.attn_in``;
        ``scaled`` is ``masked`` when nothing is masked) are written once and listed as aliases,
        so that the file holds each number once and loads back with the same names.
        A folder that already holds a trace is refused (InputError) unless ``overwrite=True``.
        """
        from safetensors.torch import save_file
        folder = Path(folder)
        there = [n for n in ("trace.json", "tensors.safetensors") if (folder / n).exists()]
        if there and not overwrite:
            raise error(InputError, "errors.trace_folder_taken", folder=folder, files=", ".join(there))
        tensors, aliases = _distinct_tensors(self._tensors)
        if self.output is not None:
            tensors["__output__"] = self.output.detach().cpu().contiguous().clone()
        try:
            folder.mkdir(parents=True, exist_ok=True)
            save_file(tensors, str(folder / "tensors.safetensors"))
            meta = {
                "format": FORMAT, "version": FORMAT_VERSION, "names": self.names, "aliases": aliases,
                "model_name": self.model_name, "family": self.family, "config": self.config.to_dict(),
                "texts": self.texts, "tokens": self.tokens, "labels": self.labels, "input_ids": self.input_ids.tolist(),
                "attention_mask": self.attention_mask.tolist(), **self._meta_extra(),
            }
            (folder / "trace.json").write_text(json.dumps(meta, ensure_ascii=False, indent=1), encoding="utf-8")
        except OSError as e:
            raise error(InputError, "errors.trace_cannot_save", folder=folder, why=str(e)) from None
        return folder

    @classmethod
    def load(cls: type[_T], folder: Union[str, Path]) -> _T:
        """Read a trace written by :meth:`save`: ``Trace.load`` gives the class that saved it (an
        encoder–decoder model's :class:`~attnscope.trace.seq2seq.Seq2SeqTrace`, target side included)."""
        from safetensors.torch import load_file
        meta_file, tensor_file = Path(folder, "trace.json"), Path(folder, "tensors.safetensors")
        for f in (meta_file, tensor_file):
            if not f.is_file():
                raise error(InputError, "errors.trace_missing", path=f)
        try:
            meta = json.loads(meta_file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise error(InputError, "errors.core_cannot_read", path=meta_file, why=str(e)) from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            found = meta.get("format") if isinstance(meta, dict) else None
            raise error(InputError, "errors.trace_not_trace", path=meta_file, found=repr(found))
        if meta.get("version") != FORMAT_VERSION:
            raise error(InputError, "errors.trace_version", path=meta_file, found=repr(meta.get("version")),
                        version=FORMAT_VERSION)
        _check_meta(meta, meta_file)
        kind = next((c for c in cls.__subclasses__() if c.META_KEY is not None and c.META_KEY in meta), cls)
        try:
            tensors = load_file(str(tensor_file))
        except Exception as e:  # safetensors raises its own error types
            raise error(InputError, "errors.trace_cannot_read_tensors", path=tensor_file, kind=type(e).__name__,
                        why=str(e)) from None
        aliases = meta.get("aliases") or {}
        if not isinstance(aliases, dict) or any(a not in tensors for a in aliases.values()):
            raise error(InputError, "errors.trace_aliases", path=meta_file, tensors=tensor_file.name)
        for name, same in aliases.items():
            tensors[name] = tensors[same]
        missing = [n for n in meta["names"] if n not in tensors]
        if missing:
            raise error(InputError, "errors.trace_lacks", path=tensor_file, missing=missing[:3], meta=meta_file.name)
        return kind({n: tensors[n] for n in meta["names"]}, tokens=meta["tokens"],
                   input_ids=torch.tensor(meta["input_ids"], dtype=torch.long),
                   attention_mask=torch.tensor(meta["attention_mask"], dtype=torch.long),
                   model_name=meta["model_name"], family=meta["family"],
                   config=TransformerConfig.from_dict(meta["config"]), texts=meta.get("texts"),
                   output=tensors.get("__output__"), labels=meta.get("labels"), **kind._meta_kw(meta, folder))

    # What a subclass keeps in trace.json besides this class's fields (an encoder–decoder trace:
    # its target side), and the keywords of its constructor read back from there.
    def _meta_extra(self) -> dict:
        return {}

    @classmethod
    def _meta_kw(cls, meta: dict, folder: Union[str, Path]) -> dict:
        return {}

    def __repr__(self) -> str:
        return (f"Trace(model={self.model_name!r}, texts={len(self.tokens)}, length={self.input_ids.shape[-1]}, "
                f"names={len(self._tensors)}, {self.nbytes / 2**20:.1f} MiB)")

    def _repr_html_(self) -> str:
        """Jupyter shows the interactive viewer (:mod:`attnscope.viewer`); it needs q, k, v."""
        from ..viewer import repr_html
        return repr_html(self)


def _is_rows(x, item: type, length: Optional[int] = None) -> bool:
    """Is ``x`` a list of lists of ``item`` (all of one length when ``length`` is given)?"""
    return isinstance(x, list) and all(
        isinstance(r, list) and all(isinstance(v, item) and not isinstance(v, bool) for v in r)
        and (length is None or len(r) == length) for r in x)


def _check_meta(meta: dict, path: Path) -> None:
    """InputError naming the first field of trace.json that :meth:`Trace.load` cannot use."""
    ids, tokens = meta.get("input_ids"), meta.get("tokens")
    width = len(ids[0]) if isinstance(ids, list) and ids and isinstance(ids[0], list) else None
    texts = len(tokens) if isinstance(tokens, list) else -1
    ok = {"names": isinstance(meta.get("names"), list) and all(isinstance(n, str) for n in meta["names"]),
          "tokens": _is_rows(tokens, str), "model_name": isinstance(meta.get("model_name"), str),
          "family": isinstance(meta.get("family"), str), "config": isinstance(meta.get("config"), dict)
          and all(k in meta["config"] for k in ("n_layers", "n_heads", "d_model")),  # no silent defaults
          "input_ids": _is_rows(ids, int, width) and texts >= 0 and len(ids or ()) == texts
          and all(len(t) <= (width or 0) for t in tokens or ()),  # (B, L): B texts of at most L tokens
          "attention_mask": _is_rows(meta.get("attention_mask"), int, width) and len(meta["attention_mask"]) == texts,
          # optional (None or absent: the tokens as they are, no texts): one list per text when present
          "labels": meta.get("labels") is None or (_is_rows(meta["labels"], str) and len(meta["labels"]) == texts
                                                   and all(len(a) == len(b) for a, b in zip(meta["labels"], tokens or ()))),
          "texts": meta.get("texts") is None or (isinstance(meta["texts"], list)
                                                 and all(isinstance(t, str) for t in meta["texts"]))}
    for field, fine in ok.items():
        if field not in meta and field not in ("labels", "texts"):
            raise error(InputError, "errors.trace_meta_missing", path=path, field=field)
        if not fine:
            raise error(InputError, "errors.trace_meta_field", path=path, field=field, type=type(meta[field]).__name__)


def _distinct_tensors(named: dict[str, Stored]) -> tuple[dict[str, Tensor], dict[str, str]]:
    """``(tensors, aliases)``: one compact CPU tensor per distinct tensor of ``named`` (safetensors
    refuses tensors that share memory), and ``{name: the name saved in its place}`` for the rest;
    derived steps are computed (once each: ``masked`` is ``scaled`` when nothing is masked)."""
    distinct: dict[str, Tensor] = {}
    aliases: dict[str, str] = {}
    seen: dict[tuple, str] = {}
    users: dict[tuple, int] = {}  # storage → how many distinct tensors view it
    computed: dict[int, str] = {}  # id of a Derived → the name it was saved under
    for name, stored in named.items():
        if isinstance(stored, Derived):
            if id(stored) in computed:
                aliases[name] = computed[id(stored)]
                continue
            computed[id(stored)] = name
        t = value_of(stored).detach()  # kept alive in distinct: no later tensor reuses its address
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
