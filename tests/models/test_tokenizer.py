"""Tokens and ids as the first article shows them, and as transformers' tokenizers give them."""

import json
import shutil

import pytest

import attnscope
from attnscope.testing.tiny import BERT_BASE_CHINESE_IDS
from attnscope.tokenizer import Tokenizer, wordpiece_from_vocab

ZH = ["我喜欢人工智能", "你好，世界！我爱北京。", "我喜欢AI和cats", "  北京\t是中国的首都 "]
EN = ["The cat sat on the mat.", "Héllo, WORLD!! naïve café", "unaffable tokenization 2017",
      "don't stop-believing..."]


def test_chinese_sentence_gives_the_articles_tokens_and_ids(tiny_models):
    batch = tiny_models["bert-chinese"].encode("我喜欢人工智能")
    assert batch.tokens == [["[CLS]", "我", "喜", "欢", "人", "工", "智", "能", "[SEP]"]]
    # bert-base-chinese's ids for these characters; the first article prints [101, 2769, ...]
    expected = [BERT_BASE_CHINESE_IDS[t] for t in batch.tokens[0]]
    assert expected == [101, 2769, 1599, 3614, 782, 2339, 3255, 5543, 102]
    assert batch.ids == [expected]
    assert batch.input_ids.tolist() == [expected] and batch.attention_mask.tolist() == [[1] * 9]


def test_vocab_txt_matches_python_bert_tokenizer(tiny_dirs, tiny_models):
    from transformers.models.bert import BertTokenizerLegacy  # the pure-Python reference

    for name, texts, lower in (("bert-chinese", ZH, False), ("bert", EN, True)):
        ref = BertTokenizerLegacy(str(tiny_dirs[name] / "vocab.txt"), do_lower_case=lower)
        batch = tiny_models[name].encode(texts)
        for i, text in enumerate(texts):
            want = ref(text)["input_ids"]
            assert batch.ids[i] == want, (name, text)
            assert batch.tokens[i] == ref.convert_ids_to_tokens(want), (name, text)


def test_minilm_tokenizer_json_agrees_with_its_vocab_txt(minilm):
    folder = attnscope.models.default_model_path()
    from_vocab = Tokenizer(wordpiece_from_vocab(folder / "vocab.txt", lowercase=True),
                           pad_token_id=0, max_length=512)
    texts = EN + ZH
    assert minilm.encode(texts).ids == from_vocab.encode(texts).ids


@pytest.mark.parametrize("name,cls", [("gpt2", "GPT2Tokenizer"), ("roberta", "RobertaTokenizer")])
def test_byte_level_bpe_matches_transformers(name, cls, tiny_dirs, tiny_models):
    import transformers

    ref = getattr(transformers, cls).from_pretrained(str(tiny_dirs[name]))  # vocab.json + merges.txt
    assert len(ref) == tiny_models[name].tokenizer.vocab_size
    batch = tiny_models[name].encode(EN + ZH)
    for i, text in enumerate(EN + ZH):
        want = ref(text)["input_ids"]
        assert batch.ids[i] == want, text
        assert batch.tokens[i] == ref.convert_ids_to_tokens(want), text


def test_tokenizer_json_is_preferred_and_equivalent(tiny_dirs, tmp_path):
    import transformers

    folder = tmp_path / "roberta-json"
    shutil.copytree(tiny_dirs["roberta"], folder)
    ref = transformers.RobertaTokenizer.from_pretrained(str(folder))
    ref.backend_tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "vocab.json").unlink()  # tokenizer.json alone must be enough
    (folder / "merges.txt").unlink()
    model = attnscope.load(folder)
    assert model.tokenizer.source.endswith("tokenizer.json")
    assert model.encode(EN).ids == [ref(t)["input_ids"] for t in EN]


def test_padding_uses_the_models_pad_id_and_mask(tiny_models, minilm):
    for model, pad in ((minilm, 0), (tiny_models["roberta"], 1)):
        batch = model.encode(["a b c d e f", "a"])
        n = batch.lengths
        assert n[0] > n[1]
        assert batch.attention_mask.tolist() == [[1] * n[0], [1] * n[1] + [0] * (n[0] - n[1])]
        assert batch.input_ids[1, n[1]:].tolist() == [pad] * (n[0] - n[1])
    gpt2 = tiny_models["gpt2"]
    batch = gpt2.encode(["a b c", "a"])
    assert batch.input_ids[1, batch.lengths[1]:].eq(gpt2.config.pad_token_id).all()


def test_tokenizer_settings_are_read_from_tokenizer_config(tiny_dirs, tmp_path):
    folder = tmp_path / "cased"
    shutil.copytree(tiny_dirs["bert"], folder)
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False}))
    cased = attnscope.load(folder).encode("Hello").tokens[0]
    lower = attnscope.load(tiny_dirs["bert"]).encode("Hello").tokens[0]
    assert lower == ["[CLS]", "hello", "[SEP]"]
    assert cased != lower  # "Hello" is not in the uncased vocabulary as such


def test_readable_tokens(tiny_models, minilm):
    gpt2 = tiny_models["gpt2"]
    text = "The cat sat, didn't it?"
    toks = gpt2.encode(text).tokens[0]
    assert any(t.startswith("Ġ") for t in toks)
    readable = gpt2.tokenizer.readable(toks)
    assert "".join(readable) == text and not any("Ġ" in t for t in readable)
    roberta = tiny_models["roberta"].tokenizer
    toks = tiny_models["roberta"].encode("a 我").tokens[0]
    assert roberta.readable(toks)[0] == "<s>" and roberta.readable(toks)[-1] == "</s>"
    assert "".join(roberta.readable(toks)[1:-1]).startswith("a ")
    assert minilm.tokenizer.readable(["[CLS]", "play", "##ing"]) == ["[CLS]", "play", "##ing"]


@pytest.mark.parametrize("texts, what, why", [
    ("a\ud800b", "the text", "character 1 is a lone surrogate U+D800"),
    ("caf\udce9 bank", "the text", "byte 0xE9 at character 3 is not UTF-8"),   # argv's surrogateescape of b"caf\xe9"
    (["fine", "x\udfff"], "texts[1]", "character 1 is a lone surrogate U+DFFF"),
])
def test_text_that_is_not_valid_unicode_is_an_input_error(minilm, texts, what, why):
    with pytest.raises(attnscope.InputError) as e:
        minilm.encode(texts)
    assert str(e.value).startswith(f"{what} is not valid Unicode: {why}")
    with pytest.raises(attnscope.InputError, match="not valid Unicode"):
        minilm.trace(texts)
    assert minilm.encode("café bank").tokens[0][1] == "cafe"  # real accents are fine


def test_a_text_that_gives_only_special_tokens_is_an_input_error(minilm, tiny_models):
    """A zero-width space or a lone blank gave [CLS] [SEP] on MiniLM, and explain worked [CLS] over
    [CLS], [SEP] as if that were the text; a special token written in the text is the text's own."""
    for text in ["\u200b", " ", "\t\n"]:
        with pytest.raises(attnscope.InputError, match=r"gives no tokens of its own, only the special ones "
                                                       r"\(\[CLS\] \[SEP\]\)"):
            minilm.encode(text)
    with pytest.raises(attnscope.InputError, match=r"text 1 \(' '\) gives no tokens of its own"):
        minilm.trace(["fine", " "])
    assert minilm.encode("[SEP]").tokens == [["[CLS]", "[SEP]", "[SEP]"]]
    assert tiny_models["gpt2"].encode(" ").tokens == [["Ġ"]]  # a byte-level BPE keeps the blank as a token


@pytest.mark.parametrize("limit", [1])
def test_truncation_below_the_added_special_tokens_is_an_input_error(minilm, limit):
    """MiniLM adds [CLS] and [SEP] to every text: truncating to 1 token cannot be done, and used to
    hand back all 5 tokens of the text, over the limit asked for."""
    with pytest.raises(attnscope.InputError, match=r"max_length=1 .* 2 special tokens .*\[CLS\] \[SEP\]"):
        minilm.encode("hello world there", truncate=True, max_length=limit)
    batch = minilm.encode("hello world there", truncate=True, max_length=2)
    assert batch.tokens == [["[CLS]", "[SEP]"]] and batch.truncated == [True]


SPECIAL_IN_TEXT = ["a [MASK] b [SEP] c [UNK] d [PAD] [CLS]", "x[MASK]y", "hi <|endoftext|> there",
                   "a <s> b </s> <pad> <mask> <unk>", "<|endoftext|><|endoftext|>"]


def test_special_tokens_written_in_the_text_stay_whole_from_vocab_txt(tiny_dirs, tiny_models, minilm):
    """A vocab.txt tokenizer keeps [MASK], [SEP] … written in a text as one token each, as BertTokenizer
    does (and MiniLM's tokenizer.json); they were split into '[', 'mask', ']'."""
    from transformers.models.bert import BertTokenizerLegacy  # the pure-Python reference

    folder = attnscope.models.default_model_path()
    from_vocab = Tokenizer(wordpiece_from_vocab(folder / "vocab.txt", lowercase=True), pad_token_id=0, max_length=512)
    for tok, vocab, lower in ((tiny_models["bert"].tokenizer, tiny_dirs["bert"] / "vocab.txt", True),
                              (from_vocab, folder / "vocab.txt", True)):
        ref = BertTokenizerLegacy(str(vocab), do_lower_case=lower)
        for text in SPECIAL_IN_TEXT:
            assert tok.encode(text).ids[0] == ref(text)["input_ids"], (vocab, text, tok.tokenize(text))
    assert from_vocab.encode(SPECIAL_IN_TEXT).ids == minilm.encode(SPECIAL_IN_TEXT).ids


@pytest.mark.parametrize("name,cls", [("gpt2", "GPT2Tokenizer"), ("roberta", "RobertaTokenizer")])
def test_special_tokens_written_in_the_text_stay_whole_from_vocab_json(name, cls, tiny_dirs, tiny_models):
    """<|endoftext|> (GPT-2) and <s> </s> <pad> <mask> <unk> (RoBERTa) in a text are one token each, as
    transformers' tokenizers of the same vocab.json + merges.txt make them."""
    import transformers

    ref = getattr(transformers, cls).from_pretrained(str(tiny_dirs[name]))
    for text in SPECIAL_IN_TEXT:
        want = ref(text)["input_ids"]
        got = tiny_models[name].encode(text)
        assert got.ids[0] == want, (text, got.tokens[0], ref.convert_ids_to_tokens(want))


def test_roberta_from_vocab_json_opens_and_closes_with_cls_and_sep(tiny_dirs, tmp_path):
    """RobertaTokenizer writes cls_token … sep_token (a pair: cls a sep sep b sep), not bos/eos: a
    folder whose cls/sep are not <s> </s> got <s> … </s> from vocab.json + merges.txt."""
    import transformers

    from attnscope.tokenizer import load_tokenizer

    folder = tmp_path / "roberta-cls-sep"
    shutil.copytree(tiny_dirs["roberta"], folder)
    vocab = json.loads((folder / "vocab.json").read_text())
    vocab.update({"<cls>": len(vocab), "<sep>": len(vocab) + 1})
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "special_tokens_map.json").write_text(json.dumps({"cls_token": "<cls>"}))
    (folder / "tokenizer_config.json").write_text(json.dumps({"sep_token": "<sep>"}))
    ref = transformers.RobertaTokenizer.from_pretrained(str(folder))
    tok = load_tokenizer(folder, kind="bpe-roberta", max_length=64, pad_token_id=1)
    texts = EN + ["<s> and </s> stay whole", "<cls>x<sep>"]
    assert tok.encode(texts).ids == [ref(t)["input_ids"] for t in texts]
    assert tok.tokenize("a b")[0] == "<cls>" and tok.tokenize("a b")[-1] == "<sep>"
    for a, b in zip(texts, ZH):
        assert tok.backend.encode(a, b).ids == ref(a, b)["input_ids"], (a, b)
    plain = load_tokenizer(tiny_dirs["roberta"], kind="bpe-roberta", max_length=64, pad_token_id=1)
    ref = transformers.RobertaTokenizer.from_pretrained(str(tiny_dirs["roberta"]))  # the defaults <s> </s>
    assert [plain.backend.encode(a, b).ids for a, b in zip(EN, ZH)] == [ref(a, b)["input_ids"] for a, b in zip(EN, ZH)]


def test_t5_unknown_characters_are_the_unk_token_as_transformers_shows_them(tmp_path):
    """T5's SentencePiece (unigram) tokenizer reads a character outside its vocabulary ('Ω', '☃',
    '𠀀') as id 2, ``<unk>``. The tokens showed the character itself, a token the model never had
    (transformers' convert_ids_to_tokens: ``<unk>``); the decoded text is transformers' decode
    without the special tokens (``<unk>`` and ``</s>`` are special in T5's tokenizer)."""
    import transformers

    from tests.models.seq2seq.tiny import t5

    transformers.logging.set_verbosity_error()
    folder = t5(tmp_path / "t5")
    model, hf = attnscope.load(folder), transformers.AutoTokenizer.from_pretrained(str(folder))
    for text in ("Ωmega ☃ x", "the cat 𠀀 sat", "the cat sat"):
        batch = model.encode(text)
        ids = batch.input_ids[0].tolist()
        assert ids == hf(text).input_ids
        assert batch.tokens[0] == hf.convert_ids_to_tokens(ids)
        assert model.tokenizer.decode(ids) == hf.decode(ids, skip_special_tokens=True)
    assert model.encode("Ωmega").tokens[0][1] == "<unk>" == hf.unk_token
