"""Token labels for people: the characters a byte-level piece forms, and where a character spans pieces.

Byte-level BPE tokenizers (GPT-2, RoBERTa, SmolLM2, Qwen2) spell each byte of the UTF-8 text as one
printable stand-in character: ``Ġcat`` is the bytes `` cat``, and ``å`` is the single byte 0xE5.
A Chinese character is three bytes, and such a vocabulary often cuts it into several pieces; SmolLM2
reads ``我喜欢人工智能`` as 15 pieces::

    piece   æĪ  ĳ  å  ĸ  ľ  æ  ¬  ¢  äºº  å·  ¥  æ  Ļ  º  èĥ½
    bytes   e688 91 e5 96 9c e6 ac a2 e4baba e5b7 a5 e6 99 ba e883bd
    label   …   我  …  …  喜  …  …  欢  人    …    工  …  …  智  能

**The convention.** A piece's label is the text of the characters whose *last* byte it holds: a
character is shown once, on the piece that completes it. A piece that also holds (or only holds)
the first bytes of a character that a later piece completes ends with :data:`CONTINUED` (``…``).
So ``喜`` (bytes e5 96 9c) is the label of position 4, and positions 2–3 show ``…``; its span is
positions 2–4 (:func:`char_spans`). The last piece is where a causal model has read the whole
character, which is why ``--token 喜`` picks that row. Bytes that are not UTF-8 at all (a text
cut in the middle of a character) show as hex, ``‹e6›``. Special tokens (``<|endoftext|>``) and
the pieces of other tokenizers (WordPiece ``##ing``, SentencePiece ``▁cat``) are their own label.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Callable, Collection, Optional, Sequence

#: Ends the label of a piece holding the first bytes of a character that a later piece completes.
CONTINUED = "…"


@lru_cache(maxsize=1)
def byte_decoder() -> dict[str, int]:
    """GPT-2's printable stand-in character for each byte, inverted (character → byte)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    chars, n = printable[:], 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + n)  # bytes without a printable form get characters from U+0100 on
            n += 1
    return {chr(c): b for b, c in zip(printable, chars)}


@dataclass(frozen=True)
class CharSpan:
    """One character of the text and the pieces that hold its bytes: positions ``first..last``."""

    char: str
    first: int
    last: int
    data: bytes

    @property
    def positions(self) -> list[int]:
        return list(range(self.first, self.last + 1))


@dataclass(frozen=True)
class Pieces:
    """The labels of one text's pieces and, for byte-level pieces, every character's span.

    Attributes:
        tokens: the tokenizer's own strings (``Ġcat``), one per position.
        labels: what a person reads at each position (`` cat``; see the module doc).
        chars: the characters formed by byte-level pieces, in order, with their positions
            (empty for other tokenizers).
        normal: the tokenizer's normaliser (text → the text its pieces spell: multilingual-e5's
            full-width ，？Ａ → ,?A), so that :func:`find` finds a token as it is typed in the text;
            None when unknown.
    """

    tokens: tuple[str, ...]
    labels: tuple[str, ...]
    chars: tuple[CharSpan, ...] = ()
    normal: Optional[Callable[[str], str]] = field(default=None, compare=False, repr=False)

    def spans_of(self, text: str) -> list[tuple[int, int]]:
        """``[(first, last)]`` positions of every occurrence of ``text`` (one or more whole characters)
        in the characters of the pieces; empty when it is not there."""
        if not text or not self.chars:
            return []
        seq = [c.char for c in self.chars]
        want = list(text)
        n = len(want)
        return [(self.chars[i].first, self.chars[i + n - 1].last)
                for i in range(len(seq) - n + 1) if seq[i:i + n] == want]


def piece_bytes(token: str) -> Optional[bytes]:
    """The bytes a byte-level piece spells, or None when ``token`` is not made of stand-in characters."""
    table = byte_decoder()
    if not token or any(ch not in table for ch in token):
        return None
    return bytes(table[ch] for ch in token)


def _utf8_length(lead: int) -> int:
    if lead < 0x80:
        return 1
    if 0xC2 <= lead <= 0xDF:
        return 2
    if 0xE0 <= lead <= 0xEF:
        return 3
    if 0xF0 <= lead <= 0xF4:
        return 4
    return 0  # a continuation byte or an invalid lead


def byte_level_pieces(tokens: Sequence[str], specials: Collection[str] = ()) -> Pieces:
    """:class:`Pieces` of byte-level BPE tokens (``specials`` are kept as they are)."""
    labels: list[list[str]] = [[] for _ in tokens]
    open_at = [False] * len(tokens)
    chars: list[CharSpan] = []
    owner: list[int] = []  # the position of each byte of the current run of byte pieces
    data = bytearray()

    def flush() -> None:
        i = 0
        while i < len(data):
            n = _utf8_length(data[i])
            chunk = bytes(data[i:i + n]) if n else b""
            try:
                ch = chunk.decode("utf-8") if n and len(chunk) == n else None
            except UnicodeDecodeError:
                ch = None
            if ch is None:  # not UTF-8: this byte alone, as hex, on its own piece
                labels[owner[i]].append(f"‹{data[i]:02x}›")
                i += 1
                continue
            first, last = owner[i], owner[i + n - 1]
            labels[last].append(ch)
            for p in range(first, last):
                open_at[p] = True
            chars.append(CharSpan(ch, first, last, chunk))
            i += n
        data.clear()
        owner.clear()

    for pos, tok in enumerate(tokens):
        b = None if tok in specials else piece_bytes(tok)
        if b is None:
            flush()
            labels[pos].append(tok)
            continue
        data.extend(b)
        owner.extend([pos] * len(b))
    flush()
    out = ["".join(parts) + (CONTINUED if open_at[p] else "") for p, parts in enumerate(labels)]
    return Pieces(tuple(tokens), tuple(out), tuple(chars))


def pieces_of(tokens: Sequence[str], tokenizer=None) -> Pieces:
    """:class:`Pieces` of ``tokens`` as ``tokenizer`` (an attnscope :class:`~attnscope.tokenizer.Tokenizer`)
    made them: decoded for byte-level BPE, unchanged otherwise (or with no tokenizer)."""
    tokens = [str(t) for t in tokens]
    if tokenizer is None or not getattr(tokenizer, "byte_level", False):
        return Pieces(tuple(tokens), tuple(tokens), normal=getattr(tokenizer, "normalize", None))
    return replace(byte_level_pieces(tokens, tokenizer.special_tokens()), normal=tokenizer.normalize)


def labels_of(tokens: Sequence[str], tokenizer=None) -> list[str]:
    """The labels of :func:`pieces_of`: what every display of tokens shows."""
    return list(pieces_of(tokens, tokenizer).labels)


#: SentencePiece's word mark: ``▁the`` is the word `` the`` (T5, mT5, XLM-R, Gemma).
WORD_MARK = "▁"


def metaspace_labels(tokens: Sequence[str], specials: Collection[str] = ()) -> list[str]:
    """SentencePiece pieces as the text they stand for: the word mark shown as the space it marks
    (``▁the`` → `` the``, ``▁`` alone → `` ``); special tokens (``</s>``) as they are."""
    return [t if t in specials else t.replace(WORD_MARK, " ") for t in (str(x) for x in tokens)]


def is_metaspace(tokenizer) -> bool:
    """Whether ``tokenizer``'s pieces are SentencePiece's, the word mark ``▁`` for a space (a
    ``Metaspace`` decoder: T5, mT5, XLM-R, DeBERTa-v3)."""
    backend = getattr(tokenizer, "backend", None)
    return backend is not None and type(getattr(backend, "decoder", None)).__name__ == "Metaspace"


def word_pieces(tokens: Sequence[str], tokenizer=None) -> Pieces:
    """:class:`Pieces` whose labels read as text for both kinds of subword pieces with a space mark:
    byte-level BPE as :func:`pieces_of` (``Ġthe`` → `` the``, with every character's span),
    SentencePiece as :func:`metaspace_labels` (``▁the`` → `` the``); other tokens unchanged."""
    if is_metaspace(tokenizer):
        tokens = [str(t) for t in tokens]
        return Pieces(tuple(tokens), tuple(metaspace_labels(tokens, tokenizer.special_tokens())),
                      normal=getattr(tokenizer, "normalize", None))
    return pieces_of(tokens, tokenizer)


def word_labels(tokens: Sequence[str], tokenizer=None) -> list[str]:
    """The labels of :func:`word_pieces`. The encoder–decoder viewer and explain's encoder–decoder
    rows and paths show these (T5 and BART rows then read like the other families' byte-level rows)."""
    return list(word_pieces(tokens, tokenizer).labels)


def _bare(tok: str) -> str:
    """A token without its word-piece marks (##ing → ing, Ġword → word), lower case."""
    for mark in ("##", "Ġ", "▁", "Ċ"):
        if tok.startswith(mark) and len(tok) > len(mark):
            tok = tok[len(mark):]
    return tok.lower()


@dataclass(frozen=True)
class Match:
    """Where a token argument is: every occurrence as a ``(first, last)`` span of positions, and
    whether it matched whole pieces (``spans`` of one position each) or characters across pieces."""

    spans: tuple[tuple[int, int], ...]
    by_chars: bool = False


def find(pieces: Pieces, token: str) -> Match:
    """Where ``token`` is among ``pieces``: a piece's own string (``Ġcat``), its label (`` cat``, and
    ``cat`` with the spaces stripped), the same without word-piece marks, case-insensitive; else one
    or more whole characters formed by several byte pieces (``喜``, ``喜欢``). Empty when nowhere.

    A piece whose label completes a character begun in earlier pieces matches as that character's
    whole span (``我`` of SmolLM2 is positions 0–1), and then ``by_chars`` is True.

    A token found nowhere is looked for once more as the tokenizer normalises it (``pieces.normal``):
    multilingual-e5 reads the text's full-width ``，`` as the piece ``,``, and ``，`` is what the
    user sees in the text and types."""
    toks, labels = pieces.tokens, pieces.labels
    want = token.strip()
    tests = [lambda i: toks[i] == token, lambda i: labels[i] == token,
             lambda i: labels[i].strip() == want != "",
             lambda i: _bare(toks[i]) == _bare(token) or labels[i].strip().lower() == want.lower() != ""]
    for test in tests:
        hits = [i for i in range(len(toks)) if test(i)]
        if hits:
            found = tuple((min([c.first for c in pieces.chars if c.last == i] + [i]), i) for i in hits)
            return Match(found, by_chars=any(a < b for a, b in found))
    spans = [s for s in pieces.spans_of(want) if s[0] < s[1]]  # one piece would have matched above
    if spans:
        return Match(tuple(spans), by_chars=True)
    normal = pieces.normal(token).strip() if pieces.normal is not None else want
    return find(replace(pieces, normal=None), normal) if normal not in ("", want) else Match(())
