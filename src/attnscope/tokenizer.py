"""Text → token ids with the Hugging Face ``tokenizers`` library, padded into one batch.

A checkpoint folder carries its tokenizer either as ``tokenizer.json`` (everything in one file) or
as the older pieces: ``vocab.txt`` for BERT's WordPiece, ``vocab.json`` + ``merges.txt`` for the
byte-level BPE of GPT-2 and RoBERTa. :func:`load_tokenizer` builds the same pipeline from either,
so that ``我喜欢人工智能`` in a bert-base-chinese vocabulary becomes, as in the first article::

    tokens  [CLS] 我   喜   欢   人  工   智   能   [SEP]
    ids     101   2769 1599 3614 782 2339 3255 5543 102

A batch of texts is padded on the right to the longest text; ``attention_mask`` is 1 on real
tokens and 0 on padding. Text longer than the model's positions is an error unless the caller
asks for truncation.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence, Union

import torch

from .errors import InputError, ModelLoadError
from .i18n import Msg, error, word
from .pieces import Pieces, labels_of, pieces_of

Tensor = torch.Tensor


class TokenRows:
    """Per-text views of right-padded ``input_ids (B, L)`` with ``tokens`` (each text's token strings,
    no padding): shared by :class:`Batch` and :class:`attnscope.trace.Trace`."""

    input_ids: Tensor
    tokens: list[list[str]]

    @property
    def lengths(self) -> list[int]:
        """Number of real tokens of each text (positions ``[:n]`` of every row)."""
        return [len(t) for t in self.tokens]

    @property
    def ids(self) -> list[list[int]]:
        """Token ids of each text without padding (plain ints, e.g. ``[101, 2769, …]``)."""
        return [row[:n].tolist() for row, n in zip(self.input_ids, self.lengths)]


@dataclass
class Batch(TokenRows):
    """Token ids of several texts, right-padded to one length L.

    Attributes:
        input_ids: (B, L) int64; padded positions hold ``pad_token_id``.
        attention_mask: (B, L) int64; 1 = real token, 0 = padding.
        token_type_ids: (B, L) int64 segment ids (all 0 for single texts).
        tokens: per text, its token strings without padding (``[CLS] 我 … [SEP]``).
        texts: the input texts.
        labels: per text, its tokens as a person reads them (:mod:`attnscope.pieces`; byte-level
            pieces decoded: ``Ġcat`` → `` cat``); the tokens themselves when not given.
    """

    input_ids: Tensor
    attention_mask: Tensor
    token_type_ids: Tensor
    tokens: list[list[str]]
    texts: list[str]
    truncated: list[bool] = field(default_factory=list)
    labels: list[list[str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.labels:
            self.labels = [list(t) for t in self.tokens]

    def to(self, device) -> "Batch":
        return Batch(self.input_ids.to(device), self.attention_mask.to(device),
                     self.token_type_ids.to(device), self.tokens, self.texts, self.truncated, self.labels)

    def __len__(self) -> int:
        return len(self.texts)


class Tokenizer:
    """A ``tokenizers.Tokenizer`` plus what attnscope needs: padding id and a length limit.

    Args:
        backend: the ``tokenizers.Tokenizer`` (its own padding and truncation are switched off;
            padding is done here, truncation only on request).
        pad_token_id: id written into padded positions.
        max_length: the longest sequence (special tokens included) the model accepts.
        source: where the tokenizer came from, for messages.
    """

    def __init__(self, backend, *, pad_token_id: int, max_length: int, source: str = "") -> None:
        backend.no_padding()
        backend.no_truncation()
        self.backend = backend
        self.pad_token_id = int(pad_token_id)
        self.max_length = int(max_length)
        self.source = source
        #: (id, piece) shown as the piece, not as the text it covers (e5: :func:`unigram_unknown`); None: as given
        self.unknown: Optional[tuple[int, str]] = None

    @property
    def vocab_size(self) -> int:
        return self.backend.get_vocab_size(with_added_tokens=True)

    def token_to_id(self, token: str) -> Optional[int]:
        return self.backend.token_to_id(token)

    def id_to_token(self, i: int) -> Optional[str]:
        return self.backend.id_to_token(int(i))

    def decode(self, ids: Sequence[int]) -> str:
        return self.backend.decode([int(i) for i in ids])

    def normalize(self, text: str) -> str:
        """``text`` as the tokenizer's normaliser writes it before cutting it into pieces (unchanged
        where it has none): multilingual-e5's full-width ``，？Ａ`` become ``,?A``."""
        normalizer = self.backend.normalizer
        return normalizer.normalize_str(text) if normalizer is not None else text

    @property
    def byte_level(self) -> bool:
        """True for GPT-2/RoBERTa byte-level BPE, whose token strings spell bytes (``Ġ`` = space)."""
        return type(self.backend.decoder).__name__ == "ByteLevel"

    def readable(self, tokens: Sequence[str]) -> list[str]:
        """Token strings for people (:func:`attnscope.pieces.labels_of`): byte-level BPE pieces as the characters
        they form (``Ġcat`` → `` cat``; a character cut into pieces is shown on the piece that completes it, the
        earlier ones end with ``…``). WordPiece tokens (``[CLS]``, ``##ing``) are readable and stay as they are."""
        return labels_of(tokens, self)

    def pieces(self, tokens: Sequence[str]) -> Pieces:
        """:class:`attnscope.pieces.Pieces` of ``tokens``: labels and every character's span of positions."""
        return pieces_of(tokens, self)

    def special_tokens(self) -> set[str]:
        """The special tokens' strings (``<|endoftext|>``, ``[CLS]``), shown as they are."""
        return {t.content for t in self.backend.get_added_tokens_decoder().values() if t.special}

    def tokenize(self, text: str) -> list[str]:
        """Token strings of one text, special tokens included."""
        return self.encode(text).tokens[0]

    def encode(self, texts: Union[str, Sequence[str]], *, truncate: bool = False, max_length: Optional[int] = None) -> Batch:
        """Tokenize ``texts`` (a string or a list of strings) into one right-padded :class:`Batch`.

        ``max_length`` lowers the limit below the model's (default: the model's positions).
        Raises InputError for a non-string, an empty list, a text that gives no tokens but special
        ones (``"\u200b"`` → [CLS] [SEP]), or a text longer than the limit (unless ``truncate=True``,
        which keeps the first tokens up to the limit, the closing special tokens kept).
        """
        limit = self.max_length
        if max_length is not None:
            if isinstance(max_length, bool) or not isinstance(max_length, int) or not 1 <= max_length <= self.max_length:
                key = "errors.core_max_length" if self.max_length < sys.maxsize else "errors.core_max_length_any"  # ALiBi
                raise error(InputError, key, limit=self.max_length, value=repr(max_length))
            limit = max_length
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, (list, tuple)) or not texts:
            raise error(InputError, "errors.core_texts_type", value=repr(texts))
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise error(InputError, "errors.core_text_i_type", i=i, type=type(t).__name__)
            check_unicode(t, "the text" if len(texts) == 1 else f"texts[{i}]")
        encs = self.backend.encode_batch(list(texts))
        truncated = [False] * len(texts)
        too_long = [i for i, e in enumerate(encs) if len(e.ids) > limit]
        if too_long:
            if not truncate:
                i = too_long[0]
                if len(texts) == 1 and limit == self.max_length:  # the command line's case, in its language
                    raise error(InputError, "errors.text_too_long", n=len(encs[i].ids), limit=limit)
                more = Msg("errors.and_more", k=len(too_long) - 1) if len(too_long) > 1 else ""
                what = Msg("errors.limit_model" if limit == self.max_length else "errors.limit_max_length")
                which = Msg("errors.the_text") if len(texts) == 1 else Msg("errors.text_i", i=i)
                raise error(InputError, "errors.too_long_which", which=which, n=len(encs[i].ids), what=what,
                            limit=limit, more=more)
            self.backend.enable_truncation(limit)
            try:
                for i in too_long:
                    encs[i] = self.backend.encode(texts[i])
                    truncated[i] = True
            finally:
                self.backend.no_truncation()
            if any(len(encs[i].ids) > limit for i in too_long):  # the limit is below the added special tokens
                added = [t for t, s in zip(encs[too_long[0]].tokens, encs[too_long[0]].special_tokens_mask) if s]
                raise error(InputError, "errors.core_max_length_specials", value=limit, n=len(added), tokens=" ".join(added))
        for i, e in enumerate(encs):
            if not e.ids or (all(e.special_tokens_mask) and texts[i] and not truncated[i]):  # "\u200b"
                which = Msg("errors.the_text") if len(texts) == 1 else Msg("errors.text_i", i=i)
                key = "errors.only_special_tokens" if e.ids else "errors.no_tokens"
                raise error(InputError, key, which=which, text=repr(texts[i]), tokens=" ".join(e.tokens))
        L, B = max(len(e.ids) for e in encs), len(encs)
        input_ids = torch.full((B, L), self.pad_token_id, dtype=torch.long)
        mask = torch.zeros((B, L), dtype=torch.long)
        types = torch.zeros((B, L), dtype=torch.long)
        for b, e in enumerate(encs):
            n = len(e.ids)
            input_ids[b, :n] = torch.tensor(e.ids, dtype=torch.long)
            mask[b, :n] = 1
            types[b, :n] = torch.tensor(e.type_ids, dtype=torch.long)
        tokens = [self.vocabulary_tokens(e) for e in encs]
        return Batch(input_ids, mask, types, tokens, list(texts), truncated, [self.readable(t) for t in tokens])

    def vocabulary_tokens(self, encoding) -> list[str]:
        """An Encoding's token strings as the vocabulary spells its ids: ``<unk>`` for a unigram
        model's unknown piece, where ``tokenizers`` gives the text it covers (``𠀀𪚥``, e5's id 3)."""
        unk_id, unk = self.unknown or (None, "")
        return [unk if i == unk_id else t for i, t in zip(encoding.ids, encoding.tokens)]

    def __repr__(self) -> str:
        return f"Tokenizer(vocab_size={self.vocab_size}, max_length={self.max_length}, source={self.source!r})"


def unigram_unknown(backend) -> Optional[tuple[int, str]]:
    """``(id, piece)`` of a unigram model's unknown piece (``<unk>``); None for other models."""
    model = getattr(backend, "model", None)
    if model is None or type(model).__name__ != "Unigram":
        return None
    try:
        unk_id = json.loads(model.__getstate__()).get("unk_id")
    except (AttributeError, TypeError, ValueError):
        return None
    piece = backend.id_to_token(unk_id) if isinstance(unk_id, int) else None
    return None if piece is None else (unk_id, piece)


def check_unicode(text: str, what: str = "the text") -> str:
    """``text`` unchanged if it is valid Unicode (encodable as UTF-8), else InputError.

    A Python ``str`` can hold lone surrogates (U+D800..U+DFFF) that no encoding accepts: they come
    from ``"a\\ud800b"`` literals and from command-line bytes that are not UTF-8, which Python
    decodes with ``surrogateescape`` (byte 0xE9 becomes U+DCE9). The tokenizer library would fail
    on them with a bare TypeError; this names the character and, for an escaped byte, the byte.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        code = ord(text[e.start])
        if 0xDC80 <= code <= 0xDCFF:
            why = Msg("errors.core_unicode_byte", byte=f"{code - 0xDC00:02X}", at=e.start)
        else:
            why = Msg("errors.core_unicode_surrogate", at=e.start, code=f"{code:04X}")
        raise error(InputError, "errors.core_not_unicode", what=word(what), why=why) from None
    return text


# ----------------------------------------------------------------------------------------------
# building tokenizers from a checkpoint folder
# ----------------------------------------------------------------------------------------------

def _read_json(path: Path) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise error(ModelLoadError, "errors.core_cannot_read", path=path, why=str(e)) from None
    if not isinstance(data, dict):  # a list here failed as an AttributeError or inside the tokenizers library
        raise error(ModelLoadError, "errors.models_json_object", path=path, got=type(data).__name__)
    return data


def tokenizer_settings(folder: Path) -> dict:
    """``tokenizer_config.json`` merged over ``special_tokens_map.json`` (both optional)."""
    settings: dict = {}
    for name in ("special_tokens_map.json", "tokenizer_config.json"):
        p = folder / name
        if p.is_file():
            for k, v in _read_json(p).items():
                if isinstance(v, dict) and "content" in v:  # AddedToken serialised as a dict
                    v = v["content"]
                settings[k] = v
    return settings


def wordpiece_from_vocab(vocab_file: Path, *, lowercase: bool = True, chinese_chars: bool = True,
                         strip_accents: Optional[bool] = None, unk: str = "[UNK]", cls: str = "[CLS]",
                         sep: str = "[SEP]", pad: str = "[PAD]", mask: str = "[MASK]"):
    """BERT's tokenizer from ``vocab.txt`` (token on line n has id n), as ``BertTokenizer`` does it.

    Basic tokenization (clean text, split CJK characters into single tokens when
    ``chinese_chars``, lowercase + strip accents when ``lowercase``, split on spaces and
    punctuation), then greedy longest-match WordPiece with ``##`` continuations, then
    ``[CLS] … [SEP]``. The special tokens of the vocabulary are never split: ``[MASK]`` written in
    a text is the one token ``[MASK]``, as in ``BertTokenizer``.
    """
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordPiece

    try:
        lines = vocab_file.read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError) as e:
        raise error(ModelLoadError, "errors.core_cannot_read", path=vocab_file, why=str(e)) from None
    if lines and lines[-1] == "":
        lines.pop()
    vocab = {entry: i for i, entry in enumerate(lines)}  # a repeated line: the last one wins, as in BertTokenizer
    for special in (unk, cls, sep):
        if special not in vocab:
            raise error(ModelLoadError, "errors.core_vocab_special", path=vocab_file, special=special,
                        unk=unk, cls_token=cls, sep=sep)
    tok = HFTokenizer(WordPiece(vocab, unk_token=unk, max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=chinese_chars,
                                                strip_accents=strip_accents, lowercase=lowercase)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(single=f"{cls}:0 $A:0 {sep}:0", pair=f"{cls}:0 $A:0 {sep}:0 $B:1 {sep}:1",
                                                       special_tokens=[(cls, vocab[cls]), (sep, vocab[sep])])
    tok.decoder = decoders.WordPiece(prefix="##")
    tok.add_special_tokens([t for t in dict.fromkeys((unk, sep, pad, cls, mask)) if t in vocab])
    return tok


def bytelevel_bpe_from_files(vocab_file: Path, merges_file: Path, *, cls: Optional[str] = None,
                             sep: Optional[str] = None, add_prefix_space: bool = False, specials: Sequence[str] = ()):
    """GPT-2 / RoBERTa byte-level BPE from ``vocab.json`` + ``merges.txt``.

    With ``cls`` and ``sep`` (RoBERTa: ``<s> … </s>``, a pair ``<s> a </s></s> b </s>``) around each
    text; without (GPT-2) nothing is added. ``specials`` (and ``cls``, ``sep``) that the vocabulary has are never split:
    ``<|endoftext|>`` written in a text is that one token, as in ``GPT2Tokenizer``.
    """
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import decoders, pre_tokenizers, processors
    from tokenizers.models import BPE

    vocab = _read_json(vocab_file)
    bad = next((k for k, v in vocab.items() if isinstance(v, bool) or not isinstance(v, int) or v < 0), None)
    if bad is not None:  # else a TypeError from inside the tokenizers library
        raise error(ModelLoadError, "errors.core_vocab_id", path=vocab_file, token=repr(bad), got=repr(vocab[bad]))
    try:
        lines = merges_file.read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError) as e:
        raise error(ModelLoadError, "errors.core_cannot_read", path=merges_file, why=str(e)) from None
    merges = [(a, b) for a, _, b in (line.partition(" ") for line in lines if line and not line.startswith("#version"))]
    tok = HFTokenizer(BPE(vocab, merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space)
    tok.decoder = decoders.ByteLevel()
    if cls is not None and sep is not None:
        for t in (cls, sep):
            if t not in vocab:
                raise error(ModelLoadError, "errors.core_vocab_missing", path=vocab_file, token=t)
        tok.post_processor = processors.RobertaProcessing((sep, vocab[sep]), (cls, vocab[cls]), add_prefix_space=add_prefix_space)
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.add_special_tokens([t for t in dict.fromkeys([cls, sep, *specials]) if t is not None and t in vocab])
    return tok


def _bpe_specials(settings: dict, roberta: bool) -> list[str]:
    """The special tokens of a byte-level BPE folder, with transformers' defaults (GPT-2: ``<|endoftext|>``)."""
    names = {"unk_token": "<unk>", "pad_token": "<pad>", "mask_token": "<mask>", "bos_token": "<s>", "eos_token": "</s>"} \
        if roberta else {"unk_token": "<|endoftext|>", "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"}
    return [v for v in (settings.get(k, d) for k, d in names.items()) if isinstance(v, str)]


def load_tokenizer(folder: Path, *, kind: str, max_length: int, pad_token_id: int) -> Tokenizer:
    """The tokenizer of a checkpoint folder.

    ``kind`` is "wordpiece" (BERT), "bpe-roberta" or "bpe-gpt2". ``tokenizer.json`` is used when
    present; otherwise ``vocab.txt`` (wordpiece) or ``vocab.json`` + ``merges.txt`` (bpe).
    """
    from tokenizers import Tokenizer as HFTokenizer

    folder = Path(folder)
    tj = folder / "tokenizer.json"
    if tj.is_file():
        try:
            backend = HFTokenizer.from_file(str(tj))
        except Exception as e:  # the Rust library raises plain Exception subclasses
            raise error(ModelLoadError, "errors.core_cannot_read", path=tj, why=str(e)) from None
        return Tokenizer(backend, pad_token_id=pad_token_id, max_length=max_length, source=str(tj))
    settings = tokenizer_settings(folder)  # what the vocab-file tokenizers below are built with
    for k, v in settings.items():  # a wrong type was a TypeError from tokenizers ("false") or from hashing (a list)
        want = str if k in ("unk_token", "cls_token", "sep_token", "pad_token", "mask_token", "bos_token", "eos_token") \
            else bool if k in ("do_lower_case", "tokenize_chinese_chars", "strip_accents", "add_prefix_space") else object
        if v is not None and not isinstance(v, want):
            raise error(ModelLoadError, "errors.core_tokenizer_setting", folder=folder, field=k, want=want.__name__, got=repr(v))
    if kind == "wordpiece":
        vf = folder / "vocab.txt"
        if not vf.is_file():
            raise error(ModelLoadError, "errors.core_no_tokenizer", folder=folder)
        backend = wordpiece_from_vocab(
            vf, lowercase=bool(settings.get("do_lower_case", True)),
            chinese_chars=bool(settings.get("tokenize_chinese_chars", True)), strip_accents=settings.get("strip_accents"),
            unk=settings.get("unk_token", "[UNK]"), cls=settings.get("cls_token", "[CLS]"),
            sep=settings.get("sep_token", "[SEP]"), pad=settings.get("pad_token", "[PAD]"),
            mask=settings.get("mask_token", "[MASK]"))
        return Tokenizer(backend, pad_token_id=pad_token_id, max_length=max_length, source=str(vf))
    vf, mf = folder / "vocab.json", folder / "merges.txt"
    if not (vf.is_file() and mf.is_file()):
        raise error(ModelLoadError, "errors.core_no_tokenizer_bpe", folder=folder)
    roberta = kind == "bpe-roberta"  # cls … sep around each text, as RobertaTokenizer (not bos/eos); GPT-2 adds nothing
    backend = bytelevel_bpe_from_files(vf, mf, cls=settings.get("cls_token", "<s>") if roberta else None,
                                       sep=settings.get("sep_token", "</s>") if roberta else None,
                                       add_prefix_space=bool(settings.get("add_prefix_space", False)),
                                       specials=_bpe_specials(settings, roberta))
    return Tokenizer(backend, pad_token_id=pad_token_id, max_length=max_length, source=f"{vf} + {mf}")
