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
