"""GlobEnc's and ALTI's per-pair numbers in one compiled loop: each token pair's d-vector made and
reduced in registers (``csrc/pair_norms.c``), instead of written out by a batched product and read
back three times by element-wise ops.

Why: ALTI's L1 distance ``‖y_i − T_i(x_j)‖₁`` has no shortcut through a low-rank product, so every
pair's share ``T_i(x_j) = Σ_g W[g, i, j] G[g, j]`` must be made. With torch ops that is a product
with an inner size of K (12 on MiniLM) that BLAS runs at a fraction of its speed, then the
difference, the absolute value and the sum, each a pass over L²·d floats: on one thread at 510
tokens about 84–120 ms a layer, against 32 ms for a whole forward layer. The loop here keeps a tile
of pairs in vector registers while its K terms are added and reduces it there (21–23 ms a layer on
AVX-512; docs/guide/performance.md has the benchmark).

The library is compiled on first use by the machine's C compiler (``$CC``, else ``cc`` or ``gcc``)
for its own CPU (``-march=native``), once per K, into the ``kernels`` folder of attnscope's cache
(:func:`attnscope.cache.kernels_dir`), keyed by the source, the compiler, the flags and the CPU's
features. Where there is no compiler, the build fails, the tensors are not
float32 on a CPU, or ``ATTNSCOPE_COMPILED=0`` is set, :func:`pair_norms` returns False and
:func:`.pairs.block_matrices` runs its torch ops (the same definitions; the tests compare both
with a float64 loop). No result depends on which path ran beyond float32 rounding.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Optional

import torch

from ..cache import kernels_dir

Tensor = torch.Tensor

SOURCE = Path(__file__).with_name("csrc") / "pair_norms.c"

#: GNU C (its vector types); no -ffast-math (the sums keep their written order); -Wno-psabi: a note
#: about passing vector values wider than the target's registers, where the static functions are inlined
#: anyway (the source picks its vector width from the target: 16 floats with AVX-512, 8 with AVX, else 4).
FLAGS = ["-O3", "-std=gnu99", "-fPIC", "-shared", "-fno-math-errno", "-Wno-psabi"]
#: x86-64: the native CPU, with 512-bit vectors where it has them (gcc otherwise splits the 16-float
#: values into 256-bit halves on AVX-512 CPUs too).
X86_FLAGS = ["-march=native", "-mprefer-vector-width=512"]

LOCK = threading.Lock()
LIBRARIES: dict[int, Optional[ctypes.CDLL]] = {}  # K → the loaded library, None where the build failed
#: Why the last build failed (None: none failed): read by tests and by whoever wonders which path ran.
last_failure: Optional[str] = None


def enabled() -> bool:
    """Whether the compiled loop may be used (``ATTNSCOPE_COMPILED=0`` turns it off)."""
    return os.environ.get("ATTNSCOPE_COMPILED", "1") != "0"


def compiler() -> Optional[str]:
    return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")


def cpu_features() -> str:
    """The CPU's feature flags (what -march=native compiles for), so that a cache folder shared by
    machines of other kinds never hands one a library its CPU cannot run."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def flags() -> list[str]:
    return FLAGS + (X86_FLAGS if platform.machine().lower() in ("x86_64", "amd64") else ["-march=native"])


def build(K: int) -> Optional[ctypes.CDLL]:
    """The library for K terms, compiled if the cache has none; None (and :data:`last_failure`
    set) where that cannot be done."""
    global last_failure
    cc = compiler()
    if cc is None:
        last_failure = "no C compiler (set CC, or install cc/gcc)"
        return None
    source = SOURCE.read_bytes()
    try:
        version = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as e:
        last_failure = f"{cc} --version: {e}"
        return None
    args = flags() + [f"-DPAIRS_K={K}"]
    key = hashlib.sha256(b"\0".join([source, version.encode(), " ".join(args).encode(),
                                     cpu_features().encode(), platform.machine().encode()])).hexdigest()[:20]
    target = kernels_dir() / f"pair_norms-k{K}-{key}.so"
    if not target.exists():
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
                out = Path(tmp) / target.name
                done = subprocess.run([cc, *args, str(SOURCE), "-o", str(out)], capture_output=True, text=True,
                                      timeout=120)
                if done.returncode != 0:
                    last_failure = f"{cc} failed: {done.stderr.strip()[:500]}"
                    return None
                os.replace(out, target)  # atomic: another process building the same K sees all or nothing
        except (OSError, subprocess.SubprocessError) as e:
            last_failure = f"building {target.name}: {e}"
            return None
    try:
        lib = ctypes.CDLL(str(target))
    except OSError as e:
        last_failure = f"loading {target}: {e}"
        return None
    lib.attnscope_transpose.restype = None
    lib.attnscope_transpose.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 2 + [ctypes.c_int] * 2
    lib.attnscope_reach.restype = None
    lib.attnscope_reach.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 3 + [ctypes.c_int] * 2
    lib.attnscope_pairs.restype = ctypes.c_int
    lib.attnscope_pairs.argtypes = [ctypes.c_int, ctypes.c_int] + [ctypes.c_void_p] * 7 + [ctypes.c_int] * 3
    return lib


def library(K: int) -> Optional[ctypes.CDLL]:
    with LOCK:  # the lanes may ask at once: one build per K
        if K not in LIBRARIES:
            LIBRARIES[K] = build(K)
        return LIBRARIES[K]


def usable(y: Tensor) -> bool:
    """Whether :func:`pair_norms` can run on tensors like ``y``: float32 on a CPU, switched on."""
    return enabled() and y.device.type == "cpu" and y.dtype == torch.float32


def is_column_major(W: Tensor) -> bool:
    """Whether ``W (K, L_i, L_j)`` is a transposed view of a contiguous ``(K, L_j, L_i)`` (as
    :func:`transpose_into` leaves it): its columns are then read in place."""
    return W.transpose(1, 2).is_contiguous()


def transpose_into(W: Tensor, out: Tensor, heads: Optional[range] = None) -> bool:
    """``out (K, L_j, L_i)`` (contiguous) ← ``W (K, L_i, L_j)`` transposed by the compiled pass,
    the ``heads`` given (default all: two lanes can share one W); False (``out`` untouched) where
    the compiled loop is not available, or ``out`` is not CPU memory (a buffer on another device)."""
    K, Li, Lj = W.shape
    lib = library(K) if usable(W) and out.device.type == "cpu" else None
    if lib is None:
        return False
    if not (W.is_contiguous() and out.is_contiguous() and out.shape == (K, Lj, Li) and out.dtype == W.dtype):
        raise ValueError(f"transpose_into: W {tuple(W.shape)} does not fit out {tuple(out.shape)}")  # a caller's bug
    h = range(K) if heads is None else heads
    offset = h.start * Li * Lj * W.element_size()  # bytes to head h.start, the same in W and out
    lib.attnscope_transpose(len(h), W.data_ptr() + offset, out.data_ptr() + offset, Li, Lj)
    return True


def columns(W: Tensor) -> Optional[tuple[Tensor, Tensor, Tensor]]:
    """``W (K, L_i, L_j)`` transposed, ``Wc (K, L_j, L_i)`` — W's own memory where it is a
    :func:`is_column_major` view, else a compiled copy — and per column j the rows it reaches,
    ``first``/``stop`` int32 ``(L_j,)`` (some ``W[g, i, j] ≠ 0``, or i = j; :func:`.pairs.reach`'s
    rule); None where the compiled loop is not available."""
    K, Li, Lj = W.shape
    lib = library(K) if usable(W) else None
    if lib is None:
        return None
    if is_column_major(W):
        Wc = W.transpose(1, 2)
    else:
        Wc = W.new_empty(K, Lj, Li)
        transpose_into(W.contiguous(), Wc)
    first, stop = (torch.empty(Lj, dtype=torch.int32) for _ in range(2))
    lib.attnscope_reach(K, Wc.data_ptr(), first.data_ptr(), stop.data_ptr(), Li, Lj)
    return Wc, first, stop


def pair_norms(W: Tensor, V: Tensor, y: Tensor, rows: Optional[Tensor], first: Tensor, stop: Tensor, l1: bool,
               out: Tensor) -> bool:
    """Fill ``out (L_j, L_i)`` at ``[j, first[j]:stop[j]]`` with ALTI's ``‖y_i − t_ij‖₁`` (``l1``) or
    GlobEnc's ``‖t_ij‖₂``, ``t_ij = rows[i]·Σ_g W[g, j, i] V[g, j]``; ``W (K, L_j, L_i)``,
    ``V (K, L_j, d)``, ``y (L_i, d)``, ``rows (L_i,)`` or None (1), ``first``/``stop`` int32 ``(L_j,)``,
    all float32 on the CPU (read in place when contiguous). False (``out`` untouched) where the
    compiled loop is not available: the caller computes it with torch ops."""
    (K, Lj, Li), d = W.shape, y.shape[1]
    lib = library(K) if usable(y) else None
    if lib is None:
        return False
    W, V, y, first, stop = (t.contiguous() for t in (W, V, y, first, stop))
    rows = None if rows is None else rows.to(torch.float32).contiguous()
    if not (out.is_contiguous() and out.shape == (Lj, Li) and out.dtype == torch.float32 and V.shape == (K, Lj, d)
            and y.shape[0] == Li and first.dtype == stop.dtype == torch.int32 and (rows is None or rows.shape == (Li,))):
        raise ValueError(f"pair_norms: W {tuple(W.shape)}, V {tuple(V.shape)}, y {tuple(y.shape)}, "
                         f"out {tuple(out.shape)} do not fit together")  # a caller's bug, not a user's input
    status = lib.attnscope_pairs(K, int(l1), W.data_ptr(), V.data_ptr(), y.data_ptr(),
                                 None if rows is None else rows.data_ptr(), out.data_ptr(),
                                 first.data_ptr(), stop.data_ptr(), Lj, Li, d)
    return status == 0
