"""Errors of attnscope's core in Chinese by key: the kernels (a shape mismatch, a bad mask, a wrong
dtype, leading dims that do not broadcast, a NaN, ranks that disagree), the torch modules, the
configs, traces (a name not recorded, a saved trace that is not one), the tokenizer, layer recipes,
scorings, hooks, exercises, the server and the language itself. Each is raised for real (through
``attnscope.cli.main`` where a command reaches it, else through the Python API) and said again with
``attnscope.i18n.error_message(e, "zh")``: the Chinese line keeps the values and has no English words
left; the English line is the message as it was before the errors were keyed, word for word."""

import json
import socket

import pytest
import torch

import attnscope
from attnscope import i18n
from attnscope.cli import main
from attnscope.errors import AttnscopeError, ConfigError, InputError, NonFiniteError, ShapeError
from attnscope.exercise import make_exercise
from attnscope.functional import attention
from attnscope.hooks import HookPoint
from attnscope.kernels import checking_finite
from attnscope.kernels.ring.protocol import check_agreement, meta_row
from attnscope.modules import MultiHeadAttention
from attnscope.recipe import parse_recipe
from attnscope.scorings import get_scoring, unregister_scoring
from attnscope.server import bind
from attnscope.testing import tiny as testing
from attnscope.trace import Trace
from attnscope.trace.memory import parse_memory
from tests.cli.test_error_keys_zh import english_words


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    """A 2-layer, 4-head BERT with bert-base-chinese's vocabulary for a few characters."""
    return str(testing.tiny_bert_chinese(tmp_path_factory.mktemp("bert_core_zh")))


def both(e: AttnscopeError, english: str, values, *also: str) -> str:
    """``e``'s English line is ``english``; its Chinese line shows every value and no English word
    outside ``values`` and ``also`` (names of code: arguments, dtypes, terms such as ``rank``)."""
    assert e.key, "the error carries no key: the command line could not say it in Chinese"
    assert str(e) == english
    assert i18n.error_message(e, "en") == english
    zh = i18n.error_message(e, "zh")
    for v in values:
        assert v in zh, (v, zh)
    assert not english_words(zh, *values, *also), (english_words(zh, *values, *also), zh)
    assert zh != english
    return zh


def raised(cls, fn, *args, **kw):
    with pytest.raises(cls) as info:
        fn(*args, **kw)
    return info.value


# --- kernels ------------------------------------------------------------------------------------

def test_attention_shape_mismatch():
    q, k = torch.zeros(2, 3, 4), torch.zeros(2, 5, 3)
    e = raised(ShapeError, attention, q, k, torch.zeros(2, 5, 3))
    zh = both(e, "q and k must have the same last dim d_k, got q (2, 3, 4) and k (2, 5, 3)",
              ["(2, 3, 4)", "(2, 5, 3)"], "d_k")
    assert zh == "q 和 k 的最后一维 d_k 必须相同，收到的是 q (2, 3, 4) 和 k (2, 5, 3)"


def test_attention_leading_dims_that_do_not_broadcast_are_joined_in_chinese():
    q, kv = torch.zeros(2, 3, 4), torch.zeros(3, 5, 4)
    e = raised(ShapeError, attention, q, kv, kv)
    zh = both(e, "leading (batch/head) dims of q, k, v: shapes (2) and (3) and (3) do not broadcast",
              ["(2)", "(3)"])
    assert zh == "q、k、v 的前导维（批/头）：形状 (2) 和 (3) 和 (3) 无法广播"


def test_mask_of_the_wrong_dtype_and_shape():
    q = torch.zeros(1, 3, 4)
    e = raised(ShapeError, attention, q, q, q, torch.zeros(3, 3, dtype=torch.int64))
    both(e, "mask must be boolean (True = attend) or floating (added to scores), got dtype torch.int64",
         ["torch.int64"], "mask", "dtype")
    e = raised(ShapeError, attention, q, q, q, torch.ones(2, 3, 3, dtype=torch.bool))
    both(e, "mask of shape (2, 3, 3) does not broadcast to the scores' shape (1, 3, 3) (..., L=3, S=3)",
         ["(2, 3, 3)", "(1, 3, 3)", "L=3", "S=3"], "mask")


def test_wrong_dtype():
    q = torch.zeros(1, 3, 4)
    e = raised(ShapeError, attention, q.long(), q, q)
    both(e, "q must be a floating-point tensor, got dtype torch.int64", ["torch.int64"], "dtype")
    e = raised(ShapeError, attention, q, q, q.double())
    both(e, "q, k, v must share a dtype, got torch.float32, torch.float32, torch.float64",
         ["torch.float32, torch.float32, torch.float64"], "dtype")


def test_non_finite_values_with_and_without_a_hint():
    q = torch.zeros(1, 3, 4)
    bad = q.clone()
    bad[0, 1, 2] = float("nan")
    with checking_finite():
        e = raised(NonFiniteError, attention, bad, q, q)
        both(e, "q has non-finite values (NaN ×1) in shape (1, 3, 4), first at index (0, 1, 2)",
             ["NaN ×1", "(1, 3, 4)", "(0, 1, 2)"])
        mask = torch.zeros(3, 3)
        mask[0, 0] = float("inf")
        e = raised(NonFiniteError, attention, q, q, q, mask)
        zh = both(e, "mask has non-finite values (+inf ×1) in shape (3, 3), first at index (0, 0): "
                     "a float mask may hold -inf (blocked) but not NaN or +inf",
                  ["+inf ×1", "(3, 3)", "(0, 0)"], "mask", "NaN", "inf")
        assert "-inf" in zh and "NaN" in zh


def test_ring_ranks_that_disagree_are_listed_in_chinese():
    q = torch.zeros(1, 2, 4, 8)
    rows = [meta_row(t, t, t, None, False, "scaled", None, None, ok=True) for t in (q, q.double())]
    e = raised(ShapeError, check_agreement, rows, 0)
    zh = both(e, "ring_attention: ranks disagree on dtype: rank 0 torch.float32, rank 1 torch.float64",
              ["torch.float32", "torch.float64"], "ring_attention", "rank", "dtype")
    assert zh == "ring_attention：各 rank 的 dtype 不一致：rank 0 是 torch.float32，rank 1 是 torch.float64"


# --- modules and configs ------------------------------------------------------------------------

def test_module_and_config_values_out_of_range():
    e = raised(ConfigError, MultiHeadAttention, 10, 3)
    both(e, "d_model (10) must be divisible by n_heads (3); d_model % n_heads = 1", ["10", "3", "1"],
         "d_model", "n_heads")
    e = raised(ConfigError, attnscope.TransformerConfig, dropout=1.5)
    both(e, "config.dropout must be in [0, 1), got 1.5", ["1.5", "[0, 1)"], "config.dropout")
    e = raised(ConfigError, attnscope.TransformerConfig, d_model=10, n_heads=3)
    both(e, "config.d_model (10) must be divisible by config.n_heads (3); d_model % n_heads = 1",
         ["10", "3"], "config.d_model", "config.n_heads", "d_model", "n_heads")
    m = MultiHeadAttention(8, 2)
    e = raised(ShapeError, m, torch.zeros(1, 3, 8), key_padding_mask=torch.zeros(1, 4, dtype=torch.bool))
    both(e, "key_padding_mask must have shape (B, S) = (1, 3), got (1, 4)", ["(1, 3)", "(1, 4)"],
         "key_padding_mask")


# --- traces -------------------------------------------------------------------------------------

def test_a_trace_name_not_recorded(bert):
    model = attnscope.load(bert)
    tr = model.trace("我喜欢", names="layers.0.attn.weights")
    e = raised(KeyError, tr.__getitem__, "layers.0.attn.weight")
    both(e, "'layers.0.attn.weight' is not in this trace (1 names recorded; trace with "
            "names=['layers.0.attn.weight'] to record it); did you mean layers.0.attn.weights?",
         ["'layers.0.attn.weight'", "layers.0.attn.weights"], "trace", "names")
    e = raised(InputError, model.trace, "我喜欢", names="xyz")
    both(e, f"names: 'xyz' matches no trace name; see model.hook_names ({len(model.hook_names)} names)",
         ["'xyz'", str(len(model.hook_names))], "model.hook_names", "names", "trace")


def test_trace_load_of_a_folder_that_is_not_a_trace(tmp_path):
    (tmp_path / "trace.json").write_text(json.dumps({"format": "other"}), encoding="utf-8")
    (tmp_path / "tensors.safetensors").write_bytes(b"")
    e = raised(InputError, Trace.load, tmp_path)
    both(e, f"{tmp_path / 'trace.json'} is not an attnscope trace (format 'other')",
         [str(tmp_path / "trace.json"), "'other'"], "attnscope", "trace")
    (tmp_path / "trace.json").write_text(json.dumps({"format": "attnscope-trace", "version": 99}), encoding="utf-8")
    e = raised(InputError, Trace.load, tmp_path)
    assert e.key in ("errors.trace_version", "errors.trace_not_trace")
    assert not english_words(i18n.error_message(e, "zh"), str(tmp_path / "trace.json"), "attnscope", "trace")


def test_trace_memory_limit_that_is_not_a_size():
    e = raised(InputError, parse_memory, "2XB")
    both(e, "max_memory '2XB' is not a size: write bytes or a number with a unit (kB, MB, GB, KiB, MiB, GiB), "
            "e.g. '2GB'", ["'2XB'", "kB、MB、GB、KiB、MiB、GiB", "'2GB'"], "max_memory")


# --- the tokenizer, through the command line ----------------------------------------------------

def test_text_that_is_not_unicode_through_the_command_line(capsys, bert, tmp_path):
    argv = ["plot", "我\udce9", "--model", bert, "-o", str(tmp_path / "x.png")]
    assert main(argv) == 2
    english = capsys.readouterr().err.strip().splitlines()[-1]
    assert english == ("attnscope plot: error: the text is not valid Unicode: byte 0xE9 at character 1 is not "
                       "UTF-8 (was the text written in another encoding, such as Latin-1? convert it to UTF-8)")
    assert main(argv + ["--lang", "zh"]) == 2
    zh = capsys.readouterr().err.strip().splitlines()[-1]
    assert "0xE9" in zh and "1" in zh
    assert not english_words(zh, "attnscope plot", "Unicode", "Latin-1", "UTF-8"), zh


def test_tokenizer_max_length_out_of_range(bert):
    tok = attnscope.load(bert).tokenizer
    e = raised(InputError, tok.encode, "我喜欢", max_length=0)
    both(e, f"max_length must be an integer in [1, {tok.max_length}] (the model's positions), got 0",
         [f"[1, {tok.max_length}]", "0"], "max_length")


def test_tokenizer_max_length_below_the_special_tokens(bert):
    tok = attnscope.load(bert).tokenizer
    e = raised(InputError, tok.encode, "我喜欢", truncate=True, max_length=1)
    both(e, "max_length=1 is shorter than the 2 special tokens the tokenizer adds to every text "
            "([CLS] [SEP]), so truncation cannot reach it; give max_length ≥ 2",
         ["max_length=1", "2", "[CLS] [SEP]"], "max_length")


# --- recipes, scorings, hooks, exercises, the server, the language --------------------------------

def test_recipe_scoring_hook_exercise_and_language():
    e = raised(ConfigError, parse_recipe, "mine", "h x\nout = h")
    both(e, "layer recipe 'mine', line 1: 'h x' is not 'name = expression'", ["'mine'", "'h x'",
         "'name = expression'"])
    e = raised(ConfigError, get_scoring, "nope")
    assert e.values["choices"].startswith("scaled")
    both(e, f"unknown scoring 'nope'; choose one of {e.values['choices']}", ["'nope'", e.values["choices"]])
    e = raised(ConfigError, unregister_scoring, "scaled")
    zh = both(e, "scoring 'scaled' is built in and cannot be removed", ["'scaled'"])
    assert zh == "打分方式 'scaled' 是内置的，不能删除"
    e = raised(InputError, HookPoint().add_hook, lambda t, n: t, "sideways")
    both(e, "dir must be 'fwd' or 'bwd', got 'sideways'", ["'fwd'", "'bwd'", "'sideways'"], "dir")
    e = raised(InputError, make_exercise, tokens=9)
    both(e, "tokens must be an integer from 2 to 8 (a hand calculation), got 9", ["2", "8", "9"], "tokens")
    e = raised(InputError, i18n.check_lang, "fr")
    zh = both(e, "language 'fr' is not one of en, zh", ["'fr'", "en, zh"])
    assert zh == "语言 'fr' 不是 en, zh 之一"


def test_server_port_in_use_through_the_command_line(capsys):
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen(1)
    port = held.getsockname()[1]
    try:
        e = raised(InputError, bind, "127.0.0.1", port)
        argv = ["serve", "--host", "127.0.0.1", "--port", str(port)]
        assert main(argv) == 2
        english = capsys.readouterr().err.strip().splitlines()[-1]
        assert main(argv + ["--lang", "zh"]) == 2
        zh = capsys.readouterr().err.strip().splitlines()[-1]
    finally:
        held.close()
    both(e, f"port {port} is in use; choose another with --port", [str(port)])
    assert english == f"attnscope serve: error: port {port} is in use; choose another with --port"
    assert zh == f"attnscope serve：错误：端口 {port} 已被占用；请用 --port 换一个"


def test_the_float64_reference_model(bert):
    from attnscope import reference_model, reference_model_seq2seq
    model = attnscope.load(bert)
    e = raised(InputError, reference_model.forward, model, "我喜欢", upto=5)
    zh = both(e, "layer 5 is out of range: the model has 2 layers (0..1)", ["5", "2", "0..1"])
    assert zh == "层 5 超出范围：模型有 2 层（0..1）"
    e = raised(InputError, reference_model_seq2seq.forward_seq2seq, model, "我喜欢")
    both(e, f"{model.name} ({model.family}) is not an encoder–decoder model; use reference_model.forward",
         [model.name, model.family, "reference_model.forward"])


def test_a_ring_rank_that_does_not_answer():
    import datetime

    from attnscope.kernels.ring.protocol import EXCHANGE, RingTimeout, wait_all

    class Hung:
        def wait(self, timeout):
            raise RuntimeError("Timed out waiting\nfor rank 1")

    e = raised(RingTimeout, wait_all, [Hung()], datetime.timedelta(seconds=1.5), EXCHANGE)
    zh = both(e, "ring_attention: the exchange of shapes between ranks did not complete within 1.5 s (another rank "
                 "crashed, hangs, or did not call ring_attention): Timed out waiting",
              ["1.5", "Timed out waiting"], "ring_attention", "rank")
    assert zh.startswith("ring_attention：各 rank 之间交换形状没有在 1.5 秒内完成")


def test_position_schemes():
    from attnscope.positions import PositionScheme, get_position, register_position
    e = raised(ConfigError, get_position, "nope")
    both(e, f"unknown position scheme 'nope'; choose one of {e.values['choices']}", ["'nope'", e.values["choices"]])
    e = raised(ConfigError, register_position, PositionScheme(name="mine", acts_on="keys"))
    zh = both(e, f"a position scheme acts on one of {e.values['choices']}, got 'keys'",
              [e.values["choices"], "'keys'"])
    assert zh.startswith("位置方案作用于 embeddings")
