"""The trace names are public API: this test pins them."""

import attnscope
from attnscope import TRACE_NAMES
from attnscope.hooks import HookPoint

PINNED = (
    "embed.tokens", "embed.segments", "embed.positions", "embed.out", "embed.projected",
    "layers.{i}.attn_in",
    "layers.{i}.attn.q_proj", "layers.{i}.attn.k_proj", "layers.{i}.attn.q_normed", "layers.{i}.attn.k_normed",
    "layers.{i}.attn.q", "layers.{i}.attn.k", "layers.{i}.attn.v",
    "layers.{i}.attn.pos_q", "layers.{i}.attn.pos_k",
    "layers.{i}.attn.scores_c2c", "layers.{i}.attn.scores_c2p", "layers.{i}.attn.scores_p2c", "layers.{i}.attn.bias",
    "layers.{i}.attn.mask",
    "layers.{i}.attn.scores", "layers.{i}.attn.scaled", "layers.{i}.attn.masked", "layers.{i}.attn.weights",
    "layers.{i}.attn.z", "layers.{i}.attn.merged", "layers.{i}.attn.out", "layers.{i}.attn_post_norm",
    "layers.{i}.attn_resid", "layers.{i}.ffn_in", "layers.{i}.ffn.gate", "layers.{i}.ffn.hidden", "layers.{i}.ffn.out",
    "layers.{i}.ffn_post_norm", "layers.{i}.ffn_resid", "layers.{i}.out",
    "final_norm",
)
#: DeBERTa's relative terms (``bias`` is T5's relative position bias too)
RELATIVE = ("attn.pos_q", "attn.pos_k", "attn.scores_c2c", "attn.scores_c2p", "attn.scores_p2c", "attn.bias")
#: names only the decoders of the Llama kind have
DECODER = ("attn.q_proj", "attn.k_proj", "attn.q_normed", "attn.k_normed", "attn.mask", "attn_post_norm",
           "ffn.gate", "ffn_post_norm")
LAYER = [t.split("{i}.")[1] for t in PINNED if "{i}" in t and t.split("{i}.")[1] not in DECODER + RELATIVE]
#: a Llama/Qwen2/Mistral layer; Gemma 3 adds QK-norm and its sandwich norms
LLAMA_LAYER = [t.split("{i}.")[1] for t in PINNED if "{i}" in t and t.split("{i}.")[1] not in
               ("attn.q_normed", "attn.k_normed", "attn_post_norm", "ffn_post_norm") + RELATIVE]
GEMMA_LAYER = [t.split("{i}.")[1] for t in PINNED if "{i}" in t and t.split("{i}.")[1] not in RELATIVE]


def test_trace_names_are_pinned():
    assert TRACE_NAMES == PINNED
    assert attnscope.trace.HEAD_STEPS == ("q", "k", "v", "scores", "scaled", "masked", "weights", "z")
    assert attnscope.trace.names.PRE_ROTARY_STEPS == ("q_proj", "k_proj", "q_normed", "k_normed")
    assert attnscope.trace.names.KV_STEPS == ("k_proj", "k_normed", "k", "v")
    assert attnscope.trace.names.SCORE_TERM_STEPS == ("pos_q", "pos_k", "scores_c2c", "scores_c2p", "scores_p2c", "bias")


def test_minilm_names_in_forward_order(minilm):
    expected = ["embed.tokens", "embed.segments", "embed.positions", "embed.out"]
    expected += [f"layers.{i}.{s}" for i in range(6) for s in LAYER]
    assert minilm.hook_names == expected  # BERT has no final LayerNorm
    assert len(expected) == 4 + 6 * 17


def test_gpt2_names(tiny_models):
    names = tiny_models["gpt2"].hook_names
    assert names[:3] == ["embed.tokens", "embed.positions", "embed.out"]  # no segments
    assert names[-1] == "final_norm" and len(names) == 3 + 2 * 17 + 1


def test_every_name_is_a_hook_point_and_is_recorded(tiny_models):
    for model in tiny_models.values():
        points = {n for n, m in model.named_modules() if isinstance(m, HookPoint)}
        assert set(model.hook_names) <= points
        tr = model.trace(["a b", "a b c d"])  # names=None: everything
        assert tr.names == model.hook_names  # recorded in forward order


def test_decoder_names_only_those_that_fire(decoders):
    llama, gemma = decoders["llama_gqa"], decoders["gemma3"]
    assert llama.hook_names == ["embed.tokens", "embed.out"] + [f"layers.{i}.{s}" for i in range(2) for s in LLAMA_LAYER] \
        + ["final_norm"]  # no segments, no position embedding (rotary acts on q and k)
    assert gemma.hook_names == ["embed.tokens", "embed.out"] + [f"layers.{i}.{s}" for i in range(3) for s in GEMMA_LAYER] \
        + ["final_norm"]
    for model in decoders.values():
        points = {n for n, m in model.named_modules() if isinstance(m, HookPoint)}
        assert set(model.hook_names) == points  # every hook point is a name, every name a hook point
        tr = model.trace(["a b", "a b c d"])
        assert tr.names == model.hook_names


def test_encoder_family_names(encoders):
    """ALBERT/ELECTRA add ``embed.projected`` when E ≠ d_model; DeBERTa its relative terms (only those
    of its ``pos_att_type``) and no ``embed.positions`` without absolute positions."""
    def layer(model, extra=()):
        return [f"layers.{i}.{s}" for i in range(model.config.n_layers) for s in LAYER[:4] + list(extra) + LAYER[4:]]
    albert, electra_zh, distil = encoders["albert"], encoders["electra_zh"], encoders["distilbert"]
    assert albert.hook_names == ["embed.tokens", "embed.segments", "embed.positions", "embed.out", "embed.projected"] \
        + layer(albert)
    assert electra_zh.hook_names == ["embed.tokens", "embed.segments", "embed.positions", "embed.out"] + layer(electra_zh)
    assert distil.hook_names == ["embed.tokens", "embed.positions", "embed.out"] + layer(distil)
    v3, v2, c2p = encoders["deberta_v3"], encoders["deberta_v2"], encoders["deberta_c2p"]
    assert v3.hook_names == ["embed.tokens", "embed.out"] + layer(v3, RELATIVE)
    # in TRACE_NAMES' order (DeBERTa projects before its LayerNorm, so embed.projected runs first)
    assert v2.hook_names == ["embed.tokens", "embed.segments", "embed.positions", "embed.out", "embed.projected"] \
        + layer(v2, RELATIVE)
    assert c2p.hook_names == ["embed.tokens", "embed.out"] + layer(c2p, ("attn.pos_k", "attn.scores_c2c",
                                                                       "attn.scores_c2p", "attn.bias"))
    for model in encoders.values():
        points = {n for n, m in model.named_modules() if isinstance(m, HookPoint)}
        assert set(model.hook_names) <= points  # (equal since names are read from the tree: test_names_pin.py)
        if model.family == "deberta-v2":
            assert set(model.hook_names) == points
        tr = model.trace(["a b", "a b c d"])
        assert set(tr.names) == set(model.hook_names)
    tr = v3.trace("a b c", names=["layers.1.attn.scores_p2c[2]", "layers.0.attn.bias[0]"])
    n = tr.lengths[0]
    assert tr["layers.1.attn.scores_p2c[2]"].shape == tr["layers.0.attn.bias[0]"].shape == (1, n, n)


SEQ2SEQ_PINNED = (
    "encoder.embed.tokens", "encoder.embed.positions", "encoder.embed.out",
    "encoder.layers.{i}.attn_in",
    "encoder.layers.{i}.attn.q", "encoder.layers.{i}.attn.k", "encoder.layers.{i}.attn.v", "encoder.layers.{i}.attn.bias",
    "encoder.layers.{i}.attn.scores", "encoder.layers.{i}.attn.scaled", "encoder.layers.{i}.attn.masked",
    "encoder.layers.{i}.attn.weights", "encoder.layers.{i}.attn.z", "encoder.layers.{i}.attn.merged",
    "encoder.layers.{i}.attn.out", "encoder.layers.{i}.attn_resid", "encoder.layers.{i}.ffn_in",
    "encoder.layers.{i}.ffn.gate", "encoder.layers.{i}.ffn.hidden", "encoder.layers.{i}.ffn.out",
    "encoder.layers.{i}.ffn_resid", "encoder.layers.{i}.out", "encoder.final_norm",
    "decoder.embed.tokens", "decoder.embed.positions", "decoder.embed.out",
    "decoder.layers.{i}.self_attn_in",
    "decoder.layers.{i}.self_attn.q", "decoder.layers.{i}.self_attn.k", "decoder.layers.{i}.self_attn.v",
    "decoder.layers.{i}.self_attn.bias", "decoder.layers.{i}.self_attn.scores", "decoder.layers.{i}.self_attn.scaled",
    "decoder.layers.{i}.self_attn.masked", "decoder.layers.{i}.self_attn.weights", "decoder.layers.{i}.self_attn.z",
    "decoder.layers.{i}.self_attn.merged", "decoder.layers.{i}.self_attn.out", "decoder.layers.{i}.self_attn_resid",
    "decoder.layers.{i}.cross_attn_in",
    "decoder.layers.{i}.cross_attn.q", "decoder.layers.{i}.cross_attn.k", "decoder.layers.{i}.cross_attn.v",
    "decoder.layers.{i}.cross_attn.scores", "decoder.layers.{i}.cross_attn.scaled", "decoder.layers.{i}.cross_attn.masked",
    "decoder.layers.{i}.cross_attn.weights", "decoder.layers.{i}.cross_attn.z", "decoder.layers.{i}.cross_attn.merged",
    "decoder.layers.{i}.cross_attn.out", "decoder.layers.{i}.cross_attn_resid",
    "decoder.layers.{i}.ffn_in", "decoder.layers.{i}.ffn.gate", "decoder.layers.{i}.ffn.hidden", "decoder.layers.{i}.ffn.out",
    "decoder.layers.{i}.ffn_resid", "decoder.layers.{i}.out", "decoder.final_norm",
)


def test_seq2seq_names_are_pinned(seq2seq):
    assert attnscope.trace.names.SEQ2SEQ_NAMES == SEQ2SEQ_PINNED
    t5, v11, bart = seq2seq["t5"], seq2seq["t5_v11"], seq2seq["bart"]

    def stack(model, prefix, n, drop):
        ts = [t for t in SEQ2SEQ_PINNED if t.startswith(prefix) and not any(t.endswith(d) for d in drop)]
        return [t for t in ts if "{i}" not in t and "final" not in t] + \
            [t.format(i=i) for i in range(n) for t in ts if "{i}" in t] + [t for t in ts if "final" in t]
    t5_drop = ("embed.positions", "ffn.gate")  # relative positions; v1.0's relu FFN
    assert t5.hook_names == stack(t5, "encoder.", 2, t5_drop) + stack(t5, "decoder.", 3, t5_drop)
    assert v11.hook_names == stack(v11, "encoder.", 2, ("embed.positions",)) + stack(v11, "decoder.", 2, ("embed.positions",))
    bart_drop = (".bias", "ffn.gate", "final_norm")  # no score bias, no gated FFN, post-LN without final norms
    assert bart.hook_names == stack(bart, "encoder.", 2, bart_drop) + stack(bart, "decoder.", 2, bart_drop)
    for model in (t5, v11, bart):
        points = [n for n, m in model.named_modules() if isinstance(m, HookPoint)]
        assert points == model.hook_names  # every hook point is a name, in forward order
        tr = model.trace(["a b", "a b c d"], ["x", "y z"])
        assert tr.names == model.hook_names
    tr = t5.trace("a b c", "x y", names=["decoder.layers.*.cross_attn.weights[2]", "encoder.layers.1.attn.bias[0]"])
    assert tr["decoder.layers.2.cross_attn.weights[2]"].shape == (1, tr.target_lengths[0], tr.lengths[0])
