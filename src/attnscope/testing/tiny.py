"""Tiny randomly initialised checkpoints written by ``transformers``, for tests.

Each builder creates a Hugging Face model with tiny sizes (2 layers, 4 heads, d_model 32), fills
every parameter with random values (so a swapped or transposed weight cannot go unnoticed), saves
it with ``save_pretrained`` together with a tokenizer in one of the formats real checkpoints use,
and returns the folder. They need ``transformers`` (a test dependency); attnscope itself does not.

* :func:`tiny_bert_chinese` — BertForMaskedLM (keys prefixed ``bert.``) with a ``vocab.txt`` of
  bert-base-chinese's size (21128) whose lines put ``[CLS]``, ``[SEP]`` and the characters of
  ``我喜欢人工智能`` at their bert-base-chinese ids (101, 102, 2769, 1599, 3614, 782, 2339, 3255,
  5543), so ids come out as in the first article. No ``tokenizer.json``.
* :func:`tiny_bert` — BertModel (no prefix) with the English uncased WordPiece ``vocab.txt`` of
  the packaged MiniLM.
* :func:`tiny_roberta` — RobertaForMaskedLM (``roberta.``) with a byte-level BPE trained here,
  saved as ``vocab.json`` + ``merges.txt``.
* :func:`tiny_gpt2` — GPT2LMHeadModel (``transformer.``, tied ``lm_head``) with the same kind of
  BPE.
* :func:`tiny_bloom`, :func:`tiny_bloom_6heads` — BloomForCausalLM (ALiBi; 4 heads, and 6 heads for
  the slopes of a head count that is not a power of two) with a BPE ``tokenizer.json``.

**The registry** (:data:`FAMILIES`): every tiny checkpoint of the tests — these four and the
builders of ``tests/models/*/tiny.py`` — registers here with :func:`tiny_family`, and
``tests/models/test_family_battery.py`` runs every registered one through parity with
``transformers``, the float64 reference, the trace-name pin, ``explain`` row and ``--path``, the
viewer's data and ``analyze``. A new family gets all of it by one decorator on its builder::

    @tiny_family("qwen3", "AutoModelForCausalLM", lm_head=True, names=DECODER_NAMES + QK_NORM)
    def qwen3(folder, *, seed=19) -> Path: ...
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

#: bert-base-chinese ids of the characters the tests use (checked against published encodings of
#: 我喜欢人工智能 → [101, 2769, 1599, 3614, 782, 2339, 3255, 5543, 102]).
BERT_BASE_CHINESE_IDS = {
    "[PAD]": 0, "[UNK]": 100, "[CLS]": 101, "[SEP]": 102, "[MASK]": 103,
    "。": 511, "世": 686, "京": 776, "人": 782, "你": 872, "北": 1266, "喜": 1599, "好": 1962,
    "工": 2339, "我": 2769, "是": 3221, "智": 3255, "欢": 3614, "爱": 4263, "界": 4518, "的": 4638,
    "能": 5543, "都": 6963, "首": 7674, "中": 704, "国": 1744,
}
BERT_BASE_CHINESE_VOCAB_SIZE = 21128

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "Attention is all you need, said the paper in 2017.",
    "Every token looks at every other token and decides how much to listen.",
    "Queries, keys and values are three projections of the same input.",
    "The softmax turns scores into weights that sum to one.",
    "Heads are independent learned projections, not slices of the input!",
    "Scaling by the square root of d_k keeps the softmax out of saturation.",
    "GPT-2 reads text left to right; BERT reads both ways.",
    "I like cats. I like dogs. Cats and dogs like me?",
] * 3


def _randomise(model: torch.nn.Module, seed: int) -> None:
    """Every parameter random: weights N(0, 0.15²), LayerNorm scales 1 + N(0, 0.1²)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g, dtype=p.dtype)
            if name.endswith("weight") and ("layernorm" in name.lower() or ".ln_" in name):
                p.copy_(1.0 + 0.1 * noise)
            else:
                p.copy_(0.15 * noise)


def _folder(folder) -> Path:
    """``folder`` as a Path, made if it does not exist."""
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _save(model_class, cfg, folder: Path, seed: int, **kw) -> Path:
    """``model_class(cfg, **kw)`` made under ``torch.manual_seed(seed)``, with random parameters
    (:func:`_randomise`), saved in ``folder``."""
    torch.manual_seed(seed)
    model = model_class(cfg, **kw)
    _randomise(model, seed)
    model.eval()
    model.save_pretrained(str(folder))
    return folder


def tiny_bert_chinese(folder, *, seed: int = 0) -> Path:
    from transformers import BertConfig, BertForMaskedLM

    folder = _folder(folder)
    lines = [f"[unused{i}]" for i in range(BERT_BASE_CHINESE_VOCAB_SIZE)]
    for tok, i in BERT_BASE_CHINESE_IDS.items():
        lines[i] = tok
    (folder / "vocab.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"do_lower_case": False, "tokenize_chinese_chars": True, "tokenizer_class": "BertTokenizer"}), encoding="utf-8")
    cfg = BertConfig(vocab_size=BERT_BASE_CHINESE_VOCAB_SIZE, hidden_size=32, num_hidden_layers=2,
                     num_attention_heads=4, intermediate_size=64, max_position_embeddings=64)
    return _save(BertForMaskedLM, cfg, folder, seed)


def tiny_bert(folder, *, seed: int = 1) -> Path:
    from transformers import BertConfig, BertModel

    from ..models.loader import default_model_path

    folder = _folder(folder)
    shutil.copy(default_model_path() / "vocab.txt", folder / "vocab.txt")
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}), encoding="utf-8")
    cfg = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=64, max_position_embeddings=64)
    return _save(BertModel, cfg, folder, seed, add_pooling_layer=True)


def _bpe(special: list[str], vocab_size: int = 400):
    """A byte-level BPE ``tokenizers.Tokenizer`` trained on :data:`CORPUS`, ``special`` first."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS, trainer=trainer)
    return tok


def _train_bpe(folder: Path, special: list[str], vocab_size: int = 400) -> dict:
    tok = _bpe(special, vocab_size)
    tok.model.save(str(folder))  # vocab.json + merges.txt
    return tok.get_vocab()


def tiny_roberta(folder, *, seed: int = 2) -> Path:
    from transformers import RobertaConfig, RobertaForMaskedLM

    folder = _folder(folder)
    vocab = _train_bpe(folder, ["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    cfg = RobertaConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=66, pad_token_id=1, bos_token_id=0,
                        eos_token_id=2, type_vocab_size=1, layer_norm_eps=1e-5)
    return _save(RobertaForMaskedLM, cfg, folder, seed)


def tiny_gpt2(folder, *, seed: int = 3) -> Path:
    from transformers import GPT2Config, GPT2LMHeadModel

    folder = _folder(folder)
    vocab = _train_bpe(folder, ["<|endoftext|>"])
    eos = vocab["<|endoftext|>"]
    cfg = GPT2Config(vocab_size=len(vocab), n_positions=64, n_embd=32, n_layer=2, n_head=4,
                     bos_token_id=eos, eos_token_id=eos)
    return _save(GPT2LMHeadModel, cfg, folder, seed)


def tiny_bloom(folder, *, seed: int = 4, n_heads: int = 4, d_model: int = 32, n_layers: int = 2) -> Path:
    """BloomForCausalLM (``transformer.``, tied ``lm_head``): ALiBi, the embedding LayerNorm, the
    per-head fused ``query_key_value``; a byte-level BPE ``tokenizer.json`` (<unk> <s> </s> <pad> =
    0–3, no <s> added, as BLOOM's). ``n_heads=6, d_model=48``: slopes of a head count that is not
    a power of two."""
    from transformers import BloomConfig, BloomForCausalLM

    folder = _folder(folder)
    tok = _bpe(["<unk>", "<s>", "</s>", "<pad>"])
    tok.save(str(folder / "tokenizer.json"))
    cfg = BloomConfig(vocab_size=tok.get_vocab_size(), hidden_size=d_model, n_layer=n_layers, n_head=n_heads,
                      bos_token_id=1, eos_token_id=2, pad_token_id=3, layer_norm_epsilon=1e-5)
    return _save(BloomForCausalLM, cfg, folder, seed)


def tiny_bloom_6heads(folder, *, seed: int = 5) -> Path:
    return tiny_bloom(folder, seed=seed, n_heads=6, d_model=48)


BUILDERS = {"bert": tiny_bert, "bert-chinese": tiny_bert_chinese, "roberta": tiny_roberta, "gpt2": tiny_gpt2}


# ----------------------------------------------------------------------------------------------
# the registry of every tiny checkpoint (the family battery runs each one through everything)
# ----------------------------------------------------------------------------------------------

#: Trace-name steps (templates without ``layers.{i}.``) of the Llama-kind decoders beyond the core
#: every model has: the projections before the rotation, the mask, the gated FFN, the final norm.
DECODER_NAMES = ("attn.q_proj", "attn.k_proj", "attn.mask", "ffn.gate", "final_norm")
#: QK-norm (Gemma 3, Qwen3, OLMo 2).
QK_NORM = ("attn.q_normed", "attn.k_normed")
#: Norms of what attention and the MLP add (Gemma 3's sandwich, OLMo 2's post-block norms).
POST_NORMS = ("attn_post_norm", "ffn_post_norm")


@dataclass(frozen=True)
class TinyFamily:
    """One registered tiny checkpoint.

    Attributes:
        name: its key in :data:`FAMILIES` (also the test id).
        build: ``build(folder) -> folder``: writes config, weights and tokenizer, returns the folder.
        hf_class: the ``transformers`` class whose eager model of the folder is the reference
            (an ``Auto…`` class or a concrete one, e.g. ``"GPT2LMHeadModel"``).
        lang: the language(s) of its vocabulary, "en", "zh" or "en+zh": which texts it reads.
        reads: "text" (one text: encoders and decoders) or "pair" (a source and a target: T5, BART).
        lm_head: it has a language-model head (``model.logits``); else logits are not compared.
        first_hidden: the trace name of transformers' ``hidden_states[0]`` (what enters layer 0:
            ``embed.projected`` where an E → d projection follows the embedding LayerNorm).
        names: the trace-name steps it has beyond the core every model of its ``reads`` has
            (``embed.segments``, ``attn.bias``, :data:`DECODER_NAMES` …; a step with no ``embed.``
            or ``final_norm`` prefix is a layer's, ``layers.{i}.<step>``; for a pair the steps of
            both stacks: ``attn.bias`` is the encoder's ``attn.bias`` and the decoder's
            ``self_attn.bias``).
        viewer: ``attnscope view`` shows it (the page recomputes softmax(factor·q·kᵀ) with the
            mask, the rotation or T5's bias); False: the viewer refuses it in one sentence
            (DeBERTa's relative score terms), which the battery checks instead.
    """

    name: str
    build: Callable[..., Path]
    hf_class: str
    lang: str = "en"
    reads: str = "text"
    lm_head: bool = False
    first_hidden: str = "embed.out"
    names: tuple[str, ...] = ()
    viewer: bool = True


#: name → :class:`TinyFamily`, filled by :func:`tiny_family` (here and in ``tests/models/*/tiny.py``).
FAMILIES: dict[str, TinyFamily] = {}


def tiny_family(name: str, hf_class: str, **props) -> Callable:
    """Decorator: registers ``build`` as the tiny checkpoint ``name`` (the other fields of
    :class:`TinyFamily` as keywords) and returns it unchanged. ValueError when another module
    already registered ``name``."""
    def register(build: Callable[..., Path]) -> Callable[..., Path]:
        module = getattr(getattr(build, "func", build), "__module__", None)
        old = FAMILIES.get(name)
        if old is not None and getattr(getattr(old.build, "func", old.build), "__module__", None) != module:
            raise ValueError(f"tiny family {name!r} is already registered by another module")
        FAMILIES[name] = TinyFamily(name, build, hf_class, **props)
        return build
    return register


_ENCODER = ("embed.segments", "embed.positions")
tiny_family("bert", "BertModel", names=_ENCODER)(tiny_bert)
tiny_family("bert-chinese", "BertModel", lang="zh", names=_ENCODER)(tiny_bert_chinese)
tiny_family("roberta", "RobertaModel", names=_ENCODER)(tiny_roberta)
tiny_family("gpt2", "GPT2LMHeadModel", lm_head=True, names=("embed.positions", "final_norm"))(tiny_gpt2)
tiny_family("bloom", "BloomForCausalLM", lm_head=True, names=("attn.bias", "final_norm"))(tiny_bloom)
tiny_family("bloom_6heads", "BloomForCausalLM", lm_head=True, names=("attn.bias", "final_norm"))(tiny_bloom_6heads)
