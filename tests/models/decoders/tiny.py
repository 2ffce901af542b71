"""Tiny random decoder checkpoints written by ``transformers``, and a runner of transformers'
eager model on them, for the decoder families' parity tests.

Each builder writes ``config.json`` + ``model.safetensors`` (``save_pretrained``) + a
``tokenizer.json`` (a byte-level BPE trained here, with ``<bos>``/``<eos>``/``<pad>``) into a
folder and returns it. Every parameter is random (norm scales 1 + N(0, 0.1²), Gemma's 0 + N(0, 0.1²)
since it multiplies by 1 + w), so a swapped, transposed or unpermuted weight cannot go unnoticed.
Sizes are tiny (2–3 layers, d_model 32–64) so that a float64 forward takes milliseconds.

=====================  ===============================================================================
builder                what it exercises
=====================  ===============================================================================
``llama_gqa``          8 query heads sharing 2 k/v heads (4:1), RoPE base 10 000
``llama_mqa``          4 query heads, 1 k/v head (multi-query)
``llama3_scaled``      Llama 3 ``rope_type: "llama3"`` scaling (factor 8, low 1, high 4, original 16
                       positions, so the scaling bends frequencies a 64-token text reaches)
``qwen2_window``       q/k/v biases, ``use_sliding_window: true`` (window 6, layers ≥ 1 windowed)
``qwen2_full``         q/k/v biases, ``use_sliding_window: false`` (a window size is set but off)
``mistral_window``     ``sliding_window: 5``, shorter than the test texts
``gemma3``             QK-norm, ``layer_types`` [sliding, sliding, full], window 6, two RoPE bases
                       (local 10 000, global 1 000 000), ``query_pre_attn_scalar`` 24 ≠ head_dim 16
``qwen3``              QK-norm per head, ``head_dim`` 16 ≠ d_model / heads, ``attention_bias`` (q, k, v, o)
``olmo2``              norms after attention and the MLP only (``post_block``), QK-norm over all heads
                       (q_norm of 4·8, k_norm of 2·8 features)
=====================  ===============================================================================

Each builder registers with ``@decoder_family(name)`` (:func:`attnscope.testing.tiny.tiny_family`):
:data:`BUILDERS`, the parity tests and the family battery (tests/models/test_family_battery.py)
take it from there.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Callable, Optional

import torch

from attnscope.testing.tiny import DECODER_NAMES, FAMILIES, POST_NORMS, QK_NORM, tiny_family

SPECIAL = ["<pad>", "<bos>", "<eos>", "<unk>"]
CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "Attention is all you need, said the paper in 2017.",
    "Every token looks at the tokens before it and decides how much to listen.",
    "Queries and keys are rotated by their positions before the dot product.",
    "Grouped-query attention lets several query heads share one key and value head.",
    "A sliding window keeps each token's view to the most recent few tokens.",
    "我喜欢人工智能。北京是中国的首都。",
] * 3


def write_tokenizer(folder: Path, vocab_size: int = 300) -> Path:
    """A byte-level BPE ``tokenizer.json`` with ids 0–3 = <pad> <bos> <eos> <unk>; encoding adds <bos>."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS, trainer=trainer)
    tok.post_processor = processors.TemplateProcessing(single="<bos> $A", pair="<bos> $A <bos> $B",
                                                       special_tokens=[("<bos>", 1)])
    path = Path(folder) / "tokenizer.json"
    tok.save(str(path))
    return path


def randomise(model: torch.nn.Module, seed: int, *, one_plus_w_norms: bool = False) -> None:
    """Every parameter random: weights N(0, 0.15²); norm scales 1 + N(0, 0.1²) (N(0, 0.1²) for
    Gemma, whose RMSNorm multiplies by 1 + w)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g, dtype=torch.float32).to(p.dtype)
            if "norm" in name:
                p.copy_((0.0 if one_plus_w_norms else 1.0) + 0.1 * noise)
            else:
                p.copy_(0.15 * noise)


def _save(model, folder: Path, vocab_size: int) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model.eval()
    model.save_pretrained(str(folder))
    write_tokenizer(folder, vocab_size)
    return folder


VOCAB = 300
#: Registers a causal LM of this module (:func:`attnscope.testing.tiny.tiny_family`), so that the family
#: battery runs it; the byte-level BPE reads English and Chinese (:data:`CORPUS`).
decoder_family = partial(tiny_family, hf_class="AutoModelForCausalLM", lang="en+zh", lm_head=True,
                         names=DECODER_NAMES)
_COMMON = dict(vocab_size=VOCAB, max_position_embeddings=128, bos_token_id=1, eos_token_id=2, pad_token_id=0,
               tie_word_embeddings=False, rms_norm_eps=1e-6)


@decoder_family("llama_gqa")
def llama_gqa(folder, *, seed: int = 10) -> Path:
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=8,
                      num_key_value_heads=2, head_dim=8, **_COMMON)
    m = LlamaForCausalLM(cfg)
    randomise(m, seed)
    return _save(m, folder, VOCAB)


@decoder_family("llama_mqa")
def llama_mqa(folder, *, seed: int = 11) -> Path:
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=1, **dict(_COMMON, tie_word_embeddings=True))
    m = LlamaForCausalLM(cfg)
    randomise(m, seed)
    return _save(m, folder, VOCAB)


@decoder_family("llama3_scaled")
def llama3_scaled(folder, *, seed: int = 12) -> Path:
    from transformers import LlamaConfig, LlamaForCausalLM

    rope = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 16}
    cfg = LlamaConfig(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, rope_parameters=rope, **_COMMON)
    m = LlamaForCausalLM(cfg)
    randomise(m, seed)
    return _save(m, folder, VOCAB)


def llama_rope_scaled(folder, *, seed: int, rope: dict) -> Path:
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, rope_parameters=rope, **_COMMON)
    m = LlamaForCausalLM(cfg)
    randomise(m, seed)
    return _save(m, folder, VOCAB)


@decoder_family("llama_linear")
def llama_linear(folder, *, seed: int = 17) -> Path:
    """Linear RoPE scaling (positions divided by the factor)."""
    return llama_rope_scaled(folder, seed=seed, rope={"rope_type": "linear", "rope_theta": 10000.0, "factor": 4.0})


@decoder_family("llama_dynamic")
def llama_dynamic(folder, *, seed: int = 18) -> Path:
    """Dynamic NTK scaling: the base grows once a text is longer than max_position_embeddings
    (128 here; the parity test's long text stays below it, so a longer one is tested apart)."""
    return llama_rope_scaled(folder, seed=seed, rope={"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0})


@decoder_family("qwen2_window")
def qwen2_window(folder, *, seed: int = 13, use_sliding_window: bool = True) -> Path:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = Qwen2Config(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, use_sliding_window=use_sliding_window, sliding_window=6,
                      max_window_layers=1, rope_parameters={"rope_type": "default", "rope_theta": 1e6}, **_COMMON)
    m = Qwen2ForCausalLM(cfg)
    randomise(m, seed)
    return _save(m, folder, VOCAB)


@decoder_family("qwen2_full")
def qwen2_full(folder, *, seed: int = 14) -> Path:
    return qwen2_window(folder, seed=seed, use_sliding_window=False)


@decoder_family("mistral_window")
def mistral_window(folder, *, seed: int = 15) -> Path:
    from transformers import MistralConfig, MistralForCausalLM

    cfg = MistralConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                        num_key_value_heads=2, head_dim=8, sliding_window=5, **_COMMON)
    m = MistralForCausalLM(cfg)
    randomise(m, seed)
    return _save(m, folder, VOCAB)


@decoder_family("gemma3", names=DECODER_NAMES + QK_NORM + POST_NORMS)
def gemma3(folder, *, seed: int = 16) -> Path:
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    rope = {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": "default", "rope_theta": 1000000.0}}
    cfg = Gemma3TextConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=3, num_attention_heads=4,
                           num_key_value_heads=2, head_dim=16, sliding_window=6, query_pre_attn_scalar=24,
                           layer_types=["sliding_attention", "sliding_attention", "full_attention"],
                           rope_parameters=rope, **dict(_COMMON, tie_word_embeddings=True))
    m = Gemma3ForCausalLM(cfg)
    randomise(m, seed, one_plus_w_norms=True)
    return _save(m, folder, VOCAB)


@decoder_family("qwen3", names=DECODER_NAMES + QK_NORM)
def qwen3(folder, *, seed: int = 19) -> Path:
    from transformers import Qwen3Config, Qwen3ForCausalLM

    cfg = Qwen3Config(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, head_dim=16, attention_bias=True,
                      rope_parameters={"rope_type": "default", "rope_theta": 1e6}, **_COMMON)
    m = Qwen3ForCausalLM(cfg)
    randomise(m, seed)
    return _save(m, folder, VOCAB)


@decoder_family("olmo2", names=DECODER_NAMES + QK_NORM + POST_NORMS)
def olmo2(folder, *, seed: int = 20) -> Path:
    from transformers import Olmo2Config, Olmo2ForCausalLM

    cfg = Olmo2Config(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
                      **_COMMON)
    m = Olmo2ForCausalLM(cfg)
    randomise(m, seed)
    return _save(m, folder, VOCAB)


#: name → builder(folder) → folder: every checkpoint this module registers (:func:`decoder_family`)
BUILDERS: dict[str, Callable[..., Path]] = {name: f.build for name, f in FAMILIES.items()
                                            if getattr(f.build, "__module__", None) == __name__}


def build_all(root) -> dict[str, Path]:
    root = Path(root)
    return {name: build(root / name) for name, build in BUILDERS.items()}


def hf_model(folder, *, dtype: torch.dtype = torch.float32):
    """transformers' eager model of a folder (or of a ``.gguf`` file), in ``dtype`` (float64 via ``.double()``)."""
    import transformers

    transformers.logging.set_verbosity_error()
    folder = Path(folder)
    if folder.suffix == ".gguf":
        m = transformers.AutoModelForCausalLM.from_pretrained(str(folder.parent), gguf_file=folder.name,
                                                              attn_implementation="eager")
    else:
        m = transformers.AutoModelForCausalLM.from_pretrained(str(folder), attn_implementation="eager",
                                                              dtype=torch.float32)
    m = m.eval()
    return m.double() if dtype == torch.float64 else m.to(dtype)


def hf_run(model_or_folder, input_ids: torch.Tensor, attention_mask: Optional[torch.Tensor] = None, *,
           dtype: torch.dtype = torch.float32, logits_to_keep: Optional[torch.Tensor] = None) -> dict:
    """transformers eager forward with ``output_attentions`` and ``output_hidden_states``.

    Args:
        model_or_folder: a model from :func:`hf_model` (cast to ``dtype`` here) or a folder / .gguf path.
        input_ids: (B, L) int64.
        attention_mask: (B, L) 1/0, default all ones.
        dtype: torch.float32 or torch.float64.
        logits_to_keep: (R,) positions whose logits are computed (transformers' own argument), or
            None for every position.

    Returns a dict:
        ``attentions``: list over layers of (B, H, L, L) weights, per query head;
        ``hidden_states``: list of n_layers + 1 tensors (B, L, d): the embeddings (Gemma: already
        scaled by sqrt(d)), each block's output, the last one after the final norm (transformers'
        convention);
        ``logits``: (B, L, V), or (B, R, V) with ``logits_to_keep``.
    """
    model = model_or_folder if isinstance(model_or_folder, torch.nn.Module) else hf_model(model_or_folder, dtype=dtype)
    model = model.double() if dtype == torch.float64 else model.to(dtype)
    if attention_mask is None:
        attention_mask = torch.ones_like(input_ids)
    extra = {} if logits_to_keep is None else {"logits_to_keep": logits_to_keep}
    with torch.no_grad():
        out = model(input_ids=input_ids, attention_mask=attention_mask, output_attentions=True,
                    output_hidden_states=True, use_cache=False, **extra)
    return {"attentions": list(out.attentions), "hidden_states": list(out.hidden_states), "logits": out.logits}


def max_abs_diff(a: dict, b: dict) -> dict:
    """Largest |a − b| of attention weights, hidden states and logits of two :func:`hf_run` results."""
    def one(x, y, rows: int = 32):  # a few rows at a time: a 630-token Gemma's logits are 1.3 GB in float64
        return max((float((x[:, i:i + rows].double() - y[:, i:i + rows].double()).abs().max())
                    for i in range(0, x.shape[1], rows)), default=0.0)

    def m(xs, ys):
        return max(one(x, y) for x, y in zip(xs, ys))
    return {"attentions": m(a["attentions"], b["attentions"]), "hidden_states": m(a["hidden_states"], b["hidden_states"]),
            "logits": one(a["logits"], b["logits"])}
