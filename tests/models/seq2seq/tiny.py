"""Tiny random T5 and BART checkpoints written by ``transformers``, for the encoder–decoder tests.

=================  ==================================================================================
builder            what it exercises
=================  ==================================================================================
``t5``             T5 v1.0: relu FFN, output tied to the shared embedding (× d_model^-½), 2 encoder
                   and 3 decoder layers, 8 buckets up to distance 20 (the texts reach the log buckets),
                   SentencePiece ``tokenizer.json`` (``… </s>``)
``t5_v11``         T5 v1.1 / flan-t5 as on the Hub: gated-gelu FFN, ``tie_word_embeddings: false`` and
                   its own ``lm_head.weight``, no rescale
``mt5``            MT5ForConditionalGeneration, multilingual vocabulary (Chinese texts), as transformers
                   5 writes it (tied config, no rescale)
``bart``           BART: learned positions (+2), post-LN, layernorm_embedding, byte-level BPE
                   (``vocab.json`` + ``merges.txt``), generation: forced BOS 0, forced EOS 2,
                   no-repeat 3-grams
``bart_zh``        BART with ``scale_embedding`` (√d), bert-base-chinese ``vocab.txt``, generation:
                   min_length 6, repetition_penalty 1.5, forced EOS
=================  ==================================================================================
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Callable

import torch
from safetensors.torch import load_file, save_file

from attnscope.testing.tiny import FAMILIES, _train_bpe, tiny_family
from tests.models.encoders.tiny import chinese_vocab, randomise, save, sentencepiece_json

#: Registers an encoder–decoder checkpoint of this module (:func:`attnscope.testing.tiny.tiny_family`):
#: :data:`BUILDERS`, the parity tests and the family battery take it from there.
seq2seq_family = partial(tiny_family, hf_class="AutoModelForSeq2SeqLM", reads="pair", lm_head=True)
#: T5's trace names beyond the core: the relative position bias, each stack's final RMSNorm.
_T5 = ("attn.bias", "final_norm")


def _t5_tokenizer(folder: Path) -> int:
    vocab = sentencepiece_json(folder, ["<pad>", "</s>", "<unk>"], single="$A </s>", pair="$A </s> $B </s>")
    return len(vocab)


def _hub_style_untied(folder: Path, seed: int) -> None:
    """Rewrite a transformers-5 T5 folder as Hub v1.1 checkpoints are: ``tie_word_embeddings: false``
    and an ``lm_head.weight`` of its own."""
    cfg = json.loads((folder / "config.json").read_text())
    cfg["tie_word_embeddings"] = False
    cfg.pop("scale_decoder_outputs", None)
    (folder / "config.json").write_text(json.dumps(cfg))
    sd = dict(load_file(str(folder / "model.safetensors")))
    g = torch.Generator().manual_seed(seed + 1000)  # not the seed of the other weights: a matrix of its own
    sd["lm_head.weight"] = 0.15 * torch.randn(sd["shared.weight"].shape, generator=g)
    save_file(sd, str(folder / "model.safetensors"), metadata={"format": "pt"})


@seq2seq_family("t5", names=_T5)
def t5(folder, *, seed: int = 40) -> Path:
    from transformers import T5Config, T5ForConditionalGeneration

    folder = Path(folder)
    V = _t5_tokenizer(folder)
    m = T5ForConditionalGeneration(T5Config(vocab_size=V, d_model=32, d_kv=8, d_ff=64, num_layers=2,
                                            num_decoder_layers=3, num_heads=4, relative_attention_num_buckets=8,
                                            relative_attention_max_distance=20, feed_forward_proj="relu",
                                            pad_token_id=0, eos_token_id=1, decoder_start_token_id=0))
    randomise(m, seed)
    return save(m, folder)


@seq2seq_family("t5_v11", names=_T5 + ("ffn.gate",))
def t5_v11(folder, *, seed: int = 41) -> Path:
    from transformers import T5Config, T5ForConditionalGeneration

    folder = Path(folder)
    V = _t5_tokenizer(folder)
    m = T5ForConditionalGeneration(T5Config(vocab_size=V, d_model=32, d_kv=8, d_ff=48, num_layers=2, num_heads=4,
                                            relative_attention_num_buckets=8, relative_attention_max_distance=20,
                                            feed_forward_proj="gated-gelu", tie_word_embeddings=False,
                                            pad_token_id=0, eos_token_id=1, decoder_start_token_id=0))
    randomise(m, seed)
    save(m, folder)
    _hub_style_untied(folder, seed)
    return folder


@seq2seq_family("mt5", lang="zh", names=_T5 + ("ffn.gate",))
def mt5(folder, *, seed: int = 42) -> Path:
    from transformers import MT5Config, MT5ForConditionalGeneration

    folder = Path(folder)
    V = _t5_tokenizer(folder)
    m = MT5ForConditionalGeneration(MT5Config(vocab_size=V, d_model=32, d_kv=8, d_ff=48, num_layers=2, num_heads=4,
                                              relative_attention_num_buckets=8, relative_attention_max_distance=20,
                                              pad_token_id=0, eos_token_id=1, decoder_start_token_id=0))
    randomise(m, seed)
    return save(m, folder)


def _bart(folder: Path, vocab_size: int, seed: int, **kw) -> Path:
    from transformers import BartConfig, BartForConditionalGeneration

    gen = kw.pop("generation")
    m = BartForConditionalGeneration(BartConfig(vocab_size=vocab_size, d_model=32, encoder_layers=2, decoder_layers=2,
                                                encoder_attention_heads=4, decoder_attention_heads=4,
                                                encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64,
                                                **kw))
    randomise(m, seed)
    with torch.no_grad():
        m.final_logits_bias.copy_(0.5 * torch.randn(m.final_logits_bias.shape, generator=torch.Generator().manual_seed(seed)))
    for k, v in gen.items():
        setattr(m.generation_config, k, v)
    return save(m, folder)


@seq2seq_family("bart", names=("embed.positions",))
def bart(folder, *, seed: int = 43) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    vocab = _train_bpe(folder, ["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    return _bart(folder, len(vocab), seed, pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2,
                 forced_eos_token_id=2, generation={"forced_bos_token_id": 0, "no_repeat_ngram_size": 3})


@seq2seq_family("bart_zh", lang="zh", names=("embed.positions",))
def bart_zh(folder, *, seed: int = 44) -> Path:
    folder = Path(folder)
    V = chinese_vocab(folder)
    return _bart(folder, V, seed, pad_token_id=0, bos_token_id=101, eos_token_id=102, decoder_start_token_id=102,
                 forced_eos_token_id=102, scale_embedding=True,
                 generation={"min_length": 6, "repetition_penalty": 1.5})


#: name → (builder, language of its vocabulary): every checkpoint this module registers
BUILDERS: dict[str, tuple[Callable[..., Path], str]] = {name: (f.build, f.lang) for name, f in FAMILIES.items()
                                                        if getattr(f.build, "__module__", None) == __name__}


def hf_seq2seq(folder):
    """transformers' eager ``…ForConditionalGeneration`` of a folder."""
    import transformers

    transformers.logging.set_verbosity_error()
    return transformers.AutoModelForSeq2SeqLM.from_pretrained(str(folder), attn_implementation="eager").eval()
