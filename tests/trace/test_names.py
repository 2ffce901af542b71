"""The trace names are public API: this test pins them."""

import attnscope
from attnscope import TRACE_NAMES
from attnscope.hooks import HookPoint

PINNED = (
    "embed.tokens", "embed.segments", "embed.positions", "embed.out",
    "layers.{i}.attn_in",
    "layers.{i}.attn.q", "layers.{i}.attn.k", "layers.{i}.attn.v",
    "layers.{i}.attn.scores", "layers.{i}.attn.scaled", "layers.{i}.attn.masked", "layers.{i}.attn.weights",
    "layers.{i}.attn.z", "layers.{i}.attn.merged", "layers.{i}.attn.out",
    "layers.{i}.attn_resid", "layers.{i}.ffn_in", "layers.{i}.ffn.hidden", "layers.{i}.ffn.out",
    "layers.{i}.ffn_resid", "layers.{i}.out",
    "final_norm",
)
LAYER = [t.split("{i}.")[1] for t in PINNED if "{i}" in t]


def test_trace_names_are_pinned():
    assert TRACE_NAMES == PINNED
    assert attnscope.trace.HEAD_STEPS == ("q", "k", "v", "scores", "scaled", "masked", "weights", "z")


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
