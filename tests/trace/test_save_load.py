"""A trace saves to a folder (safetensors + JSON) and loads back identical; converts to NumPy."""

import json
import re

import numpy as np
import pytest
import torch

import attnscope
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


@pytest.mark.parametrize("which", ["minilm", "gpt2"])
def test_the_default_full_trace_saves_and_loads_back_equal(which, minilm, tiny_models, tmp_path):
    """Every name, the ones that are one tensor included (BERT's layers.{i}.out is
    layers.{i+1}.attn_in; scaled is masked when nothing is masked; embed.out is layers.0.attn_in)."""
    model = minilm if which == "minilm" else tiny_models["gpt2"]
    tr = model.trace(["hi there", "a longer second text"])  # names=None: everything
    assert len(tr.names) == len(model.hook_names)
    tr.save(tmp_path / "t")
    back = Trace.load(tmp_path / "t")
    assert back.names == tr.names
    for n in tr.names:
        assert back[n].shape == tr[n].shape and torch.equal(back[n], tr[n]), n
    assert torch.equal(back.output, tr.output)


def _aliased_pairs(tr):
    """Pairs of recorded names whose tensors share memory (one tensor, or views of one buffer), or
    that are one derived step (``masked`` is ``scaled`` when nothing is masked)."""
    from attnscope.trace.derived import Derived
    from attnscope.trace.replay import Replayed
    by_storage = {}
    for n, t in tr._tensors.items():
        if isinstance(t, Replayed):  # a step of a layer run again on read: the tensor that read gives
            t = t.value()
        at = ("derived", id(t)) if isinstance(t, Derived) else t.untyped_storage().data_ptr()
        by_storage.setdefault(at, []).append(n)
    return [(a, b) for group in by_storage.values() for i, a in enumerate(group) for b in group[i + 1:]]


@pytest.mark.parametrize("which", ["minilm", "gpt2"])
def test_every_pair_of_aliased_names_saves_alone(which, minilm, tiny_models, tmp_path):
    model = minilm if which == "minilm" else tiny_models["gpt2"]
    pairs = _aliased_pairs(model.trace("one text"))
    named = {frozenset(p) for p in pairs}
    if which == "gpt2":  # pre-LN: a layer's output is its second residual sum
        assert frozenset(("layers.0.ffn_resid", "layers.0.out")) in named
    else:  # nothing masked in one text: masked is scaled
        assert frozenset(("layers.0.attn.scaled", "layers.0.attn.masked")) in named
        # post-LN: the embedding output and each layer's output are the next layer's input
        last = model.config.n_layers - 1
        assert frozenset(("embed.out", "layers.0.attn_in")) in named
        assert frozenset((f"layers.{last - 1}.out", f"layers.{last}.attn_in")) in named
    for i, (a, b) in enumerate(pairs):
        tr = model.trace("one text", names=[a, b])
        back = Trace.load(tr.save(tmp_path / str(i)))
        assert torch.equal(back[a], tr[a]) and torch.equal(back[b], tr[b]), (a, b)
        if tr[a].data_ptr() == tr[b].data_ptr() and tr[a].shape == tr[b].shape:  # one tensor: one copy on disk
            data = (tmp_path / str(i) / "tensors.safetensors").stat().st_size
            one = tr[a].numel() * tr[a].element_size()
            assert data < one + tr.output.numel() * tr.output.element_size() + min(one, 4096), (a, b)


def test_the_last_layer_output_saves(minilm, tmp_path):
    name = f"layers.{minilm.config.n_layers - 1}.out"
    tr = minilm.trace("hi", names=[name])
    back = Trace.load(tr.save(tmp_path / "t"))
    assert torch.equal(back[name], tr[name]) and torch.equal(back.output, tr.output)


def test_saving_over_a_trace_is_refused_unless_asked(tiny_models, tmp_path):
    model = tiny_models["gpt2"]
    first, second = model.trace("hello world", names="embed.out"), model.trace("world", names="embed.out")
    first.save(tmp_path / "t")
    before = {p.name: p.read_bytes() for p in (tmp_path / "t").iterdir()}
    with pytest.raises(InputError) as e:
        second.save(tmp_path / "t")
    assert str(e.value) == (f"{tmp_path / 't'} already holds a trace (trace.json, tensors.safetensors); pass "
                            "overwrite=True to replace it, or save into another folder")
    assert {p.name: p.read_bytes() for p in (tmp_path / "t").iterdir()} == before  # nothing written
    second.save(tmp_path / "t", overwrite=True)
    assert Trace.load(tmp_path / "t").texts == ["world"]
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    first.save(tmp_path / "other")  # a folder without a trace is fine, and its other files stay
    assert (tmp_path / "other" / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("field, value, says", [
    ("names", None, 'lacks the field "names"'), ("tokens", None, 'lacks the field "tokens"'),
    ("input_ids", None, 'lacks the field "input_ids"'), ("config", None, 'lacks the field "config"'),
    ("model_name", None, 'lacks the field "model_name"'), ("attention_mask", None, 'lacks the field "attention_mask"'),
    ("names", "embed.out", 'the field "names" holds a str'), ("tokens", "hi", 'the field "tokens" holds a str'),
    ("tokens", [["hi"]], 'the field "input_ids" holds a list'),  # one text where input_ids has two rows
    ("input_ids", [[101, 102]], 'the field "input_ids" holds a list'),  # one row for two texts
    ("attention_mask", "x", 'the field "attention_mask" holds a str'),
    ("labels", "hi", 'the field "labels" holds a str'), ("texts", [1], 'the field "texts" holds a list'),
    ("config", {}, 'the field "config" holds a dict'),  # loaded with the default sizes of a config
    ("labels", [["hi"], ["a"]], 'the field "labels" holds a list'),  # one label for a text of 3 tokens
])
def test_a_damaged_trace_json_is_named_field_by_field(minilm, tmp_path, field, value, says):
    """A trace.json without a field that load needs, or with one of the wrong kind, is refused
    with the field's name (it raised a bare KeyError('names') or a torch TypeError, or loaded)."""
    minilm.trace(["hi", "a b"], names="embed.out").save(tmp_path / "t")
    meta = json.loads((tmp_path / "t" / "trace.json").read_text(encoding="utf-8"))
    if value is None:
        del meta[field]
    else:
        meta[field] = value
    (tmp_path / "t" / "trace.json").write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(says)) as e:
        Trace.load(tmp_path / "t")
    assert str(tmp_path / "t" / "trace.json") in str(e.value)


def test_trace_load_of_an_encoder_decoder_trace_gives_its_target_side(tmp_path):
    """Trace.load of a saved T5 trace made a plain Trace: the target side was dropped and every
    read said "trace with names=None (everything)" of a trace that had everything. It now makes the
    Seq2SeqTrace that was saved; its cross-attention equals transformers' eager T5 (the reference)."""
    from attnscope.trace.seq2seq import Seq2SeqTrace
    from tests.models.seq2seq.tiny import hf_seq2seq, t5

    folder = t5(tmp_path / "t5")
    model = attnscope.load(folder)
    tr = model.trace("the cat sat", "le chat")
    back = Trace.load(tr.save(tmp_path / "t"))
    assert type(back) is Seq2SeqTrace and back.target_tokens == tr.target_tokens
    assert torch.equal(back.decoder_input_ids, tr.decoder_input_ids) and back.target_texts == ["le chat"]
    with torch.no_grad():
        ref = hf_seq2seq(folder)(input_ids=tr.input_ids, decoder_input_ids=tr.decoder_input_ids,
                                 output_attentions=True)
    for layer, w in enumerate(ref.cross_attentions):  # (1, H, T, S)
        got = back.weights(layer, attention="cross", text=0)  # (H, T, S)
        assert (got - w[0]).abs().max() < 1e-5, layer


def test_numpy_of_a_bfloat16_trace():
    """NumPy has no bfloat16: Trace.numpy() raised torch's "Got unsupported ScalarType BFloat16".
    It gives float32 arrays holding the same values: a bfloat16 is the top 16 bits of a float32,
    so the reference shifts the raw bits into place."""
    model = attnscope.load(dtype=torch.bfloat16)
    tr = model.trace("hello world", names=["layers.1.attn.weights", "layers.1.out"])
    arrays = tr.numpy()
    for n in tr.names:
        bits = tr[n].view(torch.int16).numpy().astype(np.int32) << 16  # the bfloat16's bits, as a float32's
        assert arrays[n].dtype == np.float32
        np.testing.assert_array_equal(arrays[n].view(np.int32), bits)


@pytest.mark.parametrize("field, value, says", [
    ("decoder_input_ids", None, 'lacks the field "seq2seq.decoder_input_ids"'),
    ("target_tokens", None, 'lacks the field "seq2seq.target_tokens"'),
    ("decoder_attention_mask", "x", 'the field "seq2seq.decoder_attention_mask" holds a str'),
    ("decoder_input_ids", [[0, "a"]], 'the field "seq2seq.decoder_input_ids" holds a list'),
])
def test_a_damaged_target_side_is_named(tmp_path, field, value, says):
    """The target side of a saved encoder–decoder trace: a missing field was a bare KeyError, a
    wrong one a torch error."""
    from tests.models.seq2seq.tiny import t5

    attnscope.load(t5(tmp_path / "t5")).trace("the cat sat", "le chat").save(tmp_path / "t")
    meta = json.loads((tmp_path / "t" / "trace.json").read_text(encoding="utf-8"))
    if value is None:
        del meta["seq2seq"][field]
    else:
        meta["seq2seq"][field] = value
    (tmp_path / "t" / "trace.json").write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(says)):
        Trace.load(tmp_path / "t")
