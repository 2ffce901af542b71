"""Tokenizing a stream of texts into length-bucketed, right-padded batches with token kinds.

Texts arrive in chunks (``chunk_size`` texts, the bucketing window). Each chunk is tokenized,
sorted by length and cut into batches of ``batch_size`` texts, so that a batch holds texts of
similar length and little compute is spent on padding. Every batch is padded to its own longest
text; ``attention_mask`` is 1 on real tokens. Batches depend only on the chunk, never on which
process runs it, which makes a distributed run see exactly the batches of a single-process run.

Texts longer than ``max_length`` tokens are truncated (the special tokens that close a text are
kept, as the tokenizer's truncation keeps them) and counted.
"""

from __future__ import annotations

import itertools
import unicodedata
from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

import torch

from ..errors import InputError
from ..i18n import error
from ..pieces import piece_bytes
from .corpus import Text

Tensor = torch.Tensor


@dataclass
class Encoded:
    """One tokenized text."""

    index: int                 # the text's number in the corpus
    ids: list[int]
    tokens: list[str]
    special: list[int]         # 1 where the tokenizer added a special token
    cut: int = 0               # tokens removed by truncation


@dataclass
class TokenBatch:
    """A padded batch: ``input_ids`` and ``attention_mask`` (B, L), token kinds (B, L) bool."""

    input_ids: Tensor
    attention_mask: Tensor
    kinds: dict[str, Tensor]
    tokens: list[list[str]]
    indices: list[int]
    truncated: int = 0         # texts of this batch that were truncated
    cut_tokens: int = 0        # tokens they lost

    @property
    def n_tokens(self) -> int:
        return int(self.attention_mask.sum())

    def __len__(self) -> int:
        return len(self.indices)


def _surface(token: str) -> str:
    """A vocabulary entry without its word-piece markers (WordPiece ``##``, byte-level ``Ġ``, ``▁``)."""
    if token.startswith("##"):
        token = token[2:]
    return token.lstrip("Ġ▁Ċ")


def is_punctuation(token: str, byte_level: bool = False) -> bool:
    """True for a token made only of Unicode punctuation (categories P*): ``.`` ``,`` ``"`` ``'s`` is not.

    ``byte_level``: ``token`` is a byte-level BPE piece (GPT-2, SmolLM2, BART), whose characters
    stand for bytes: it is read as the text its bytes spell (``âĢĶ`` is ``—``, punctuation), and a
    piece that is not whole UTF-8 characters (``·`` alone is the byte 0xB7, part of a character)
    is not punctuation."""
    if byte_level:
        data = piece_bytes(token)
        if data is not None:
            try:
                token = data.decode("utf-8").lstrip(" \n")
            except UnicodeDecodeError:
                return False
            return bool(token) and all(unicodedata.category(c).startswith("P") for c in token)
    s = _surface(token)
    return bool(s) and all(unicodedata.category(c).startswith("P") for c in s)


class TextEncoder:
    """Token ids, token kinds and truncation for a model's :class:`attnscope.tokenizer.Tokenizer`.

    Args:
        tokenizer: the model's tokenizer (its ``backend`` is a ``tokenizers.Tokenizer``).
        max_length: longest sequence kept, special tokens included (≤ the model's positions).
    """

    def __init__(self, tokenizer, max_length: int) -> None:
        backend = getattr(tokenizer, "backend", None)
        if backend is None:
            raise error(InputError, "errors.analysis_no_tokenizer")
        if max_length < 2:
            raise error(InputError, "errors.analysis_max_length", value=max_length)
        cls = type(backend)
        # Two private copies: one never truncates (to measure), one truncates at max_length.
        self.full = cls.from_str(backend.to_str())
        self.full.no_padding()
        self.full.no_truncation()
        self.cut = cls.from_str(backend.to_str())
        self.cut.no_padding()
        self.cut.enable_truncation(max_length)
        self.max_length = max_length
        self.pad_id = int(tokenizer.pad_token_id)
        vocab = backend.get_vocab(with_added_tokens=True)
        specials = {i for i, t in backend.get_added_tokens_decoder().items() if t.special}
        byte_level = type(backend.decoder).__name__ == "ByteLevel"  # as Tokenizer.byte_level
        table = torch.zeros(max(vocab.values()) + 1, dtype=torch.bool)
        for tok, i in vocab.items():
            if i not in specials and is_punctuation(tok, byte_level):
                table[i] = True
        self.punct_table = table  # (V,) bool: id -> is punctuation

    def encode(self, texts: Sequence[Text]) -> list[Encoded]:
        """Tokenize texts; texts that give no tokens at all are dropped (the caller counts them)."""
        encs = self.full.encode_batch([t.text for t in texts])
        out = []
        for t, e in zip(texts, encs):
            cut = 0
            if len(e.ids) > self.max_length:
                n = len(e.ids)
                e = self.cut.encode(t.text)
                cut = n - len(e.ids)
            if e.ids:
                out.append(Encoded(t.index, list(e.ids), list(e.tokens), list(e.special_tokens_mask), cut))
        return out

    def pad(self, items: Sequence[Encoded]) -> TokenBatch:
        """One right-padded batch, with the kinds ``cls`` (special token at position 0), ``sep``
        (special token at the last real position), ``special`` and ``punct``."""
        B, L = len(items), max(len(e.ids) for e in items)
        ids = torch.full((B, L), self.pad_id, dtype=torch.long)
        mask = torch.zeros(B, L, dtype=torch.long)
        special = torch.zeros(B, L, dtype=torch.bool)
        cls = torch.zeros(B, L, dtype=torch.bool)
        sep = torch.zeros(B, L, dtype=torch.bool)
        for b, e in enumerate(items):
            n = len(e.ids)
            ids[b, :n] = torch.tensor(e.ids)
            mask[b, :n] = 1
            special[b, :n] = torch.tensor(e.special, dtype=torch.bool)
            cls[b, 0] = e.special[0] == 1
            sep[b, n - 1] = e.special[-1] == 1 and n > 1
        punct = self.punct_table[ids.clamp(max=len(self.punct_table) - 1)] & mask.bool() & ~special  # (B, L)
        kinds = {"cls": cls, "sep": sep, "punct": punct, "special": special}
        return TokenBatch(ids, mask, kinds, [e.tokens for e in items], [e.index for e in items],
                          truncated=sum(e.cut > 0 for e in items), cut_tokens=sum(e.cut for e in items))


def chunks(texts: Iterable[Text], size: int) -> Iterator[list[Text]]:
    """Consecutive groups of texts whose corpus numbers fall in the same window of ``size``.

    Grouping is by ``index // size`` (not by count), so a process that owns only some windows
    forms exactly the groups a single process forms.
    """
    for _, group in itertools.groupby(texts, key=lambda t: t.index // size):
        yield list(group)


def bucket(items: Sequence[Encoded], batch_size: int) -> list[list[Encoded]]:
    """Sort a chunk by length (ties by corpus number) and cut it into batches of ``batch_size``."""
    order = sorted(items, key=lambda e: (len(e.ids), e.index))
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
