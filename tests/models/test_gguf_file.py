"""attnscope's GGUF header parser reads what the gguf package's own GGUFReader reads: every
metadata value, every tensor's name, shape, type and offset, and every dequantized tensor."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnscope.models import gguf_file
from attnscope.models.gguf_file import GGUFFile
from attnscope.models.packages import package_model_path
from tests.models.decoders.gguf_writer import hf_weights, write_gguf


def _same_value(a, b) -> bool:
    if isinstance(a, list):
        return len(a) == len(b) and (np.array_equal(np.asarray(a, np.float64), np.asarray(b, np.float64))
                                     if a and isinstance(a[0], float) else a == b)
    if isinstance(a, float):
        return np.float32(a) == np.float32(b) or a == b
    return a == b


def _compare(path, *, all_tensors: bool):
    import gguf

    r = gguf.GGUFReader(str(path))
    with GGUFFile(path) as f:
        keys = [k for k in r.fields if not k.startswith("GGUF.")]
        assert set(keys) == set(f.metadata)
        for k in keys:
            assert _same_value(r.fields[k].contents(), f.metadata[k]), k
        assert [t.name for t in r.tensors] == list(f.tensors)
        for t in r.tensors:
            info = f.tensors[t.name]
            assert info.qtype == t.tensor_type and info.offset == t.data_offset and info.nbytes == t.n_bytes, t.name
            assert info.shape == tuple(int(x) for x in reversed(t.shape.tolist())), t.name
        chosen = r.tensors if all_tensors else [t for t in r.tensors if t.name in (
            "token_embd.weight", "blk.0.attn_q.weight", "blk.0.ffn_down.weight", "blk.0.attn_norm.weight",
            "blk.0.attn_output.weight")]
        for t in chosen:
            ours = f.dequantize(f.tensors[t.name])
            if t.data.ndim == 1:
                want = torch.from_numpy(np.array(gguf.dequantize(t.data, t.tensor_type), dtype=np.float32))
                assert torch.equal(ours, want), t.name
                continue
            # a block of rows at a time (quantized blocks never span rows): Gemma's embedding is 671 MB
            # dequantized, and gguf's whole-tensor dequantize of it peaked the process at 3.8 GB
            rows, flat = t.data.reshape(-1, t.data.shape[-1]), ours.view(-1, ours.shape[-1])
            for a in range(0, rows.shape[0], 8192):
                want = torch.from_numpy(np.array(gguf.dequantize(rows[a:a + 8192], t.tensor_type), dtype=np.float32))
                assert torch.equal(flat[a:a + 8192], want), (t.name, a)


# gguf quantizes no K type in Python; the real files hold Q4_K and Q6_K
@pytest.mark.parametrize("qtype", ["F32", "F16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"])
def test_synthetic_files(tmp_path, qtype, monkeypatch):
    monkeypatch.setattr(gguf_file, "CHUNK_BYTES", 100)  # several chunks per tensor: chunking is exact
    sd = hf_weights("llama", hidden=256, head_dim=64, heads=4, kv=2, ff=256, vocab=300)
    p = write_gguf(tmp_path / f"{qtype}.gguf", "llama", sd, heads=4, kv=2, head_dim=64, qtype=qtype)
    _compare(p, all_tensors=True)


@pytest.mark.parametrize("name", ["smollm2-135m", "gemma-3-270m"])
def test_real_files(name):
    _compare(package_model_path(name), all_tensors=False)


@pytest.mark.parametrize("qtype", ["F32", "F16", "Q8_0"])
def test_a_nan_weight_is_named_at_load(tmp_path, qtype):
    """A damaged file's NaN weight loaded silently: the traced forward then showed NaN and the plain
    forward (CPU fused attention) finite numbers. Each dequantized chunk is checked as it is read."""
    import attnscope

    sd = hf_weights("llama", hidden=64, head_dim=16, heads=4, kv=2, ff=64, vocab=300)
    sd["model.layers.1.mlp.down_proj.weight"][3, 5] = float("nan")
    p = write_gguf(tmp_path / f"{qtype}.gguf", "llama", sd, heads=4, kv=2, head_dim=16, qtype=qtype)
    with pytest.raises(attnscope.ModelLoadError, match=r"tensor blk\.1\.ffn_down\.weight holds a NaN or infinite value"):
        attnscope.load(p)
