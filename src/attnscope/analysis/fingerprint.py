"""Fingerprints of what decides an analysis's numbers: the model, the settings, the corpus.

Shards (:mod:`.shards`) carry them (and the attnscope version), and only shards with the same
three merge. Each is a SHA-256:

* the model: every tensor of ``state_dict()`` (name, dtype, shape, bytes, in name order; a model
  streamed from its file: the weight files' bytes), the config and the tokenizer's JSON (so a
  model with other weights, another tokenizer or another config is another model, wherever it was
  loaded from);
* the settings: :meth:`.settings.AnalysisConfig.to_dict` without what cannot change a number
  (``progress``) or changes only how the work is spread (``lanes``), and the token limit used;
* the corpus: the bytes of its files and their names relative to the corpus (a folder), or the
  built-in corpus's texts — not its path, so that machines that mount it elsewhere agree.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Union

import torch

from .corpus import BUILTIN_PREFIX, corpus_files, python_docs_paragraphs

#: the AnalysisConfig fields a fingerprint leaves out (they change no number)
NOT_SETTINGS = ("progress", "lanes")
_BLOCK = 1 << 20


def model_fingerprint(model) -> str:
    """SHA-256 of the model's tensors, config and tokenizer (module docstring)."""
    h = hashlib.sha256()
    on_file = False  # a model streamed from its file (load(stream_layers=True)): its layers are not in memory
    for name, t in sorted(model.state_dict().items()):
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}\n".encode())
        if t.device.type == "meta":
            on_file = True
            continue
        t = t.detach().to("cpu").contiguous()
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    if on_file:  # the weights' files instead, whole
        path = Path(model.path)
        for f in sorted(p for p in (path.iterdir() if path.is_dir() else [path])
                        if p.suffix in (".safetensors", ".gguf", ".bin")):
            with open(f, "rb") as fh:
                while block := fh.read(_BLOCK):
                    h.update(block)
    config = model.config
    fields = dataclasses.asdict(config) if dataclasses.is_dataclass(config) and not isinstance(config, type) \
        else vars(config)
    h.update(json.dumps(fields, sort_keys=True, default=str).encode())
    backend = getattr(model.tokenizer, "backend", None)
    h.update(backend.to_str().encode() if backend is not None else b"no tokenizer")
    return h.hexdigest()


def settings_fingerprint(config: dict, max_length: int) -> str:
    """SHA-256 of the settings (an ``AnalysisConfig.to_dict()``) that decide the numbers."""
    kept = {k: v for k, v in config.items() if k not in NOT_SETTINGS}
    kept["max_length_used"] = max_length
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()


def corpus_fingerprint(corpus: Union[str, Path]) -> str:
    """SHA-256 of the corpus's content (module docstring)."""
    h = hashlib.sha256()
    source = str(corpus)
    if source.startswith(BUILTIN_PREFIX):
        h.update(source.encode())
        for where, text in python_docs_paragraphs():
            h.update(f"{where}\n{text}\n".encode())
        return h.hexdigest()
    root = Path(corpus)
    for f in corpus_files(corpus):
        h.update((f.relative_to(root).as_posix() if root.is_dir() else "").encode() + b"\n")
        with open(f, "rb") as fh:  # the stored bytes (.gz as stored: the same file, the same hash)
            while block := fh.read(_BLOCK):
                h.update(block)
    return h.hexdigest()


def combined(parts: dict) -> str:
    """One SHA-256 of the three."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()
