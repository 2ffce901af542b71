"""A trace saves to a folder (safetensors + JSON) and loads back identical; converts to NumPy."""

import json

import numpy as np
import pytest
import torch

from attnscope import InputError, Trace


def test_round_trip(minilm, tmp_path):
    tr = minilm.trace(["我喜欢人工智能", "The cat."], names=["embed.*", "layers.0.attn.weights", "layers.5.attn.q[3]"])
    tr.save(tmp_path / "t")
    back = Trace.load(tmp_path / "t")
    assert back.names == tr.names and back.tokens == tr.tokens and back.texts == tr.texts
    assert back.model_name == "sentence-transformers/all-MiniLM-L6-v2" and back.family == "bert"
    assert back.config == minilm.config
    assert torch.equal(back.input_ids, tr.input_ids) and torch.equal(back.attention_mask, tr.attention_mask)
    for n in tr.names:
        assert torch.equal(back[n], tr[n]), n
    assert torch.equal(back.output, tr.output)
    meta = json.loads((tmp_path / "t" / "trace.json").read_text(encoding="utf-8"))
    assert meta["tokens"] == tr.tokens and meta["tokens"][0][:2] == ["[CLS]", "我"]  # readable UTF-8


def test_numpy(minilm):
    tr = minilm.trace("hello world", names=["layers.1.attn.weights", "layers.1.out"])
    arrays = tr.numpy()
    assert list(arrays) == tr.names
    assert isinstance(arrays["layers.1.attn.weights"], np.ndarray)
    np.testing.assert_array_equal(arrays["layers.1.out"], tr["layers.1.out"].numpy())


def test_load_errors(tmp_path, minilm):
    with pytest.raises(InputError, match=r"trace\.json not found"):
        Trace.load(tmp_path)
    minilm.trace("hi", names="embed.out").save(tmp_path / "t")
    (tmp_path / "t" / "trace.json").write_text(json.dumps({"format": "something else"}))
    with pytest.raises(InputError, match=r"is not an attnscope trace"):
        Trace.load(tmp_path / "t")
    (tmp_path / "t" / "trace.json").write_text("{")
    with pytest.raises(InputError, match=r"cannot read .*trace\.json"):
        Trace.load(tmp_path / "t")


def test_trace_keeps_only_the_bytes_it_shows(minilm):
    """q alone is a view of the fused qkv buffer (3× its size); the trace keeps a compact copy."""
    tr = minilm.trace(["a b c", "d"], names=["layers.0.attn.q", "layers.0.attn.weights[1]"])
    for n in tr.names:
        t = tr[n]
        assert t.untyped_storage().nbytes() == t.numel() * t.element_size(), n
    assert tr.nbytes == sum(t.numel() * 4 for t in tr._tensors.values())
