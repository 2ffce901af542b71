"""Tiny random checkpoints of BERT's relatives, written by ``transformers``, for the parity tests.

Each builder writes ``config.json`` + ``model.safetensors`` (``save_pretrained``) and the kind of
tokenizer the family's real checkpoints ship into a folder, and returns it. Every parameter is
random (norm scales 1 + N(0, 0.1²), the rest N(0, 0.15²)) so a swapped or transposed weight cannot
go unnoticed; sizes are tiny (2–3 layers, d_model 32).

=====================  ===========================================================================
builder                what it exercises
=====================  ===========================================================================
``distilbert``         DistilBertForMaskedLM (prefix ``distilbert.``), English ``vocab.txt``
``distilbert_zh``      DistilBertModel, bert-base-chinese ``vocab.txt``
``albert``             AlbertForMaskedLM, E = 16 → 32, 3 layers sharing 1 group, SentencePiece
                       ``tokenizer.json``
``albert_groups``      AlbertModel, 4 layers in 2 weight groups, Chinese ``vocab.txt``
``electra``            ElectraForPreTraining (the discriminator), E = 16 → 32, English ``vocab.txt``
``electra_zh``         ElectraModel with E = d_model (no projection), Chinese ``vocab.txt``
``xlm_roberta``        XLMRobertaForMaskedLM, multilingual SentencePiece ``tokenizer.json`` (<s>, pad 1)
``deberta_v3``         DebertaV2Model as DeBERTa-v3: relative attention with log buckets (8 buckets,
                       max 16 — shorter than the texts), share_att_key, LayerNorm'ed relative
                       embeddings, no absolute positions, c2p|p2c, SentencePiece ``tokenizer.json``
``deberta_v2``         DebertaV2ForMaskedLM as DeBERTa-v2: no buckets (max_relative_positions 6),
                       separate pos_key/pos_query projections, absolute positions too, segments,
                       E = 16 → 32 (``embed_proj``), Chinese ``vocab.txt``
``deberta_c2p``        DebertaV2Model with c2p only (scale 1/√(2d)), plain relative embeddings
=====================  ===========================================================================
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable, Optional

import torch

from attnscope.testing.tiny import BERT_BASE_CHINESE_IDS, BERT_BASE_CHINESE_VOCAB_SIZE, tiny_family

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "Attention is all you need, said the paper in 2017.",
    "Every token looks at every other token and decides how much to listen.",
    "Relative positions tell a head how far apart two tokens are.",
    "Queries, keys and values are three projections of the same input.",
    "我喜欢人工智能。北京是中国的首都。你好世界！",
    "Le chat est sur le tapis. Der Hund schläft.",
] * 3


def randomise(model: torch.nn.Module, seed: int) -> None:
    """Every parameter random: norm scales 1 + N(0, 0.1²), everything else N(0, 0.15²)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g, dtype=torch.float32).to(p.dtype)
            if name.endswith("weight") and "norm" in name.lower():
                p.copy_(1.0 + 0.1 * noise)
            else:
                p.copy_(0.15 * noise)


def save(model, folder: Path) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model.eval()
    model.save_pretrained(str(folder))
    return folder


def english_vocab(folder: Path) -> int:
    """The uncased English WordPiece ``vocab.txt`` of the packaged MiniLM; returns its size."""
    from attnscope.models.loader import default_model_path

    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(default_model_path() / "vocab.txt", folder / "vocab.txt")
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}), encoding="utf-8")
    return 30522


def chinese_vocab(folder: Path) -> int:
    """A ``vocab.txt`` of bert-base-chinese's size with its characters at their real ids."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"[unused{i}]" for i in range(BERT_BASE_CHINESE_VOCAB_SIZE)]
    for tok, i in BERT_BASE_CHINESE_IDS.items():
        lines[i] = tok
    (folder / "vocab.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"do_lower_case": False, "tokenize_chinese_chars": True}), encoding="utf-8")
    return BERT_BASE_CHINESE_VOCAB_SIZE


def sentencepiece_json(folder: Path, special: list[str], *, single: str, pair: str, vocab_size: int = 300) -> dict:
    """A SentencePiece-style Unigram ``tokenizer.json`` (▁ word starts, as ALBERT/XLM-R/DeBERTa-v3/T5
    ship) trained on the corpus; ``single``/``pair`` are TemplateProcessing templates. Returns the vocab."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    folder.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    unk = next(t for t in special if "unk" in t.lower())
    trainer = trainers.UnigramTrainer(vocab_size=vocab_size, special_tokens=special, unk_token=unk,
                                      show_progress=False)
    tok.train_from_iterator(CORPUS, trainer=trainer)
    vocab = tok.get_vocab()
    used = [t for t in special if t in single or t in pair]
    tok.post_processor = processors.TemplateProcessing(single=single, pair=pair,
                                                       special_tokens=[(t, vocab[t]) for t in used])
    tok.save(str(folder / "tokenizer.json"))
    return vocab


def _cls_sep_json(folder: Path) -> int:
    """A SentencePiece ``tokenizer.json`` with BERT's specials ([CLS] … [SEP]: ALBERT, DeBERTa-v3)."""
    return len(sentencepiece_json(folder, ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
                                  single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1"))


def _s_json(folder: Path) -> int:
    """A SentencePiece ``tokenizer.json`` with RoBERTa's specials (<s> … </s>, pad 1: XLM-R)."""
    return len(sentencepiece_json(folder, ["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
                                  single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>"))


# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Tiny:
    """One tiny checkpoint: the transformers class (its ``config_class`` takes ``config``, with the
    vocabulary size that ``tokenizer`` returns after writing its files), the seed of
    :func:`randomise`, the language(s) of the vocabulary ("en", "zh", "en+zh"), and for the family
    battery (:class:`attnscope.testing.tiny.TinyFamily`) the trace-name steps beyond the core and
    the name of transformers' first hidden state."""

    model: str
    tokenizer: Callable[[Path], int]
    config: dict[str, Any]
    seed: int
    lang: str
    names: tuple[str, ...] = ("embed.segments", "embed.positions")
    first_hidden: str = "embed.out"
    viewer: bool = True


_SMALL = dict(num_attention_heads=4, intermediate_size=64, max_position_embeddings=64)
#: ALBERT, ELECTRA: the E → d projection after the embedding LayerNorm is what layer 0 reads.
_PROJECTED = dict(names=("embed.segments", "embed.positions", "embed.projected"), first_hidden="embed.projected")
#: DeBERTa's disentangled attention: its relative projections and score terms (both directions).
_DEBERTA = ("attn.pos_q", "attn.pos_k", "attn.scores_c2c", "attn.scores_c2p", "attn.scores_p2c", "attn.bias")

#: name → its tiny checkpoint (the table of the module docstring)
TINY: dict[str, Tiny] = {
    "distilbert": Tiny("DistilBertForMaskedLM", english_vocab, dict(
        dim=32, n_layers=2, n_heads=4, hidden_dim=64, max_position_embeddings=64), 30, "en", ("embed.positions",)),
    "distilbert_zh": Tiny("DistilBertModel", chinese_vocab, dict(
        dim=32, n_layers=2, n_heads=4, hidden_dim=64, max_position_embeddings=64, activation="relu"), 31, "zh",
        ("embed.positions",)),
    "albert": Tiny("AlbertForMaskedLM", _cls_sep_json, dict(
        _SMALL, embedding_size=16, hidden_size=32, num_hidden_layers=3, pad_token_id=0, hidden_act="gelu_new"),
        32, "en", **_PROJECTED),
    "albert_groups": Tiny("AlbertModel", chinese_vocab, dict(
        _SMALL, embedding_size=16, hidden_size=32, num_hidden_layers=4, num_hidden_groups=2, pad_token_id=0,
        hidden_act="gelu"), 33, "zh", **_PROJECTED),
    "electra": Tiny("ElectraForPreTraining", english_vocab, dict(
        _SMALL, embedding_size=16, hidden_size=32, num_hidden_layers=2), 34, "en", **_PROJECTED),
    "electra_zh": Tiny("ElectraModel", chinese_vocab, dict(
        _SMALL, embedding_size=32, hidden_size=32, num_hidden_layers=2), 35, "zh"),
    "xlm_roberta": Tiny("XLMRobertaForMaskedLM", _s_json, dict(
        _SMALL, hidden_size=32, num_hidden_layers=2, max_position_embeddings=66, pad_token_id=1, bos_token_id=0,
        eos_token_id=2, type_vocab_size=1, layer_norm_eps=1e-5), 36, "en+zh"),
    "deberta_v3": Tiny("DebertaV2Model", _cls_sep_json, dict(
        _SMALL, hidden_size=32, num_hidden_layers=2, relative_attention=True, position_buckets=8,
        max_relative_positions=16, pos_att_type="p2c|c2p", share_att_key=True, norm_rel_ebd="layer_norm",
        position_biased_input=False, type_vocab_size=0, layer_norm_eps=1e-7), 37, "en", _DEBERTA, viewer=False),
    "deberta_v2": Tiny("DebertaV2ForMaskedLM", chinese_vocab, dict(
        _SMALL, hidden_size=32, embedding_size=16, num_hidden_layers=2, relative_attention=True,
        max_relative_positions=6, pos_att_type=["c2p", "p2c"], share_att_key=False, position_biased_input=True,
        type_vocab_size=2), 38, "zh", ("embed.segments", "embed.positions", "embed.projected") + _DEBERTA,
        viewer=False),
    "deberta_c2p": Tiny("DebertaV2Model", english_vocab, dict(
        _SMALL, hidden_size=32, num_hidden_layers=2, relative_attention=True, position_buckets=6,
        max_relative_positions=32, pos_att_type=["c2p"], share_att_key=True, position_biased_input=False,
        type_vocab_size=0), 39, "en", ("attn.pos_k", "attn.scores_c2c", "attn.scores_c2p", "attn.bias"),
        viewer=False),
}


def build(name: str, folder, *, seed: Optional[int] = None) -> Path:
    """Writes the tiny checkpoint ``name`` of :data:`TINY` (tokenizer, config, random weights) into
    ``folder`` and returns it."""
    import transformers

    spec = TINY[name]
    folder = Path(folder)
    cls = getattr(transformers, spec.model)
    m = cls(cls.config_class(vocab_size=spec.tokenizer(folder), **spec.config))
    randomise(m, spec.seed if seed is None else seed)
    return save(m, folder)


#: name → (builder of a folder, language of its vocabulary)
BUILDERS: dict[str, tuple[Callable[..., Path], str]] = {name: (partial(build, name), t.lang) for name, t in TINY.items()}
for _name, _t in TINY.items():  # the family battery runs every one (transformers' reference: the base model)
    tiny_family(_name, "AutoModel", lang=_t.lang, names=_t.names, first_hidden=_t.first_hidden,
                viewer=_t.viewer)(BUILDERS[_name][0])

# One builder a checkpoint, by name (``tiny.albert(folder)``), for tests elsewhere.
distilbert, distilbert_zh = BUILDERS["distilbert"][0], BUILDERS["distilbert_zh"][0]
albert, albert_groups = BUILDERS["albert"][0], BUILDERS["albert_groups"][0]
electra, electra_zh = BUILDERS["electra"][0], BUILDERS["electra_zh"][0]
xlm_roberta = BUILDERS["xlm_roberta"][0]
deberta_v3, deberta_v2, deberta_c2p = BUILDERS["deberta_v3"][0], BUILDERS["deberta_v2"][0], BUILDERS["deberta_c2p"][0]


def hf_encoder(folder):
    """transformers' eager base model of a folder (AutoModel: the encoder without task heads)."""
    import transformers

    transformers.logging.set_verbosity_error()
    return transformers.AutoModel.from_pretrained(str(folder), attn_implementation="eager").eval()
