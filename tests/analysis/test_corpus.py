"""Reading corpora: units, folders, gzip, empty lines, ownership, decode errors, bad paths."""

import gzip
import tracemalloc

import pytest

from attnscope.analysis.corpus import CorpusReader, python_docs_paragraphs
from attnscope.errors import InputError


def texts(reader):
    return [(t.index, t.text) for t in reader]


def test_lines_skip_blank_lines_and_count_them(tmp_path):
    f = tmp_path / "c.txt"
    f.write_text("first line\n\n  second  \n\t\nthird\n", encoding="utf-8")
    r = CorpusReader(f)
    assert texts(r) == [(0, "first line"), (1, "second"), (2, "third")]
    assert r.log.empty == 2 and r.count() == 3
    assert [t.where for t in CorpusReader(f)] == [f"{f}:1", f"{f}:3", f"{f}:5"]


def test_paragraph_and_file_units(tmp_path):
    f = tmp_path / "c.txt"
    f.write_text("one\ntwo\n\nthree\n\n\nfour\nfive", encoding="utf-8")
    assert texts(CorpusReader(f, unit="paragraph")) == [(0, "one two"), (1, "three"), (2, "four five")]
    assert texts(CorpusReader(f, unit="file")) == [(0, "one two three four five")]


def test_folder_recursive_sorted_with_gzip(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "a.txt").write_text("from a\n", encoding="utf-8")
    with gzip.open(tmp_path / "b" / "c.txt.gz", "wt", encoding="utf-8") as g:
        g.write("from c, gzipped\nand more\n")
    (tmp_path / "notes.md").write_text("not a corpus file\n", encoding="utf-8")
    r = CorpusReader(tmp_path)
    assert texts(r) == [(0, "from a"), (1, "from c, gzipped"), (2, "and more")]
    assert r.log.files == 2


def test_owner_and_max_texts_number_from_raw_lines(tmp_path):
    f = tmp_path / "c.txt"
    f.write_bytes(b"a\n\nb\n\xff bad\nc\nd\n")
    # index 2 is the undecodable line: a process that does not own it never decodes it
    r = CorpusReader(f, owner=lambda i: i % 2 == 1, max_texts=5)
    assert texts(r) == [(1, "b"), (3, "c")]
    assert texts(CorpusReader(f, owner=lambda i: i >= 3)) == [(3, "c"), (4, "d")]
    assert CorpusReader(f, max_texts=2).count() == 2


def test_decode_error_stop_names_file_line_and_byte(tmp_path):
    f = tmp_path / "c.txt"
    f.write_bytes(b"good\nal\xe9 bad latin-1\nalso good\n")
    with pytest.raises(InputError, match=rf"{f}:2: byte e9 at byte 2 is not valid utf-8 \(column 3\).*--on-decode-error skip"):
        list(CorpusReader(f))


def test_decode_error_skip_counts_and_lists(tmp_path):
    f = tmp_path / "c.txt"
    f.write_bytes(b"good\nal\xe9 bad\nalso good\n\xc3\x28\n")
    r = CorpusReader(f, on_decode_error="skip")
    assert texts(r) == [(0, "good"), (2, "also good")]
    assert r.log.skipped_decode == 2
    assert r.log.decode_examples == [f"{f}:2: byte e9 at byte 2 is not valid utf-8",
                                     f"{f}:4: byte c3 at byte 0 is not valid utf-8"]


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "missing.txt", "not found"),
    (lambda p: p, "has no .txt or .txt.gz files"),
])
def test_bad_paths(tmp_path, make, message):
    with pytest.raises(InputError, match=message):
        CorpusReader(make(tmp_path))


def test_corrupt_gzip(tmp_path):
    f = tmp_path / "c.txt.gz"
    f.write_bytes(b"this is not gzip data at all")
    with pytest.raises(InputError, match=r"cannot read corpus file .*c.txt.gz.*BadGzipFile"):
        list(CorpusReader(f))


def test_bad_options(tmp_path):
    f = tmp_path / "c.txt"
    f.write_text("x\n")
    with pytest.raises(InputError, match="unit must be one of line, paragraph, file"):
        CorpusReader(f, unit="sentence")
    with pytest.raises(InputError, match="on_decode_error must be 'stop' or 'skip'"):
        CorpusReader(f, on_decode_error="ignore")
    with pytest.raises(InputError, match="unknown built-in corpus 'builtin:wiki'"):
        CorpusReader("builtin:wiki")


def test_streaming_keeps_memory_flat(tmp_path):
    """Reading a 4 MB corpus line by line never holds more than a few kB of it."""
    f = tmp_path / "big.txt"
    line = "All work and no play makes Jack a dull boy. " * 2 + "\n"
    f.write_text(line * 45000, encoding="utf-8")
    assert f.stat().st_size > 4_000_000
    tracemalloc.start()
    n = sum(1 for _ in CorpusReader(f))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert n == 45000
    assert peak < 200_000


def test_builtin_python_docs_is_real_english():
    paras = python_docs_paragraphs()
    words = sum(len(p.split()) for _, p in paras)
    assert len(paras) > 1000 and words > 40000
    assert all(len(p.split()) >= 8 and "::=" not in p for _, p in paras)
    assert sum(p.count(" the ") for _, p in paras) > 1000  # English prose, not code
    r = CorpusReader("builtin:python-docs", max_texts=3)
    assert [t.index for t in r] == [0, 1, 2] and r.count() == 3


@pytest.mark.parametrize("unit, want", [("line", ["Hello world.", "Second line."]),
                                        ("file", ["Hello world. Second line."])])
def test_utf8_byte_order_mark_is_not_text(tmp_path, unit, want):
    """A file saved as "UTF-8 with BOM" (Windows editors): the mark is not part of the first text,
    which is read as Python's utf-8-sig codec reads it."""
    f = tmp_path / "c.txt"
    f.write_bytes("Hello world.\nSecond line.\n".encode("utf-8-sig"))
    assert [t.text for t in CorpusReader(f, unit=unit)] == want
    g = tmp_path / "bom_only.txt"
    g.write_bytes(b"\xef\xbb\xbf\nfirst\n")
    r = CorpusReader(g)
    assert texts(r) == [(0, "first")] and r.count() == 1 and r.log.empty == 1


@pytest.mark.parametrize("source", [["a text", "another"], None, 5])
def test_a_corpus_that_is_not_a_path_is_named(source):
    """A list of texts or None is not a corpus: one sentence, not a TypeError from pathlib."""
    with pytest.raises(InputError, match="corpus must be a path"):
        CorpusReader(source)
