"""Layers across devices (issue 29 item 4): ``load(…, device_map=…)`` over two CPU "devices" (both
"cpu": the move hooks run and move nothing) gives the model loaded whole exactly — logits, every
trace name, the loss or sentence embeddings, greedy generation with a key/value cache, ``analyze`` —
and its hooks ran once per part per pass (``model.placement.calls``); a bad map is one sentence naming what is wrong."""

from __future__ import annotations

import pytest
import torch

import attnscope
import attnscope.analysis
from attnscope.errors import ModelLoadError
from attnscope.i18n import error_message
from attnscope.models.placement import parse_device_map, split_layers

TEXTS = ["The cat sat on the mat because it was tired.", "Hi there"]


def _same_everywhere(whole, placed, texts=TEXTS, *, loss=True):
    """Every trace name and the output of a padded batch are the same bits; each part's hook ran once."""
    placed.placement.calls.clear()
    a, b = whole.trace(texts), placed.trace(texts)
    L = whole.config.n_layers
    calls = placed.placement.calls
    assert [calls[f"layers.{i}"] for i in range(L)] == [1] * L and calls["embed"] == 1  # one pass
    assert a.names == b.names and len(a.names) > 10
    for n in a.names:  # (a layer's steps are replayed on read, through its hook again: on its device)
        assert torch.equal(a[n], b[n]), n
    if whole.has_lm_head:
        assert torch.equal(whole.logits(texts), placed.logits(texts))
        assert not loss or torch.equal(whole.loss(texts), placed.loss(texts))
    elif hasattr(whole, "sentence_embedding"):
        assert torch.equal(whole.sentence_embedding(texts), placed.sentence_embedding(texts))


@pytest.mark.parametrize("name", ["gpt2", "bert"])
def test_encoders_over_two_cpu_devices(name, tiny_dirs):
    folder = tiny_dirs[name]
    whole = attnscope.load(folder)
    L = whole.config.n_layers
    placed = attnscope.load(folder, device_map={"embed": "cpu", "layers.0": "cpu", f"layers.1-{L - 1}": "cpu",
                                                "head": torch.device("cpu")})
    assert placed.placement.as_dict() == {"embed": "cpu", **{f"layers.{i}": "cpu" for i in range(L)}, "head": "cpu"}
    _same_everywhere(whole, placed)


@pytest.mark.parametrize("name", ["llama_gqa", "gemma3"])
def test_decoders_over_two_cpu_devices(name, decoder_dirs, tmp_path):
    folder = decoder_dirs[name]
    whole = attnscope.load(folder)
    placed = attnscope.load(folder, device_map=["cpu", "cpu"])  # the layers split in two runs
    _same_everywhere(whole, placed)
    assert placed.placement.calls["head"] == 3  # the final norm, once per pass (the trace, the logits, the loss)
    a, b = whole.generate("The cat", max_new_tokens=4), placed.generate("The cat", max_new_tokens=4)
    assert a.new_ids == b.new_ids and a.new_ids
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(TEXTS * 3) + "\n", encoding="utf-8")
    kw = dict(importance_texts=2, induction_seqs=2, induction_length=4, norm_texts=0, progress=False, batch_size=2)
    ra, rb = attnscope.analysis.analyze(corpus, whole, **kw), attnscope.analysis.analyze(corpus, placed, **kw)
    for stat in ra.means:
        assert ra.means[stat].tobytes() == rb.means[stat].tobytes(), stat


def test_split_is_even_and_the_first_runs_longer():
    cpu = torch.device("cpu")
    meta = torch.device("meta")
    assert split_layers(5, [cpu, meta]) == [cpu, cpu, cpu, meta, meta]
    p = parse_device_map({"layers.0-2": "cpu", "layers.3": "meta"}, 4)
    assert (p.embed, p.head) == (cpu, meta)  # embed with layer 0, head with the last layer


@pytest.mark.parametrize("spec, words", [
    ({"layers.0": "cpu"}, "device_map leaves layers.1 without a device: name every one of the model's 2 layers."),
    ({"layers.0-2": "cpu"}, "device_map's 'layers.0-2' is not a range of this model's layers: it has 2 layers, 0 … 1."),
    ({"layers.0-1": "cpu", "layers.1": "cpu"}, "device_map places layer 1 twice (again in 'layers.1'): name each layer once."),
    ({"blocks.0": "cpu"}, "device_map has the key 'blocks.0', which names no part"),
    ({"layers.0-1": "gpu0"}, "device_map: 'layers.0-1' is 'gpu0', which is not a device"),
    ({"layers.0-1": "cuda:7"}, "device_map: 'layers.0-1' names cuda:7, which this machine does not have"),
    ([], "device_map is an empty list: name at least one device."),
    (3, "device_map is of type int; it takes a dict of parts"),
])
def test_a_bad_map_is_one_sentence(spec, words, tiny_dirs):
    with pytest.raises(ModelLoadError) as e:
        attnscope.load(tiny_dirs["gpt2"], device_map=spec)
    assert str(e.value).startswith(words) and "\n" not in str(e.value)
    zh = error_message(e.value, "zh")
    assert zh.startswith("device_map") and zh != str(e.value) and "\n" not in zh


def test_device_and_device_map_together_are_refused(tiny_dirs):
    with pytest.raises(ModelLoadError, match="device= or device_map=, not both"):
        attnscope.load(tiny_dirs["gpt2"], device="cpu", device_map=["cpu"])


@pytest.mark.skipif(torch.cuda.is_available(), reason="balanced needs no CUDA to be refused")
def test_balanced_without_cuda_says_so(tiny_dirs):
    with pytest.raises(ModelLoadError, match="this machine has none"):
        attnscope.load(tiny_dirs["gpt2"], device_map="balanced")


@pytest.mark.real_model
def test_smollm2_over_two_cpu_devices(installed_model):
    whole = installed_model("smollm2-135m")
    placed = attnscope.load("smollm2-135m", device_map={"embed": "cpu", "layers.0-14": "cpu",
                                                        "layers.15-29": "cpu", "head": "cpu"})
    _same_everywhere(whole, placed, ["The capital of France is Paris."], loss=False)


def test_shared_layers_stay_together(tmp_path):
    from tests.models.encoders.tiny import build
    # (DeBERTa and T5 are refused in one sentence too: checked by hand, their tiny builds take ~10 s)
    # ALBERT's layers are one set of weights: on one device they may be placed, across two not
    albert = build("albert", tmp_path / "albert")
    assert torch.equal(attnscope.load(albert, device_map=["cpu", "cpu"]).run("The cat sat."),
                       attnscope.load(albert).run("The cat sat."))
    with pytest.raises(ModelLoadError, match="puts layers 0 and 2 on different devices, but they share their weights"):
        attnscope.load(albert, device_map=["cpu", "meta"])


@pytest.mark.parametrize("spec, part", [({"layers.0": "cpu", "layers.1": "meta"}, "layers.1"),
                                        ({"layers.0-1": "cpu", "embed": "meta"}, "embed"),
                                        (["cpu", "meta"], "layers.1")])
def test_the_meta_device_is_refused_when_loading(spec, part, tiny_dirs):
    """The meta device holds shapes, no numbers: a model placed on it lost those weights, and its
    first pass failed deep in torch ("Tensor.item() cannot be called on meta tensors"). Refused at
    load in one sentence naming the part (parse_device_map itself still takes meta, for tests)."""
    with pytest.raises(ModelLoadError) as e:
        attnscope.load(tiny_dirs["gpt2"], device_map=spec)
    assert str(e.value).startswith(f"device_map: '{part}' is the meta device") and "\n" not in str(e.value)
    assert error_message(e.value, "zh").startswith("device_map")
