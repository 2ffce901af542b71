"""``attnscope.load`` for GGUF files and installed model packages: a ``.gguf`` path or a name
(``"smollm2-135m"``, ``"gemma-3-270m"``) → :class:`~attnscope.models.DecoderModel`.

The file is read by :func:`.gguf.load_gguf` (config in the Hub's spelling, weights dequantized
with ``gguf`` under their Hugging Face names, tokenizer and chat template from the metadata), then
goes through the same family translation and weight table as a Hugging Face folder. No
``transformers``, no network.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

import torch

from ..errors import ModelLoadError
from ..i18n import error
from ..tokenizer import Tokenizer
from .base import finish_loading, tokenizer_limit
from .gguf_file import GGUF_MAGIC
from .model_class import build_model
from .packages import ModelPackage, find_package, is_package_source, license_notice, package_model_path
from .weights import map_weights


def is_gguf_source(path) -> bool:
    """True for a model package name (when no folder of that name exists) or a GGUF file."""
    return is_package_source(path, "gguf", GGUF_MAGIC, ".gguf")


def gguf_file_of(path: Union[str, Path]) -> tuple[Optional[ModelPackage], Path]:
    """``(the model package or None, the .gguf file)`` that ``path`` (a file or a package name)
    names; ModelLoadError for a folder or a missing file."""
    package = find_package(str(path)) if not Path(str(path)).expanduser().exists() else None
    file = package_model_path(str(path)) if package is not None else Path(path).expanduser()
    if file.is_dir():
        raise error(ModelLoadError, "errors.gguf_is_folder", path=file)
    if not file.is_file():
        raise error(ModelLoadError, "errors.gguf_not_found", path=file)
    return package, file


def load_gguf_model(path: Union[str, Path], *, device=None, dtype: Optional[torch.dtype] = None,
                    tokenizer: bool = True, progress: Optional[bool] = None):
    """A :class:`~attnscope.models.DecoderModel` from a ``.gguf`` file or an installed package name.

    Weights are dequantized to float32 (``dtype=torch.float64`` dequantizes to float64 directly;
    other dtypes are a cast afterwards). ``model.gguf`` keeps the storage type of each weight and
    the config values the file does not store (with where they came from).
    """
    from .gguf import load_gguf

    package, file = gguf_file_of(path)
    read_dtype = torch.float64 if dtype == torch.float64 else torch.float32
    ckpt = load_gguf(file, dtype=read_dtype, tokenizer=tokenizer, progress=progress)
    source = str(file)
    name = package.name if package is not None else (ckpt.config.get("_name_or_path") or file.stem)
    model, family = build_model(ckpt.config, file, str(name), file, empty=True)  # a DecoderModel
    # the weights become the file's tensors (read_dtype already); .to() before would convert, and so
    # write, every uninitialised weight (a float64 load held its weights twice)
    model.unused_weights = map_weights(model, family, ckpt.state_dict, source, assign=True)
    model.to(read_dtype)
    model.gguf = {"architecture": ckpt.architecture, "qtypes": ckpt.qtypes, "defaults": ckpt.defaults,
                  "license": license_notice(package.name) if package is not None else None}
    del ckpt.state_dict
    if tokenizer:
        assert ckpt.tokenizer is not None  # read because tokenizer=True
        attach_tokenizer(model, ckpt.tokenizer, source)
    return finish_loading(model, device, None if dtype == read_dtype else dtype)


def attach_tokenizer(model, t, source: str) -> None:
    """Give ``model`` the GGUF file's tokenizer ``t`` (a :class:`~.gguf_tokenizer.GGUFTokenizer`),
    chat template and special tokens; ModelLoadError when its vocabulary is larger than the model's."""
    config = model.config
    pad = t.pad_token_id if t.pad_token_id is not None else (t.eos_token_id or 0)
    model.tokenizer = Tokenizer(t.backend, pad_token_id=pad, max_length=tokenizer_limit(config), source=source)
    if model.tokenizer.vocab_size > config.vocab_size:
        raise error(ModelLoadError, "errors.gguf_tokenizer_vocab", source=source, n=model.tokenizer.vocab_size,
                    vocab=config.vocab_size)
    model.chat_template = t.chat_template
    model.special_tokens = dict(t.special_tokens)
