"""Streaming a text corpus: files, folders, gzip, decode errors, and a built-in English corpus.

A corpus is

* a text file (``.gz`` is decompressed on the fly): by default one text per non-empty line;
* a folder: every ``*.txt`` and ``*.txt.gz`` file under it (recursively, sorted by path), each
  read as above;
* ``builtin:python-docs``: the English prose of the Python Language Reference that ships with
  CPython itself (``pydoc_data/topics.py``, the text behind ``help("if")``), see
  :func:`python_docs_paragraphs`.

``unit`` says what one text is: ``line`` (default), ``paragraph`` (blocks separated by blank
lines, their lines joined by spaces) or ``file``.

Texts are numbered 0, 1, 2, ... in reading order (empty ones are skipped before numbering, from
the raw bytes, so the numbering does not depend on decoding). A reader can be told which numbers
it *owns* (``owner(index) -> bool``): it decodes and yields only those. This is how processes of a
distributed run share a corpus without each decoding all of it.

Bytes that are not UTF-8 are reported with file and line: with ``on_decode_error="stop"``
(default) as an :class:`~attnscope.errors.InputError`, with ``"skip"`` by skipping that line
and counting it in :class:`CorpusLog` (the report lists the first ones). Nothing is dropped
without a count.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import zlib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator, Optional, Union

from ..errors import InputError
from ..i18n import Msg, error

UNITS = ("line", "paragraph", "file")
DECODE_POLICIES = ("stop", "skip")
BUILTIN_PREFIX = "builtin:"
BUILTINS = ("python-docs",)
#: How many problem locations a log keeps verbatim (all are counted).
MAX_EXAMPLES = 100


@dataclass
class Text:
    """One text of the corpus: its number in reading order, its content, and where it came from."""

    index: int
    text: str
    where: str  # "file:line" (first line of a paragraph), or "builtin:python-docs:<topic>#<k>"


@dataclass
class CorpusLog:
    """What reading skipped, counted (summed over processes by the pipeline)."""

    skipped_decode: int = 0                       # lines not valid UTF-8, skipped
    decode_examples: list = field(default_factory=list)  # "file:line: byte 0x.. at column k"
    empty: int = 0          # empty units (blank lines, empty files): seen by every process alike
    blank_owned: int = 0    # owned texts that decoded to nothing but Unicode spaces
    files: int = 0                                # files read

    def note_decode(self, where: str, err: UnicodeDecodeError) -> None:
        self.skipped_decode += 1
        if len(self.decode_examples) < MAX_EXAMPLES:
            self.decode_examples.append(f"{where}: {describe_decode_error(err)}")


def describe_decode_error(err: UnicodeDecodeError) -> str:
    bad = err.object[err.start:err.end]
    return f"byte{'s' if len(bad) > 1 else ''} {bad.hex(' ')} at byte {err.start} is not valid {err.encoding}"


def _open_bytes(path: Path) -> io.BufferedIOBase:
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    return open(path, "rb")


def corpus_files(source: Union[str, Path]) -> list[Path]:
    """The files of a corpus path (a file, or the *.txt / *.txt.gz under a folder), checked readable."""
    path = Path(source)
    if not path.exists():
        raise error(InputError, "errors.no_corpus", source=repr(str(source)),
                    builtins=", ".join(BUILTIN_PREFIX + b for b in BUILTINS))
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and (p.name.endswith(".txt") or p.name.endswith(".txt.gz")))
        if not files:
            raise error(InputError, "errors.corpus_no_txt", path=repr(str(path)))
    else:
        files = [path]
    for f in files:
        if not os.access(f, os.R_OK):
            raise error(InputError, "errors.corpus_unreadable", path=repr(str(f)))
    return files


def example_order(source: Union[str, Path]) -> Callable[[str], tuple]:
    """A sort key that puts decode examples (``"file:line: …"``, :meth:`CorpusLog.note_decode`) of
    several processes back in reading order: the files in the order a reader reads them, then the
    line number (a plain string sort puts line 10 before line 9)."""
    files = {} if str(source).startswith(BUILTIN_PREFIX) else {str(f): k for k, f in enumerate(corpus_files(source))}

    def key(example: str) -> tuple:
        m = re.match(r"(.*):(\d+): ", example)
        if m is None or m.group(1) not in files:
            return (len(files), 0, example)
        return (files[m.group(1)], int(m.group(2)), "")
    return key


def _no_bom(data: bytes) -> bytes:
    """A file's first bytes without the UTF-8 byte order mark that Windows editors write (it is
    not text: kept, it would become tokens of the first text)."""
    return data[3:] if data.startswith(b"\xef\xbb\xbf") else data


class CorpusReader:
    """Iterate the texts of a corpus, streaming (one line in memory at a time for ``line``).

    Args:
        source: a file, a folder, or ``builtin:python-docs``.
        unit: "line", "paragraph" or "file".
        on_decode_error: "stop" (InputError naming file and line) or "skip" (count and go on).
        owner: ``owner(index) -> bool``; only owned texts are decoded and yielded.
        max_texts: read at most this many (non-empty) texts.
    """

    def __init__(self, source: Union[str, Path], *, unit: str = "line", on_decode_error: str = "stop",
                 owner: Optional[Callable[[int], bool]] = None, max_texts: Optional[int] = None) -> None:
        if not isinstance(source, (str, os.PathLike)):  # a list of texts, None: not a corpus
            raise error(InputError, "errors.analysis_corpus_type", got=type(source).__name__,
                        builtins=", ".join(BUILTIN_PREFIX + b for b in BUILTINS))
        if unit not in UNITS:
            raise error(InputError, "errors.analysis_unit", units=", ".join(UNITS), value=repr(unit))
        if on_decode_error not in DECODE_POLICIES:
            raise error(InputError, "errors.analysis_on_decode_error", value=repr(on_decode_error))
        if max_texts is not None and max_texts <= 0:
            raise error(InputError, "errors.analysis_max_texts", value=max_texts)
        self.source = str(source)
        self.unit, self.on_decode_error = unit, on_decode_error
        self.owner = owner or (lambda i: True)
        self.max_texts = max_texts
        self.builtin = self.source.startswith(BUILTIN_PREFIX)
        if self.builtin:
            name = self.source[len(BUILTIN_PREFIX):]
            if name not in BUILTINS:
                raise error(InputError, "errors.unknown_builtin_corpus", source=repr(self.source),
                            builtins=", ".join(BUILTIN_PREFIX + b for b in BUILTINS))
            self.files: list[Path] = []
        else:
            self.files = corpus_files(source)
        self.log = CorpusLog()

    # ------------------------------------------------------------------------------------------
    def _raw_units(self) -> Iterator[tuple[list[tuple[int, bytes]], Path]]:
        """Yield each unit as its raw lines [(line number, bytes)], empty units included."""
        for path in self.files:
            try:
                with _open_bytes(path) as f:
                    if self.unit == "file":
                        yield list(enumerate(_no_bom(f.read()).splitlines(), start=1)), path
                        continue
                    block: list[tuple[int, bytes]] = []
                    for n, line in enumerate(f, start=1):
                        line = _no_bom(line) if n == 1 else line
                        if self.unit == "line":
                            yield [(n, line)], path
                        elif line.strip():
                            block.append((n, line))
                        elif block:
                            yield block, path
                            block = []
                    if block:
                        yield block, path
            except (OSError, EOFError, zlib.error) as e:  # gzip.BadGzipFile is an OSError
                raise error(InputError, "errors.analysis_corpus_unreadable", path=repr(str(path)),
                            kind=type(e).__name__, why=e) from None

    def _decode(self, lines: list[tuple[int, bytes]], path: Path) -> tuple[str, int]:
        """(text, number of lines skipped as undecodable); text may be "" (nothing left)."""
        parts, skipped = [], 0
        for n, raw in lines:
            try:
                parts.append(raw.decode("utf-8").strip())
            except UnicodeDecodeError as e:
                where = f"{path}:{n}"
                if self.on_decode_error == "stop":  # in the error's language (the report's decode_line), not English
                    bad = e.object[e.start:e.end]
                    problem = Msg("analysis.decode_line", where=where, pos=e.start, encoding=e.encoding,
                                  bytes=Msg("analysis.bytes" if len(bad) > 1 else "analysis.byte", hex=bad.hex(" ")))
                    raise error(InputError, "errors.corpus_decode", problem=problem, column=e.start + 1) from None
                self.log.note_decode(where, e)
                skipped += 1
        return " ".join(p for p in parts if p), skipped

    def __iter__(self) -> Iterator[Text]:
        if self.builtin:
            yield from self._iter_builtin()
            return
        index = 0
        self.log.files = len(self.files)
        for lines, path in self._raw_units():
            if self.max_texts is not None and index >= self.max_texts:
                return
            if not any(raw.strip() for _, raw in lines):
                self.log.empty += 1
                continue
            i, index = index, index + 1  # numbered from the raw bytes: the same in every process
            if not self.owner(i):
                continue
            text, skipped = self._decode(lines, path)
            if not text:  # every line was undecodable (counted as skipped) or only Unicode spaces
                self.log.blank_owned += 0 if skipped else 1
                continue
            yield Text(i, text, f"{path}:{lines[0][0]}")

    def _iter_builtin(self) -> Iterator[Text]:
        for i, (where, text) in enumerate(python_docs_paragraphs()):
            if self.max_texts is not None and i >= self.max_texts:
                return
            if self.owner(i):
                yield Text(i, text, where)

    def count(self) -> int:
        """How many texts the corpus holds (within ``max_texts``), from the raw bytes, without decoding."""
        if self.builtin:
            n = len(python_docs_paragraphs())
        else:
            n = sum(1 for lines, _ in self._raw_units() if any(raw.strip() for _, raw in lines))
        return n if self.max_texts is None else min(n, self.max_texts)


# ----------------------------------------------------------------------------------------------
# the built-in corpus
# ----------------------------------------------------------------------------------------------

def _is_prose(s: str) -> bool:
    """A paragraph of running English text, not code, grammar, a table or a heading."""
    if len(s.split()) < 8 or "::=" in s or ">>>" in s or s.startswith(("*", "+", "|", "=")):
        return False
    letters = sum(c.isalpha() or c == " " for c in s) / len(s)
    return letters > 0.8 and s[-1] in ".:;)\"'"


@lru_cache(maxsize=1)  # made once per process; every caller shares the list
def python_docs_paragraphs() -> list[tuple[str, str]]:
    """``[(where, paragraph)]``: the prose paragraphs of CPython's ``pydoc_data.topics``.

    ``pydoc_data/topics.py`` ships with every CPython (it is what ``help("if")`` prints): the
    Python Language Reference and Library chapters as plain text. Its paragraphs (blank-line
    separated, wrapped lines joined) that read as English prose are kept (see ``_is_prose``:
    ≥ 8 words, ≥ 80 % letters and spaces, ending like a sentence, no grammar rules or examples):
    about 1,300 paragraphs, 48,000 words on Python 3.11, in topic order.
    """
    try:
        from pydoc_data.topics import topics
    except ImportError:
        raise error(InputError, "errors.analysis_no_pydoc_data") from None
    out = []
    for name, text in topics.items():
        block: list[str] = []
        k = 0
        for line in text.splitlines() + [""]:
            if line.strip():
                block.append(line.strip())
                continue
            if block:
                s = " ".join(block)
                if _is_prose(s):
                    out.append((f"{BUILTIN_PREFIX}python-docs:{name}#{k}", s))
                k += 1
                block = []
    return out
