"""A ``tokenizers.Tokenizer`` built from a GGUF file's metadata, plus its chat template.

A GGUF file carries its tokenizer as metadata: ``tokenizer.ggml.model`` (the kind), ``tokens``,
``token_type`` (1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte), ``merges`` or
``scores``, the special ids, ``add_bos_token`` / ``add_eos_token`` / ``add_space_prefix``, and
``tokenizer.chat_template``. Two kinds are built here, as ``transformers`` builds them from the
same file (``tests/models/test_gguf_tokenizer.py`` compares ids):

* ``gpt2`` — byte-level BPE with the file's merges (SmolLM2, Llama 3, Qwen2). ``tokenizer.ggml.pre``
  names the split before BPE; SmolLM2's "smollm" (like StarCoder's) puts every digit on its own,
  as the model's own tokenizer and llama.cpp do. (transformers 5.24 ignores that name; the ids
  agree all the same, since SmolLM2's vocabulary has no token with more than one digit.)
* ``llama`` on a Gemma architecture — SentencePiece-style BPE (Gemma 3): spaces become ``▁``, no
  space is prepended (``add_space_prefix`` false), bytes without a token fall back to
  ``<0xNN>``. The file lists no merges; they are rebuilt from the vocabulary, best first in file
  order, as transformers' converter does (Gemma's scores do not follow its merge order).

Control tokens (``<bos>``, ``<|im_end|>``, ``<start_of_turn>``…) are added as special tokens, so
their text is one token; user-defined ones as plain added tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

from ..errors import InputError, ModelLoadError
from ..i18n import error
from ..pieces import byte_decoder

CONTROL, USER_DEFINED = 3, 4

# tokenizer.ggml.pre → the regex that splits text before byte-level BPE (None: GPT-2's own,
# applied by the ByteLevel pre-tokenizer; "digits": GPT-2's after isolating each digit)
_LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
                r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_PRE_SPLITS = {
    None: None, "default": None, "gpt2": None, "gpt-2": None,
    "smollm": "digits", "starcoder": "digits", "refact": "digits", "codeshell": "digits",
    "llama3": _LLAMA3_SPLIT, "llama-v3": _LLAMA3_SPLIT, "llama-bpe": _LLAMA3_SPLIT, "smaug-bpe": _LLAMA3_SPLIT,
    "qwen2": _QWEN2_SPLIT, "deepseek-r1-qwen": _QWEN2_SPLIT,
}
_GEMMA_ARCHS = ("gemma", "gemma2", "gemma3")


@dataclass
class GGUFTokenizer:
    """The tokenizer of a GGUF file.

    Attributes:
        backend: the ``tokenizers.Tokenizer`` (pass it to :class:`attnscope.tokenizer.Tokenizer`).
        bos_token_id, eos_token_id, pad_token_id, unk_token_id: ids from the file (None if absent).
        special_tokens: "bos_token"/"eos_token"/"pad_token"/"unk_token" → token text.
        add_bos_token, add_eos_token: whether encoding adds them (already in ``backend``'s
            post-processor).
        chat_template: the Jinja chat template string, or None when the file has none (Gemma 3
            270M's has none).
        kind: "bpe-bytelevel" or "bpe-sentencepiece".
    """

    backend: object = field(repr=False)
    bos_token_id: Optional[int]
    eos_token_id: Optional[int]
    pad_token_id: Optional[int]
    unk_token_id: Optional[int]
    special_tokens: dict
    add_bos_token: bool
    add_eos_token: bool
    chat_template: Optional[str] = field(default=None, repr=False)
    kind: str = ""

    def apply_chat_template(self, messages: Sequence[dict], *, add_generation_prompt: bool = False) -> str:
        """The prompt text of ``messages`` (``[{"role": "user", "content": "Hi"}]``) rendered with the
        file's chat template, as ``transformers``' ``apply_chat_template(tokenize=False)`` does.

        Raises InputError when the file has no chat template or the template rejects the messages.
        """
        if self.chat_template is None:
            raise error(InputError, "errors.gguf_no_chat_template")
        return render_chat_template(self.chat_template, messages, add_generation_prompt=add_generation_prompt,
                                    **self.special_tokens)


def render_chat_template(template: str, messages: Sequence[dict], *, add_generation_prompt: bool = False,
                         **special_tokens) -> str:
    """Render a Hugging Face chat template (Jinja, sandboxed, ``trim_blocks`` and ``lstrip_blocks``
    on, ``raise_exception`` defined), as transformers does."""
    try:
        import jinja2
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError:  # pragma: no cover - jinja2 comes with torch
        raise error(ModelLoadError, "errors.models_needs_jinja2") from None
    if not isinstance(messages, (list, tuple)) or not all(isinstance(m, dict) and "role" in m for m in messages):
        raise error(InputError, "errors.models_chat_messages", got=repr(messages))

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.globals["raise_exception"] = raise_exception
    try:
        return env.from_string(template).render(messages=list(messages), add_generation_prompt=add_generation_prompt,
                                                **special_tokens)
    except jinja2.exceptions.TemplateError as e:
        raise error(InputError, "errors.models_chat_rejected", why=str(e)) from None


def tokenizer_from_metadata(meta: dict, path="GGUF file") -> GGUFTokenizer:
    """Build the tokenizer a GGUF file's metadata describes.

    Raises ModelLoadError for a tokenizer kind other than "gpt2" (byte-level BPE) and Gemma's
    "llama" (SentencePiece BPE), an unknown ``tokenizer.ggml.pre``, or missing tokens/merges.
    """
    kind = meta.get("tokenizer.ggml.model")
    tokens = meta.get("tokenizer.ggml.tokens")
    if not isinstance(tokens, list) or not tokens:
        raise error(ModelLoadError, "errors.gguf_no_tokens", path=path)
    types = meta.get("tokenizer.ggml.token_type") or [1] * len(tokens)
    if len(types) != len(tokens):
        raise error(ModelLoadError, "errors.gguf_token_types", path=path, n=len(types), n_tokens=len(tokens))
    arch = meta.get("general.architecture")
    if kind == "gpt2":
        backend, name = _bytelevel(meta, tokens, path), "bpe-bytelevel"
    elif kind == "llama" and arch in _GEMMA_ARCHS:
        backend, name = _gemma(meta, gemma_spelling(tokens), path), "bpe-sentencepiece"
    else:
        raise error(ModelLoadError, "errors.gguf_tokenizer_kind", path=path, kind=repr(kind), arch=repr(arch))
    from tokenizers import AddedToken

    # as transformers does: a control token outside the byte alphabet is a mislabel (adding it would
    # grow the vocabulary), and a user-defined one only when its stored spelling is the model's (so
    # Gemma's space runs, respelled as ▁▁…, stay ordinary vocabulary tokens)
    byte_alphabet = _byte_alphabet() if kind == "gpt2" else None
    specials = [AddedToken(tok, normalized=False, special=True) for tok, t in zip(tokens, types)
                if t == CONTROL and (byte_alphabet is None or set(tok) <= byte_alphabet)]
    if specials:
        backend.add_special_tokens(specials)
    vocab = backend.get_vocab(with_added_tokens=True)
    plain = [AddedToken(tok, normalized=False, special=False) for tok, t in zip(tokens, types)
             if t == USER_DEFINED and tok in vocab]
    if plain:
        backend.add_tokens(plain)

    ids = {k: meta.get(f"tokenizer.ggml.{g}") for k, g in (("bos", "bos_token_id"), ("eos", "eos_token_id"),
                                                             ("pad", "padding_token_id"), ("unk", "unknown_token_id"))}
    for k, i in ids.items():
        if i is not None and not 0 <= i < len(tokens):
            raise error(ModelLoadError, "errors.gguf_special_id", path=path, which=k, i=i, n=len(tokens))
    # llama.cpp adds BOS to SentencePiece vocabularies that do not say otherwise
    add_bos = bool(meta.get("tokenizer.ggml.add_bos_token", kind == "llama"))
    add_eos = bool(meta.get("tokenizer.ggml.add_eos_token", False))
    _post_processor(backend, tokens, ids, add_bos, add_eos, path=path)
    special = {f"{k}_token": tokens[i] for k, i in ids.items() if i is not None}
    return GGUFTokenizer(backend, ids["bos"], ids["eos"], ids["pad"], ids["unk"], special, add_bos, add_eos,
                         meta.get("tokenizer.chat_template"), name)


def _post_processor(backend, tokens, ids, add_bos, add_eos, *, path) -> None:
    from tokenizers import processors

    for flag, k in ((add_bos, "bos"), (add_eos, "eos")):
        if flag and ids[k] is None:
            raise error(ModelLoadError, "errors.gguf_add_token", path=path, which=k)
    bos = [f"{tokens[ids['bos']]}:0"] if add_bos else []
    eos = [f"{tokens[ids['eos']]}:0"] if add_eos else []
    single = bos + ["$A:0"] + eos
    # the second text of a pair gets type id 1 (as in transformers' TemplateProcessing)
    pair = single + [s.replace(":0", ":1") for s in bos] + ["$B:1"] + [s.replace(":0", ":1") for s in eos]
    used = {tokens[ids[k]]: ids[k] for k, f in (("bos", add_bos), ("eos", add_eos)) if f}
    backend.post_processor = processors.TemplateProcessing(single=single, pair=pair, special_tokens=list(used.items()))


def _byte_alphabet() -> set:
    from tokenizers import pre_tokenizers

    return set(pre_tokenizers.ByteLevel.alphabet())


def _bytelevel(meta: dict, tokens: list, path):
    from tokenizers import Regex, Tokenizer, decoders, pre_tokenizers
    from tokenizers.models import BPE

    merges_raw = meta.get("tokenizer.ggml.merges")
    if not isinstance(merges_raw, list):
        raise error(ModelLoadError, "errors.gguf_no_merges", path=path)
    pre = meta.get("tokenizer.ggml.pre")
    if pre not in _PRE_SPLITS:
        raise error(ModelLoadError, "errors.gguf_pre", path=path, pre=repr(pre),
                    known=", ".join(sorted(k for k in _PRE_SPLITS if k)))
    alphabet = _byte_alphabet()
    table = {b: c for c, b in byte_decoder().items()}  # byte → GPT-2's printable character
    vocab = {}
    for i, tok in enumerate(tokens):
        # a token outside the byte alphabet (a mislabelled added token) is spelled in bytes, as transformers does
        vocab[tok if set(tok) <= alphabet else "".join(table[b] for b in tok.encode("utf-8"))] = i
    merges = []
    for m in merges_raw:
        a, sep, b = m.partition(" ")
        if not sep:
            raise error(ModelLoadError, "errors.gguf_merge_entry", path=path, entry=repr(m))
        merges.append((a, b))
    tok = Tokenizer(BPE(vocab, merges, dropout=None, continuing_subword_prefix="", end_of_word_suffix="",
                        fuse_unk=False, byte_fallback=False))
    split = _PRE_SPLITS[pre]
    if split is None:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    elif split == "digits":
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                     pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(split), behavior="isolated"),
                                                     pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    return tok


def _gemma(meta: dict, tokens: list, path):
    from tokenizers import Tokenizer, decoders, normalizers, pre_tokenizers
    from tokenizers.models import BPE

    if meta.get("tokenizer.ggml.add_space_prefix", False):
        raise error(ModelLoadError, "errors.gguf_space_prefix", path=path)
    unk_id = meta.get("tokenizer.ggml.unknown_token_id")
    if unk_id is None:
        raise error(ModelLoadError, "errors.gguf_no_unk", path=path)
    vocab = {t: i for i, t in enumerate(tokens)}
    tok = Tokenizer(BPE(vocab, gemma_merges(tokens), fuse_unk=True, unk_token=tokens[unk_id], dropout=None,
                        byte_fallback=True))
    tok.normalizer = normalizers.Replace(" ", "\u2581")
    tok.pre_tokenizer = pre_tokenizers.Split(" ", behavior="merged_with_previous", invert=False)
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()])
    return tok


def gemma_spelling(tokens: list) -> list:
    """Gemma's vocabulary as its tokenizer looks tokens up: a token of two or more spaces is stored
    as spaces, but text reaches the BPE with every space turned into ``▁``."""
    return ["\u2581" * len(t) if " " in t and not t.strip() else t for t in tokens]


def gemma_merges(tokens: list) -> list[tuple[str, str]]:
    """BPE merges implied by a SentencePiece vocabulary: every split of a token into two tokens,
    ordered by the token's position in the file (earlier first), then longer left part first —
    the order transformers' ``generate_merges`` gives with the file position as the score."""
    rank = {t: i for i, t in enumerate(tokens)}  # a repeated token keeps its last position, as dicts do
    found = []
    for tok, r in rank.items():
        n = len(tok)
        for k in range(n - 1, 0, -1):  # longer left part first
            left, right = tok[:k], tok[k:]
            if left in rank and right in rank:
                found.append((r, k, left, right))
    found.sort(key=lambda x: (x[0], -x[1]))
    return [(a, b) for _, _, a, b in found]


def tokenizer_from_gguf(path) -> GGUFTokenizer:
    """The tokenizer of a ``.gguf`` file (reads the metadata only, not the weights)."""
    from .gguf_file import GGUFFile

    with GGUFFile(path) as f:
        return tokenizer_from_metadata(f.metadata, f.path)
