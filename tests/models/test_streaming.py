"""``load(…, stream_layers=True)`` (attnscope.models.streaming): a model whose layers are read from
the file when they run gives the in-memory model's numbers bit for bit, holds one layer at a time,
and refuses what it cannot do in one sentence. Tiny checkpoints written here (safetensors folders,
a sharded one, a GGUF file); SmolLM2's equality is in tests/analysis/test_streamed_analysis.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import attnscope
from attnscope.analysis import analyze
from attnscope.errors import ConfigError, InputError, ModelLoadError
from attnscope.models.streaming import layer_stream
from attnscope.testing.tiny import FAMILIES
from tests.models.decoders.gguf_writer import hf_weights, write_gguf
from tests.models.decoders.tiny import gemma3, llama_gqa, qwen2_window

TEXTS = ["The quick brown fox jumps over the lazy dog.", "Attention is all you need."]
BUILDERS = {"llama_gqa": llama_gqa, "qwen2_window": qwen2_window, "gemma3": gemma3}


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("stream")
    out = {name: build(root / name) for name, build in BUILDERS.items()}
    out["bert"] = FAMILIES["bert"].build(root / "bert")
    return out


def layer_is_meta(layer: torch.nn.Module) -> bool:
    return all(p.is_meta for p in layer.parameters())


@pytest.mark.parametrize("name", [*BUILDERS, "bert"])
def test_every_traced_name_equals_the_in_memory_model(folders, name):
    mem, st = attnscope.load(folders[name]), attnscope.load(folders[name], stream_layers=True)
    stream = layer_stream(st)
    assert stream is not None and all(layer_is_meta(l) for l in st.layers)
    assert not any(p.is_meta for n, p in st.named_parameters() if not n.startswith("layers."))
    held = []  # how many layers hold weights while a layer's attention runs
    with st.hooks({"layers.*.attn.weights": lambda t, n: held.append(sum(not layer_is_meta(l) for l in st.layers))}):
        a = st.trace(TEXTS, names=None)  # a padded batch, every name (no replay in stream mode)
    b = mem.trace(TEXTS, names=None, replay=False)
    assert held == [1] * st.config.n_layers
    assert stream.reads == st.config.n_layers  # one pass: each layer read once
    for n in mem.hook_names:
        if n in b:
            assert torch.equal(a[n], b[n]), n
    assert all(layer_is_meta(l) for l in st.layers)  # dropped after the pass
    assert st.unused_weights == mem.unused_weights


def test_a_sharded_checkpoint_streams_from_both_files(folders, tmp_path):
    from safetensors.torch import load_file, save_file

    src, dst = folders["llama_gqa"], tmp_path / "sharded"
    dst.mkdir()
    for f in src.iterdir():
        if f.name != "model.safetensors":
            (dst / f.name).write_bytes(f.read_bytes())
    sd = load_file(str(src / "model.safetensors"))
    keys = sorted(sd)
    parts = {"model-00001-of-00002.safetensors": keys[::2], "model-00002-of-00002.safetensors": keys[1::2]}
    for file, ks in parts.items():
        save_file({k: sd[k] for k in ks}, str(dst / file))
    (dst / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {k: f for f, ks in parts.items() for k in ks}}), encoding="utf-8")
    mem, st = attnscope.load(src), attnscope.load(dst, stream_layers=True)
    with torch.no_grad():
        assert torch.equal(st.logits(TEXTS), mem.logits(TEXTS))


@pytest.mark.parametrize("model_type", ["llama", "gemma3_text"])
def test_a_gguf_file_streams_the_same_dequantized_weights(tmp_path, model_type):
    sd = hf_weights(model_type, heads=4, kv=2, head_dim=8, tied=False)
    path = write_gguf(tmp_path / "tiny.gguf", model_type, sd, heads=4, kv=2, head_dim=8, qtype="Q8_0")
    mem, st = attnscope.load(path), attnscope.load(path, stream_layers=True)
    ids = torch.tensor([[1, 5, 9, 22, 40, 3], [1, 7, 7, 30, 2, 0]])
    mask = torch.tensor([[1] * 6, [1] * 5 + [0]])
    with torch.no_grad():
        assert torch.equal(st(ids, mask), mem(ids, mask))
    assert st.gguf["qtypes"] == mem.gguf["qtypes"]
    for k, v in mem.state_dict().items():  # every layer, read on its own, is the in-memory one
        i = k.split(".")[1] if k.startswith("layers.") else None
        if i is not None:
            stream = layer_stream(st)
            assert stream is not None
            with stream.resident(int(i)):
                assert torch.equal(st.state_dict()[k], v), k


def test_float64_and_a_device_apply_to_each_layer_as_it_is_read(folders):
    mem = attnscope.load(folders["llama_gqa"], dtype=torch.float64)
    st = attnscope.load(folders["llama_gqa"], dtype=torch.float64, device="cpu", stream_layers=True)
    assert st.dtype == torch.float64
    with torch.no_grad():
        assert torch.equal(st.run(TEXTS), mem.run(TEXTS))


def test_what_stream_mode_cannot_do_is_refused_in_one_sentence(folders, tmp_path):
    st = attnscope.load(folders["llama_gqa"], stream_layers=True)
    with pytest.raises(InputError, match="generation .* is not run in stream mode"):
        st.generate("The quick", max_new_tokens=2)
    with pytest.raises(InputError, match="gradients need every layer's weights"):
        st.trace("The quick", names=["layers.0.attn.q"], grad=True)
    with pytest.raises(InputError, match="cannot run a layer again on read"):
        st.trace("The quick", replay=True)
    assert all(layer_is_meta(l) for l in st.layers)  # a refusal leaves nothing held
    with pytest.raises(ConfigError, match="importance_texts=0 and norm_texts=0"):
        analyze(_corpus(tmp_path), st, importance_texts=4, progress=False)
    pt = tmp_path / "pt"  # a pickle cannot be read one layer at a time
    pt.mkdir()
    for f in folders["llama_gqa"].iterdir():
        if f.name != "model.safetensors":
            (pt / f.name).write_bytes(f.read_bytes())
    from safetensors.torch import load_file
    torch.save(load_file(str(folders["llama_gqa"] / "model.safetensors")), pt / "pytorch_model.bin")
    with pytest.raises(ModelLoadError, match="reads one layer at a time from safetensors or GGUF"):
        attnscope.load(pt, stream_layers=True)
    with pytest.raises(ModelLoadError, match="stream_layers=True and device_map cannot be combined"):
        attnscope.load(folders["llama_gqa"], stream_layers=True, device_map=["cpu", "cpu"])


def _corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(TEXTS * 3) + "\nShort one.\n", encoding="utf-8")
    return path


def test_streamed_analysis_equals_the_in_memory_one(folders, tmp_path):
    """One forward pass per window in stream mode: the in-memory run with batch_size = chunk_size."""
    corpus = _corpus(tmp_path)
    kw = dict(importance_texts=0, norm_texts=0, induction_seqs=3, induction_length=6, chunk_size=4, batch_size=4,
              lanes=1, progress=False)
    st = attnscope.load(folders["llama_gqa"], stream_layers=True)
    got = analyze(corpus, st, **kw)
    want = analyze(corpus, attnscope.load(folders["llama_gqa"]), **kw)
    for k, v in want.means.items():
        assert np.array_equal(got.means[k], v, equal_nan=True), k
    assert (got.labels == want.labels).all() and got.counters == want.counters
    assert got.copying == want.copying
    stream = layer_stream(st)
    assert stream is not None  # 7 texts: 2 windows, then 1 batch of induction sequences
    assert stream.reads == 3 * st.config.n_layers


def test_analyze_stream_on_the_command_line(folders, tmp_path):
    from attnscope.cli import main

    corpus, out = _corpus(tmp_path), tmp_path / "out"
    assert main(["analyze", str(corpus), "--model", str(folders["llama_gqa"]), "--stream", "--chunk-size", "4",
                 "--batch-size", "4", "--induction-seqs", "2", "--out", str(out), "--no-progress"]) == 0
    report = json.loads((out / "analysis.json").read_text(encoding="utf-8"))
    want = analyze(corpus, attnscope.load(folders["llama_gqa"]), importance_texts=0, norm_texts=0, induction_seqs=2,
                   chunk_size=4, batch_size=4, lanes=1, progress=False)
    rows = report["heads"]
    assert len(rows) == want.n_layers * want.n_heads
    for r in rows:  # --stream: one window per pass, importance and norm shares off
        assert r["importance"] is None
        assert r["entropy"] == float(want.means["entropy"][r["layer"], r["head"]])


@pytest.mark.parametrize("extra", [["--importance-texts", "5"], ["--norm-texts", "3"], ["--importance-batch", "2"]])
def test_analyze_stream_refuses_what_it_does_not_compute(tmp_path, capsys, extra):
    """--stream computes neither head importance nor the norm shares: '--importance-texts 5' and the
    rest were dropped in silence (the report's importance column empty); one sentence before any work
    ('--importance-texts 0', what --stream does anyway, stays accepted)."""
    from attnscope.cli import main

    corpus, out = _corpus(tmp_path), tmp_path / "out"
    assert main(["analyze", str(corpus), "--model", "no-such-model", "--stream", "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert f"{extra[0]} does not apply with --stream" in err and err.count("\n") == 1, err
    assert not out.exists()


def test_a_file_changed_after_loading_is_one_sentence(tmp_path):
    """A streamed model reads its layers from the file at each pass: when the file is rewritten or
    cut short after loading, the next pass is refused in one sentence naming the file (before: the
    rewritten bytes gave other numbers silently, and a cut file killed the process with SIGBUS on
    the memory-mapped read). Each case in its own process, so that a SIGBUS is seen as such."""
    import subprocess
    import sys
    sd = hf_weights("llama", heads=4, kv=2, head_dim=8, tied=False)
    path = write_gguf(tmp_path / "tiny.gguf", "llama", sd, heads=4, kv=2, head_dim=8, qtype="Q8_0")
    st_folder = tmp_path / "st"
    FAMILIES["bert"].build(st_folder)
    script = ("import os, sys, torch, attnscope\n"
              "path, how = sys.argv[1], sys.argv[2]\n"
              "m = attnscope.load(path, stream_layers=True)\n"
              "ids = torch.tensor([[1, 5, 9, 22, 40, 3]])\n"
              "with torch.no_grad(): m(ids)\n"
              "f = path if path.endswith('.gguf') else os.path.join(path, 'model.safetensors')\n"
              "n = os.path.getsize(f)\n"
              "with open(f, 'r+b') as h:\n"
              "    h.truncate(n - 64 if how == 'cut' else 128) if how != 'rewrite' else (h.seek(n - 64), h.write(bytes(64)))\n"
              "try:\n"
              "    with torch.no_grad(): m(ids)\n"
              "except attnscope.errors.ModelLoadError as e:\n"
              "    print('REFUSED', e)\n")
    import shutil
    for source in (path, st_folder):
        for how in ("cut", "rewrite", "cut to the header"):  # the last: the resident embeddings were a view of the file
            where = tmp_path / how / source.name  # a fresh copy for each case
            where.parent.mkdir(exist_ok=True)
            (shutil.copytree if source.is_dir() else shutil.copy)(source, where)
            proc = subprocess.run([sys.executable, "-c", script, str(where), how], capture_output=True, text=True,
                                  timeout=240)
            assert proc.returncode == 0, (where, how, proc.returncode, proc.stderr[-2000:])
            assert "REFUSED" in proc.stdout and "changed since the model was loaded" in proc.stdout, (where, how, proc.stdout)
