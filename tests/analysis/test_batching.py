"""Length-bucketed batches of the real MiniLM tokenizer: padding, masks, token kinds, truncation."""

import pytest

from attnscope.analysis.batching import TextEncoder, bucket, chunks, is_punctuation
from attnscope.analysis.corpus import Text
from attnscope.models import default_model_path
from attnscope.tokenizer import load_tokenizer


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer(default_model_path(), kind="wordpiece", max_length=512, pad_token_id=0)


def T(i, s):
    return Text(i, s, f"t:{i}")


def test_kinds_of_a_real_sentence(tokenizer):
    enc = TextEncoder(tokenizer, 64)
    e = enc.encode([T(0, "Hello, world! It's fine.")])
    tb = enc.pad(e)
    assert tb.tokens[0] == ["[CLS]", "hello", ",", "world", "!", "it", "'", "s", "fine", ".", "[SEP]"]
    where = lambda k: tb.kinds[k][0].nonzero().flatten().tolist()
    assert where("cls") == [0] and where("sep") == [10] and where("special") == [0, 10]
    assert where("punct") == [2, 4, 6, 9]


def test_buckets_sort_by_length_and_pad_each_batch_to_its_longest(tokenizer):
    enc = TextEncoder(tokenizer, 64)
    words = ["a", "a b c d e f g", "a b", "a b c d e f g h i j", "a b c"]
    items = enc.encode([T(i, s) for i, s in enumerate(words)])
    batches = [enc.pad(b) for b in bucket(items, 2)]
    assert [b.indices for b in batches] == [[0, 2], [4, 1], [3]]
    assert [tuple(b.input_ids.shape) for b in batches] == [(2, 4), (2, 9), (1, 12)]
    b = batches[1]  # "a b c" (5 tokens with [CLS]/[SEP]) padded to "a b c d e f g" (9)
    assert b.attention_mask.tolist() == [[1] * 5 + [0] * 4, [1] * 9]
    assert b.input_ids[0, 5:].tolist() == [0] * 4  # [PAD]
    assert b.kinds["sep"][0].nonzero().flatten().tolist() == [4]
    assert not b.kinds["punct"][0, 5:].any() and not b.kinds["special"][0, 5:].any()


def test_truncation_keeps_sep_and_counts(tokenizer):
    enc = TextEncoder(tokenizer, 6)
    items = enc.encode([T(0, "one two three four five six seven"), T(1, "short")])
    assert items[0].tokens == ["[CLS]", "one", "two", "three", "four", "[SEP]"] and items[0].cut == 3
    assert items[1].cut == 0
    tb = enc.pad(items)
    assert (tb.truncated, tb.cut_tokens) == (1, 3)


def test_chunks_follow_index_windows():
    got = [[t.index for t in c] for c in chunks([T(i, "x") for i in (0, 1, 2, 5, 6, 8, 12)], 3)]
    assert got == [[0, 1, 2], [5], [6, 8], [12]]


@pytest.mark.parametrize("tok, want", [(".", True), ("##,", True), ("Ġ!", True), ("’", True), ("...", True),
                                       ("a", False), ("'s", False), ("$", False), ("##", False), ("[SEP]", False)])
def test_is_punctuation(tok, want):
    assert is_punctuation(tok) is want


def _byte_spelling(text: str) -> str:
    """How a byte-level BPE vocabulary spells ``text``: transformers' GPT-2 byte table."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode
    table = bytes_to_unicode()
    return "".join(table[b] for b in text.encode("utf-8"))


@pytest.mark.parametrize("text, want", [(" —", True), ("。", True), ("、", True), (" «", True), ("…", True),
                                        ("”)", True), ("·", True), (" !", True), (" a", False), ("é", False),
                                        ("—a", False)])
def test_byte_level_pieces_are_read_as_the_text_they_spell(text, want):
    assert is_punctuation(_byte_spelling(text), byte_level=True) is want, (text, _byte_spelling(text))


@pytest.mark.parametrize("data", [b"\xb7", b"\xbf", b"\xa1", b"\xe2\x80"])
def test_byte_level_piece_that_is_part_of_a_character_is_not_punctuation(data):
    from transformers.convert_slow_tokenizer import bytes_to_unicode
    table = bytes_to_unicode()
    assert not is_punctuation("".join(table[b] for b in data), byte_level=True)


def test_byte_level_punctuation_of_a_real_vocabulary():
    """SmolLM2's byte-level vocabulary: a token is punctuation when the text its bytes spell is
    (read with transformers' byte decoder), e.g. ``—`` « » 。 and not the lone byte ``·``."""
    import unicodedata

    from transformers.convert_slow_tokenizer import bytes_to_unicode

    from attnscope.models.gguf_tokenizer import tokenizer_from_gguf
    from attnscope.models.packages import package_model_path

    tok = tokenizer_from_gguf(package_model_path("smollm2-135m"))
    enc = TextEncoder(tok, 64)
    back = {c: b for b, c in bytes_to_unicode().items()}
    specials = {i for i, t in tok.backend.get_added_tokens_decoder().items() if t.special}
    wrong = []
    for piece, i in tok.backend.get_vocab().items():
        try:
            s = bytes(back[c] for c in piece).decode("utf-8").lstrip(" \n")
        except (KeyError, UnicodeDecodeError):
            s = ""
        want = i not in specials and bool(s) and all(unicodedata.category(c).startswith("P") for c in s)
        if bool(enc.punct_table[i]) != want:
            wrong.append(piece)
    assert wrong == []
    e = enc.encode([T(0, "Il dit — « oui » … 。")])
    tb = enc.pad(e)
    got = [tok.backend.decode([int(i)]) for i in tb.input_ids[0][tb.kinds["punct"][0]]]
    assert [g.strip() for g in got] == ["—", "«", "»", "…", "。"], tb.tokens[0]
