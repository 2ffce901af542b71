"""The bytes of a GGUF file: its metadata, its tensor table, and each tensor dequantized.

GGUF (llama.cpp's file format, https://github.com/ggml-org/ggml/blob/master/docs/gguf.md) is::

    "GGUF"  u32 version  u64 n_tensors  u64 n_kv
    n_kv ×      key (u64 length + UTF-8)  u32 value type  value
    n_tensors × name  u32 n_dims  u64 ne[n_dims] (fastest dimension first)  u32 ggml type  u64 offset
    padding to `general.alignment` (32), then the tensor data, each tensor at its offset.

The `gguf` package (llama.cpp's own Python reader) parses the header into one small NumPy view per
value, which takes 15 s for Gemma 3's 262 144-token vocabulary; :class:`GGUFFile` reads the same
header with ``struct`` in about a second and leaves the rest to that package: its type enums,
its block sizes, and its dequantizers (``gguf.quants.dequantize``), which are llama.cpp's
reference ones. ``tests/models/test_gguf_file.py`` checks the header against ``gguf.GGUFReader``.
"""

from __future__ import annotations

import math
import mmap
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Union

import numpy as np
import torch

from ..errors import ModelLoadError
from ..i18n import Msg, error

GGUF_MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32

# GGUFValueType → struct format of one scalar (STRING = 8 and ARRAY = 9 are read apart)
_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_NUMPY = {0: np.uint8, 1: np.int8, 2: np.uint16, 3: np.int16, 4: np.uint32, 5: np.int32, 6: np.float32,
          7: np.bool_, 10: np.uint64, 11: np.int64, 12: np.float64}

#: Raw bytes dequantized per call: bounds the float32 temporaries of one large tensor (Gemma's
#: 262 144 × 640 Q8_0 embedding would otherwise need three 670 MB arrays at once).
CHUNK_BYTES = 16 << 20


@dataclass(frozen=True)
class TensorInfo:
    """One row of the tensor table.

    Attributes:
        name: GGUF tensor name (``blk.0.attn_q.weight``).
        shape: NumPy/PyTorch order, slowest dimension first (GGUF's ``ne`` reversed), e.g.
            ``(576, 576)`` for a (out_features, in_features) projection.
        qtype: the ``gguf.GGMLQuantizationType`` member (``Q4_K``, ``F32``, …).
        offset: byte offset of its data from the start of the file.
        nbytes: size of its data in bytes.
    """

    name: str
    shape: tuple[int, ...]
    qtype: Any
    offset: int
    nbytes: int

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


class _Cursor:
    def __init__(self, buf, path: Path) -> None:
        self.buf, self.pos, self.path = buf, 0, path

    def unpack(self, fmt: str):
        try:
            (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        except struct.error:
            raise error(ModelLoadError, "errors.gguf_truncated", path=self.path, pos=self.pos) from None
        self.pos += struct.calcsize(fmt)
        return value

    def string(self) -> str:
        n = self.unpack("<Q")
        if self.pos + n > len(self.buf):
            raise error(ModelLoadError, "errors.gguf_truncated_string", path=self.path, n=n, pos=self.pos)
        raw = self.buf[self.pos:self.pos + n]
        self.pos += n
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            # llama.cpp vocabularies can hold invalid UTF-8 pieces; keep them lossless and visible
            return raw.decode("utf-8", errors="surrogateescape")

    def value(self, vtype: int):
        if vtype == 8:
            return self.string()
        if vtype == 9:
            etype, n = self.unpack("<I"), self.unpack("<Q")
            if etype == 8:
                return [self.string() for _ in range(n)]
            if etype == 9:
                return [self.value(9) for _ in range(n)]
            if etype not in _NUMPY:
                raise error(ModelLoadError, "errors.gguf_array_type", path=self.path, etype=etype)
            dt = np.dtype(_NUMPY[etype]).newbyteorder("<")
            end = self.pos + n * dt.itemsize
            if end > len(self.buf):
                raise error(ModelLoadError, "errors.gguf_truncated_array", path=self.path, n=n, pos=self.pos)
            arr = np.frombuffer(self.buf, dtype=dt, count=n, offset=self.pos)
            self.pos = end
            return arr.tolist()
        if vtype not in _SCALAR:
            raise error(ModelLoadError, "errors.gguf_value_type", path=self.path, vtype=vtype)
        v = self.unpack(_SCALAR[vtype])
        return bool(v) if vtype == 7 else v


class GGUFFile:
    """A GGUF file opened read-only (memory-mapped): ``metadata`` and ``tensors``.

    Args:
        path: the ``.gguf`` file.

    Attributes:
        metadata: every key → its value (ints, floats, bools, strings, lists of those).
        tensors: name → :class:`TensorInfo`, in file order.
        version: the GGUF format version (2 or 3).

    Raises ModelLoadError for a missing file, a file that is not GGUF (wrong magic, big-endian,
    version 1), or a truncated or inconsistent header.
    """

    def __init__(self, path: Union[str, os.PathLike]) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise error(ModelLoadError, "errors.models_not_found", path=self.path)
        try:
            with open(self.path, "rb") as f:
                self._mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as e:  # ValueError: an empty file cannot be mapped
            raise error(ModelLoadError, "errors.models_cannot_read", path=self.path, why=str(e)) from None
        self._parse()

    def _parse(self) -> None:
        import gguf

        buf = self._mm
        if buf[:4] != GGUF_MAGIC:
            raise error(ModelLoadError, "errors.gguf_magic", path=self.path, start=repr(bytes(buf[:4])))
        cur = _Cursor(buf, self.path)
        cur.pos = 4
        self.version = cur.unpack("<I")
        if self.version not in (2, 3):
            hint = Msg("errors.gguf_big_endian") if self.version & 0xFFFF == 0 else ""
            raise error(ModelLoadError, "errors.gguf_version", path=self.path, version=self.version, hint=hint)
        n_tensors, n_kv = cur.unpack("<Q"), cur.unpack("<Q")
        self.metadata: dict[str, Any] = {}
        for _ in range(n_kv):
            key = cur.string()
            self.metadata[key] = cur.value(cur.unpack("<I"))
        alignment = self.metadata.get("general.alignment", DEFAULT_ALIGNMENT)
        if not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
            raise error(ModelLoadError, "errors.gguf_alignment", path=self.path, got=repr(alignment))
        raw = []
        for _ in range(n_tensors):
            name = cur.string()
            ndim = cur.unpack("<I")
            ne = [cur.unpack("<Q") for _ in range(ndim)]
            raw.append((name, tuple(reversed(ne)), cur.unpack("<I"), cur.unpack("<Q")))
        data_start = -(-cur.pos // alignment) * alignment
        self.tensors: dict[str, TensorInfo] = {}
        for name, shape, type_id, offset in raw:
            try:
                qtype = gguf.GGMLQuantizationType(type_id)
            except ValueError:
                raise error(ModelLoadError, "errors.gguf_ggml_type", path=self.path, name=name, type_id=type_id) from None
            block, type_size = gguf.GGML_QUANT_SIZES[qtype]
            if shape and shape[-1] % block:
                raise error(ModelLoadError, "errors.gguf_blocks", path=self.path, name=name, row=shape[-1],
                            qtype=qtype.name, block=block)
            nbytes = math.prod(shape) // block * type_size
            start = data_start + offset
            if start + nbytes > len(buf):
                raise error(ModelLoadError, "errors.gguf_past_end", path=self.path, name=name, end=start + nbytes,
                            size=len(buf))
            if name in self.tensors:
                raise error(ModelLoadError, "errors.gguf_tensor_twice", path=self.path, name=name)
            self.tensors[name] = TensorInfo(name, shape, qtype, start, nbytes)

    @property
    def architecture(self) -> str:
        arch = self.metadata.get("general.architecture")
        if not isinstance(arch, str):
            raise error(ModelLoadError, "errors.gguf_no_arch", path=self.path)
        return arch

    def raw(self, info: TensorInfo) -> np.ndarray:
        """The stored bytes of a tensor, (*shape[:-1], bytes per row) uint8 (a view of the file)."""
        import gguf

        arr = np.frombuffer(self._mm, dtype=np.uint8, count=info.nbytes, offset=info.offset)
        return arr.reshape(gguf.quants.quant_shape_to_byte_shape(info.shape, info.qtype) if info.shape else (-1,))

    def dequantize(self, info: TensorInfo, dtype: torch.dtype = torch.float32, *,
                   chunk_bytes: int = CHUNK_BYTES) -> torch.Tensor:
        """A tensor as a new ``dtype`` tensor of ``info.shape``, dequantized a chunk of rows (about
        ``chunk_bytes`` stored bytes) at a time with ``gguf.quants.dequantize`` (float32; float64 is
        the float32 result widened, exactly). The chunking does not change a value: each row is
        dequantized on its own.

        Raises ModelLoadError for a type the ``gguf`` package cannot dequantize, and for a NaN or
        infinite value (a damaged file: its NaN would otherwise surface far away, or be hidden).
        """
        if not is_supported_qtype(info.qtype):
            raise error(ModelLoadError, "errors.gguf_qtype", path=self.path, name=info.name, qtype=info.qtype.name,
                        supported=", ".join(supported_qtype_names()))
        out = torch.empty(info.shape, dtype=dtype)
        if not self._dequantize_into(out, info, chunk_bytes):
            raise error(ModelLoadError, "errors.gguf_non_finite", path=self.path, name=info.name)
        return out

    def _dequantize_into(self, out: torch.Tensor, info: TensorInfo, chunk_bytes: int) -> bool:
        """Fill ``out`` (``info.shape``) chunk by chunk; False at the first chunk holding a NaN or
        ±inf. Its views of the file's memory map end with this call, so that the map can close."""
        import gguf

        data = self.raw(info)
        if data.ndim == 1 or info.numel == 0:
            values = _dequant(gguf, data, info.qtype).reshape(-1)
            out.reshape(-1).copy_(torch.from_numpy(values))
            return bool(np.isfinite(values).all())
        rows = data.reshape(-1, data.shape[-1])
        flat = out.view(-1, info.shape[-1])
        step = max(1, chunk_bytes // max(1, rows.shape[1]))
        for a in range(0, rows.shape[0], step):
            values = _dequant(gguf, rows[a:a + step], info.qtype)
            if not np.isfinite(values).all():
                return False
            flat[a:a + step].copy_(torch.from_numpy(values))
        return True

    def drop_pages(self, info: TensorInfo) -> None:
        """Unmap the file pages that hold ``info``'s bytes from this process (``MADV_DONTNEED``; the
        data stays in the page cache and comes back on the next read). A file kept open while its
        tensors are read one layer at a time (:mod:`.streaming`) would otherwise keep every page it
        ever read in the process's resident memory. Pages shared with a neighbouring tensor are
        dropped too, harmlessly; a no-op where ``madvise`` is missing."""
        advise = getattr(mmap, "MADV_DONTNEED", None)
        if advise is None or info.nbytes == 0:
            return
        page = mmap.PAGESIZE
        start = info.offset // page * page
        end = min(len(self._mm), -(-(info.offset + info.nbytes) // page) * page)
        self._mm.madvise(advise, start, end - start)

    def iter_tensors(self) -> Iterator[TensorInfo]:
        return iter(self.tensors.values())

    def close(self) -> None:
        self._mm.close()

    def __enter__(self) -> "GGUFFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"GGUFFile({str(self.path)!r}, architecture={self.metadata.get('general.architecture')!r}, " \
               f"tensors={len(self.tensors)})"


def _dequant(gguf, rows: np.ndarray, qtype) -> np.ndarray:
    out = np.ascontiguousarray(gguf.quants.dequantize(rows, qtype), dtype=np.float32)
    # F32 comes back as a read-only view of the mapped file, which torch.from_numpy warns about
    return out if out.flags.writeable else out.copy()


def is_supported_qtype(qtype) -> bool:
    """True when ``gguf.quants`` has a dequantizer for this ``GGMLQuantizationType``."""
    import gguf

    return qtype in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16) or \
        qtype in gguf.quants._type_traits


def supported_qtype_names() -> list[str]:
    import gguf

    return [q.name for q in gguf.GGMLQuantizationType if is_supported_qtype(q)]
