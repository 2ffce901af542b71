"""Trace names are read from the module tree (:func:`attnscope.trace.names.tree_names`): the path of
every hook point, in ``named_modules()`` order. This pins them for every registered tiny checkpoint
(:data:`attnscope.testing.tiny.FAMILIES`, so that a new family joins by registering its builder)
against an expectation that does not read the tree: the core names of the model's kind plus the
steps its registration declares, laid out in the order of the public vocabulary
(:data:`~attnscope.trace.TRACE_NAMES`, :data:`~attnscope.trace.SEQ2SEQ_NAMES`) — the order the
names had when they were computed from the config — for the loaded model and for its config alone
(an empty model built on the meta device)."""

from __future__ import annotations

import pytest
import torch

import attnscope
from attnscope.config import DecoderConfig, TransformerConfig
from attnscope.errors import InputError
from attnscope.hooks import HookPoint
from attnscope.models.model_class import class_for_config, empty_model
from attnscope.testing.tiny import TinyFamily
from attnscope.trace.names import SEQ2SEQ_NAMES, TRACE_NAMES, expand_names, hook_point_paths, in_vocabulary, tree_names
from tests.models.fixtures import tiny_families

FAMILIES = tiny_families()

#: What every one-text model has (templates); a registration declares the rest.
CORE = ("embed.tokens", "embed.out", "layers.{i}.attn_in", "layers.{i}.attn.q", "layers.{i}.attn.k",
        "layers.{i}.attn.v", "layers.{i}.attn.scores", "layers.{i}.attn.scaled", "layers.{i}.attn.masked",
        "layers.{i}.attn.weights", "layers.{i}.attn.z", "layers.{i}.attn.merged", "layers.{i}.attn.out",
        "layers.{i}.attn_resid", "layers.{i}.ffn_in", "layers.{i}.ffn.hidden", "layers.{i}.ffn.out",
        "layers.{i}.ffn_resid", "layers.{i}.out")
#: What every encoder–decoder model has, as steps of one stack (``attn`` is the decoder's ``self_attn``;
#: the decoder adds ``cross_attn_in``, ``cross_attn.*`` and ``cross_attn_resid``).
CORE_STACK = ("embed.tokens", "embed.out", "attn_in", "attn.q", "attn.k", "attn.v", "attn.scores", "attn.scaled",
              "attn.masked", "attn.weights", "attn.z", "attn.merged", "attn.out", "attn_resid", "ffn_in",
              "ffn.hidden", "ffn.out", "ffn_resid", "out")
CROSS = ("cross_attn_in", *(f"cross_attn.{s}" for s in ("q", "k", "v", "scores", "scaled", "masked", "weights",
                                                         "z", "merged", "out")), "cross_attn_resid")


def _in_stack(stack: str, step: str) -> str:
    """A step of a registration (``embed.positions``, ``attn.bias``, ``final_norm``) as a template of ``stack``."""
    if step.startswith("embed.") or step == "final_norm":
        return f"{stack}{step}"
    if stack == "decoder.":
        step = step.replace("attn", "self_attn", 1) if step.startswith("attn") else step
    return f"{stack}layers.{{i}}.{step}"


def _laid_out(templates: set[str], vocabulary: tuple[str, ...], prefix: str, n_layers: int) -> list[str]:
    """``templates`` of one stack in the vocabulary's order: its embeddings, each layer's steps, its final norm."""
    ours = [t for t in vocabulary if t.startswith(prefix) and t in templates]
    head = [t for t in ours if "{i}" not in t and not t.endswith("final_norm")]
    return head + [t.format(i=i) for i in range(n_layers) for t in ours if "{i}" in t] + \
        [t for t in ours if t.endswith("final_norm")]


def expected(fam: TinyFamily, config) -> list[str]:
    if fam.reads == "text":
        want = set(CORE) | {_in_stack("", s) for s in fam.names}
        assert want <= set(TRACE_NAMES), sorted(want - set(TRACE_NAMES))
        return _laid_out(want, TRACE_NAMES, "", config.n_layers)
    want = {_in_stack("encoder.", s) for s in CORE_STACK + fam.names}
    want |= {_in_stack("decoder.", s) for s in CORE_STACK + fam.names}
    want |= {f"decoder.layers.{{i}}.{s}" for s in CROSS}
    assert want <= set(SEQ2SEQ_NAMES), sorted(want - set(SEQ2SEQ_NAMES))
    return _laid_out(want, SEQ2SEQ_NAMES, "encoder.", config.n_layers) + \
        _laid_out(want, SEQ2SEQ_NAMES, "decoder.", config.n_decoder_layers)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """``get(name)``: attnscope's model of the tiny checkpoint ``name``, built on first use."""
    root = tmp_path_factory.mktemp("names-pin")
    held: dict = {}

    def get(name: str):
        if name not in held:
            held.clear()  # one model at a time
            held[name] = attnscope.load(FAMILIES[name].build(root / name))
        return held[name]
    return get


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_names_are_the_hook_points_in_the_pinned_order(name, tiny):
    fam = FAMILIES[name]
    model = tiny(name)
    want = expected(fam, model.config)
    assert model.hook_names == want
    # every hook point in the tree is a public name: a new step cannot appear without one
    assert hook_point_paths(model) == want
    # a config alone gives the same names (an empty model of that config, on the meta device)
    assert expand_names(model.config) == want
    # and a full trace records them, in that order
    tr = model.trace(["a b"], ["x y"]) if fam.reads == "pair" else model.trace(["a b"])
    assert tr.names == want


def test_the_vocabulary_decides_and_the_pin_test_would_see_a_new_step():
    """A hook point outside the vocabulary is no trace name, and :func:`hook_point_paths` (what the pin
    test compares) still lists it; near misses of public names are not public names."""
    model = attnscope.TransformerEncoder(TransformerConfig(vocab_size=50, d_model=8, n_heads=2, n_layers=2, d_ff=16))
    before = tree_names(model)
    model.layers[1].attn.add_module("extra", HookPoint())
    assert tree_names(model) == before
    assert "layers.1.attn.extra" in hook_point_paths(model)
    assert in_vocabulary("layers.12.attn.weights") and in_vocabulary("decoder.layers.0.cross_attn.q")
    for bad in ("layers.1.attn.extra", "layers.01.attn.q", "layers.x.attn.q", "attn.q", "layers.0.attn.weights[0]",
                "encoder.layers.0.cross_attn.q"):
        assert not in_vocabulary(bad), bad


def test_names_of_a_config_come_from_an_empty_model_on_the_meta_device():
    """SmolLM2-135M's config (30 layers): the model of the config's class, with no memory."""
    c = DecoderConfig(vocab_size=49152, d_model=576, n_heads=9, n_kv_heads=3, n_layers=30, d_ff=1536,
                      max_positions=8192)
    assert class_for_config(c)[0] is attnscope.models.DecoderModel
    assert class_for_config(TransformerConfig())[0] is attnscope.models.Model
    m = empty_model(c)
    assert {p.device.type for p in m.parameters()} == {"meta"}
    names = expand_names(c)
    layer = [t.split("{i}.")[1] for t in TRACE_NAMES if "{i}" in t and t.split("{i}.")[1] not in
             ("attn.q_normed", "attn.k_normed", "attn.pos_q", "attn.pos_k", "attn.scores_c2c", "attn.scores_c2p",
              "attn.scores_p2c", "attn.bias", "attn_post_norm", "ffn_post_norm")]
    assert names == ["embed.tokens", "embed.out"] + [f"layers.{i}.{s}" for i in range(30) for s in layer] \
        + ["final_norm"]
    names.append("changed")  # the cache hands out copies
    assert expand_names(c)[-1] == "final_norm"
    assert expand_names(m) == tree_names(m) == names[:-1]


def test_expand_names_takes_a_config_or_a_model():
    with pytest.raises(InputError, match="takes a model or its config"):
        expand_names("bert")  # type: ignore[arg-type]
    assert expand_names(torch.nn.Module()) == []  # a module without hook points has no names
