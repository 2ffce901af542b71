"""config.json of the real checkpoints (bert-base-chinese, roberta-base, gpt2) translate into the
architecture they describe; unsupported settings are refused by name."""

import pytest

from attnscope import ModelLoadError
from attnscope.models.registry import family_for

BERT_BASE_CHINESE = {
    "architectures": ["BertForMaskedLM"], "attention_probs_dropout_prob": 0.1, "directionality": "bidi",
    "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 768, "initializer_range": 0.02,
    "intermediate_size": 3072, "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "bert",
    "num_attention_heads": 12, "num_hidden_layers": 12, "pad_token_id": 0, "pooler_fc_size": 768,
    "pooler_num_attention_heads": 12, "pooler_num_fc_layers": 3, "pooler_size_per_head": 128,
    "pooler_type": "first_token_transform", "type_vocab_size": 2, "vocab_size": 21128,
}
ROBERTA_BASE = {
    "architectures": ["RobertaForMaskedLM"], "attention_probs_dropout_prob": 0.1, "bos_token_id": 0,
    "eos_token_id": 2, "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 768,
    "initializer_range": 0.02, "intermediate_size": 3072, "layer_norm_eps": 1e-05, "max_position_embeddings": 514,
    "model_type": "roberta", "num_attention_heads": 12, "num_hidden_layers": 12, "pad_token_id": 1,
    "type_vocab_size": 1, "vocab_size": 50265,
}
GPT2 = {
    "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1, "bos_token_id": 50256,
    "embd_pdrop": 0.1, "eos_token_id": 50256, "initializer_range": 0.02, "layer_norm_epsilon": 1e-05,
    "model_type": "gpt2", "n_ctx": 1024, "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024,
    "resid_pdrop": 0.1, "vocab_size": 50257,
}


def _config(hf):
    return family_for(hf["model_type"]).config_from_hf(hf, "config.json")


def test_bert_base_chinese():
    c = _config(BERT_BASE_CHINESE)
    assert (c.vocab_size, c.d_model, c.n_heads, c.d_head, c.n_layers, c.d_ff) == (21128, 768, 12, 64, 12, 3072)
    assert (c.norm, c.embed_norm, c.final_norm, c.causal, c.activation) == ("post", True, False, False, "gelu")
    assert c.max_positions == 512 and c.type_vocab_size == 2


def test_roberta_base_positions():
    c = _config(ROBERTA_BASE)
    assert (c.max_positions, c.position_offset, c.pad_token_id, c.type_vocab_size) == (512, 2, 1, 1)
    assert c.layer_norm_eps == 1e-5


def test_gpt2_small():
    c = _config(GPT2)
    assert (c.vocab_size, c.d_model, c.n_heads, c.n_layers, c.d_ff, c.max_positions) == (50257, 768, 12, 12, 3072, 1024)
    got = (c.norm, c.embed_norm, c.final_norm, c.causal, c.activation, c.type_vocab_size)
    assert got == ("pre", False, True, True, "gelu_tanh", 0)
    assert c.pad_token_id == 50256  # no padding token: padded positions hold eos and are masked


@pytest.mark.parametrize("hf,change,message", [
    (BERT_BASE_CHINESE, {"hidden_act": "swish"}, r"config\.json: activation 'swish' is not supported"),
    (BERT_BASE_CHINESE, {"hidden_size": "768"}, r"config\.json: 'hidden_size' must be an integer, got '768'"),
    (BERT_BASE_CHINESE, {"is_decoder": True}, r"is_decoder / add_cross_attention are not supported"),
    (GPT2, {"scale_attn_by_inverse_layer_idx": True}, r"scale_attn_by_inverse_layer_idx is not supported"),
    (BERT_BASE_CHINESE, {"vocab_size": None}, r"config\.json: missing 'vocab_size'"),
])
def test_refused_settings(hf, change, message):
    with pytest.raises(ModelLoadError, match=message):
        _config({**hf, **change})


def test_unscaled_gpt2_is_run_unscaled():
    assert _config({**GPT2, "scale_attn_weights": False}).scoring == "unscaled"


ALIASED = {  # a config.json spelled with transformers' attribute_map names only (its canonical keys left out)
    "bloom": {"model_type": "bloom", "vocab_size": 64, "n_embed": 48, "num_attention_heads": 6, "num_hidden_layers": 3},
    "gpt2": {"model_type": "gpt2", "vocab_size": 64, "hidden_size": 48, "num_attention_heads": 6,
             "num_hidden_layers": 3, "max_position_embeddings": 40},
    "distilbert": {"model_type": "distilbert", "vocab_size": 64, "hidden_size": 48, "num_attention_heads": 6,
                   "num_hidden_layers": 3},
    "t5": {"model_type": "t5", "vocab_size": 64, "hidden_size": 48, "num_attention_heads": 6, "num_hidden_layers": 3,
           "head_dim": 10},
    "bart": {"model_type": "bart", "vocab_size": 64, "hidden_size": 48, "num_attention_heads": 16,
             "num_hidden_layers": 3},
}


@pytest.mark.parametrize("name", list(ALIASED))
def test_sizes_spelled_with_transformers_aliases(name):
    """transformers reads ``num_attention_heads`` as GPT-2's n_head, T5's num_heads, … (each config
    class's attribute_map; BLOOM's Hub configs are spelled so); they were ignored and the model built
    with the default sizes (BLOOM: 8 heads, 2 layers) — a head count whose weights have the same shape."""
    import transformers

    hf = ALIASED[name]
    ref = transformers.AutoConfig.for_model(**hf)
    c = _config(hf)
    assert (c.n_heads, c.n_layers, c.d_model) == (ref.num_attention_heads, ref.num_hidden_layers, ref.hidden_size)
    if name == "gpt2":
        assert c.max_positions == ref.max_position_embeddings == 40
    if name == "t5":
        assert c.d_head == ref.d_kv == 10


def test_gemma3_pattern_is_read_from_sliding_window_pattern():
    """Without layer_types, transformers' Gemma3TextConfig takes the pattern from
    ``sliding_window_pattern`` and ignores the ``_sliding_window_pattern`` it writes itself (6 here,
    its default); the latter won, making every layer of this 4-layer config sliding."""
    import transformers

    hf = {"model_type": "gemma3_text", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 64,
          "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8,
          "sliding_window": 5, "sliding_window_pattern": 2, "_sliding_window_pattern": 6}
    want = transformers.AutoConfig.for_model(**hf).layer_types
    assert want == ["sliding_attention", "full_attention"] * 2
    assert _config(hf).layer_types == [t.split("_")[0] for t in want]


LLAMA = {"model_type": "llama", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2}
GEMMA3 = {"model_type": "gemma3_text", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 64,
          "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8,
          "sliding_window": 5, "layer_types": ["sliding_attention", "full_attention"]}


@pytest.mark.parametrize("hf", [
    # a dict without its own rope_theta takes the top-level one (it took the default, 10 000)
    {**LLAMA, "rope_parameters": {"rope_type": "default"}, "rope_theta": 500.0},
    # rope_scaling wins over rope_parameters (it was ignored)
    {**LLAMA, "rope_parameters": {"rope_type": "default", "rope_theta": 1e4},
     "rope_scaling": {"rope_type": "linear", "factor": 4.0}, "rope_theta": 500.0},
    # the dict's own rope_theta wins over the top-level one (the top-level one won)
    {**LLAMA, "rope_scaling": {"rope_type": "linear", "factor": 2.0, "rope_theta": 2000.0}, "rope_theta": 500.0},
    # Gemma 3: rope_scaling and the top-level rope_theta fill the full layers' dict
    {**GEMMA3, "rope_parameters": {"full_attention": {"rope_type": "default"},
                                   "sliding_attention": {"rope_type": "default"}},
     "rope_theta": 5e5, "rope_local_base_freq": 2e3, "rope_scaling": {"rope_type": "linear", "factor": 8.0}},
])
def test_rope_settings_take_transformers_precedence(hf):
    """Where a config spells RoPE twice, the values are the ones transformers' config class settles on."""
    import copy

    import transformers

    ref = transformers.AutoConfig.for_model(**copy.deepcopy(hf)).rope_parameters
    full = ref.get("full_attention", ref)
    c = _config(hf)
    assert c.rope_theta == full["rope_theta"]
    assert (c.rope_scaling or {}).get("rope_type", "default") == full["rope_type"]
    assert (c.rope_scaling or {}).get("factor") == full.get("factor")
    if "sliding_attention" in ref:
        assert c.rope_local_theta == ref["sliding_attention"]["rope_theta"]


def test_gemma3_query_scale_defaults_as_transformers():
    """A Gemma 3 config without query_pre_attn_scalar scales scores by 256^(−1/2), transformers'
    default, whatever head_dim is (it took head_dim: 8^(−1/2) here, scores 5.7 times too large)."""
    import transformers

    hf = {k: v for k, v in GEMMA3.items()}
    ref = transformers.AutoConfig.for_model(**hf)
    assert _config(hf).query_scale == ref.query_pre_attn_scalar ** -0.5 == 256 ** -0.5


@pytest.mark.parametrize("window", ["absent", None, 7])
def test_mistral_window_defaults_as_transformers(window):
    """A Mistral config without sliding_window windows every layer at 4096, transformers' default (it
    ran with no window); ``null`` turns the window off."""
    import transformers

    hf = {**LLAMA, "model_type": "mistral", "max_position_embeddings": 8192}
    if window != "absent":
        hf["sliding_window"] = window
    ref = transformers.AutoConfig.for_model(**hf)
    c = _config(hf)
    assert c.sliding_window == ref.sliding_window
    assert c.layer_types == (None if ref.sliding_window is None else ["sliding"] * 2)


SIZES = {"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2, "intermediate_size": 64}
MINIMAL = {t: {"model_type": t, "vocab_size": 1000} for t in (
    "bert", "roberta", "xlm-roberta", "albert", "electra", "distilbert", "deberta-v2", "gpt2", "bloom", "t5", "mt5",
    "bart")}
MINIMAL.update({t: {"model_type": t, "vocab_size": 1000, **SIZES} for t in (
    "llama", "qwen2", "qwen3", "mistral", "olmo2", "gemma3_text")})


@pytest.mark.parametrize("model_type", list(MINIMAL))
def test_what_a_config_leaves_out_is_transformers_default(model_type):
    """Sizes, activation and ε that a config.json leaves out take the defaults of transformers' config
    class of that model_type. ALBERT took BERT's (12 heads for AlbertConfig's 64, gelu for gelu_new),
    ELECTRA too (12 heads for 4), mT5 T5's (8 heads, 6 layers, relu for 6, 8, gated-gelu) and RoBERTa
    ε 1e-5 for 1e-12 — a head count or an activation that no weight shape contradicts."""
    import transformers

    from attnscope.models.registry import HF_ACTIVATIONS

    hf = MINIMAL[model_type]
    ref = transformers.AutoConfig.for_model(**dict(hf))
    c = _config(dict(hf))

    def first(*names):
        return next(getattr(ref, n) for n in names if getattr(ref, n, None) is not None)

    assert (c.d_model, c.n_heads, c.n_layers) == (ref.hidden_size, ref.num_attention_heads, ref.num_hidden_layers)
    d_ff = 4 * ref.hidden_size if model_type == "bloom" else \
        first("intermediate_size", "n_inner", "hidden_dim", "d_ff", "encoder_ffn_dim") if model_type != "gpt2" \
        else (ref.n_inner or 4 * ref.hidden_size)
    assert c.d_ff == d_ff
    if model_type in ("t5", "mt5"):
        assert (c.activation, c.gated_ffn) == (HF_ACTIVATIONS[ref.dense_act_fn], ref.is_gated_act)
    elif model_type == "bloom":  # BloomGelu: the tanh GELU, whatever the config says
        assert c.activation == "gelu_tanh"
    else:
        act = first("hidden_activation", "hidden_act", "activation_function", "activation")
        assert c.activation == HF_ACTIVATIONS[act]
    if model_type not in ("distilbert", "bart"):  # their LayerNorms do not read the config
        assert c.layer_norm_eps == first("layer_norm_eps", "layer_norm_epsilon", "rms_norm_eps")
    if model_type in ("albert", "electra"):
        assert (c.embedding_size or c.d_model) == ref.embedding_size


def test_gemma3_activation_is_hidden_activation_only():
    """Gemma 3 runs ``hidden_activation`` (default gelu_pytorch_tanh) and never reads ``hidden_act``
    (Gemma 1's key, exact GELU); a config carrying only hidden_act ran exact GELU instead of tanh's."""
    import transformers

    from attnscope.models.registry import HF_ACTIVATIONS

    hf = {**GEMMA3, "hidden_act": "gelu"}
    ref = transformers.AutoConfig.for_model(**hf)
    assert _config(hf).activation == HF_ACTIVATIONS[ref.hidden_activation] == "gelu_tanh"
