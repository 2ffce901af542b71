"""SmolLM2-135M-Instruct and Gemma 3 270M (the installed GGUF packages) against transformers'
reading of the same files (tests/models/decoders/real_reference.py, cached): English, Chinese and
a 627/631-token text (past Gemma's 512-token window), within transformers' own float32 error
against its float64 run; a padded batch gives each text what it gets alone; greedy generation
gives transformers' ids, and SmolLM2's chat answer is "The capital of France is Paris."."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnscope
from attnscope.models.packages import package_model_path
from tests.memory_report import release_memory
from tests.models.decoders.real_reference import PROMPTS, TEXTS, reference

MODELS = ("smollm2-135m", "gemma-3-270m")
#: "within transformers' own float32 error": attnscope's float32 run may be at most this many times
#: as far from transformers' float64 run as transformers' float32 run is
FACTOR = 3.0


# One model at a time (memory: SmolLM2 holds about 1 GB, Gemma 1.3 GB): `name` is a module-scoped
# parameter, so pytest runs every test of one model, frees it, then loads the other.
@pytest.fixture(scope="module")
def model(name):
    m = attnscope.load(name)
    release_memory()  # the load's freed buffers
    yield m
    del m
    release_memory()


@pytest.fixture(scope="module")
def ref(request, name):
    return reference(request.config, name, package_model_path(name))


def _err(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))))


@pytest.mark.parametrize("text", list(TEXTS))
@pytest.mark.parametrize("name", MODELS, scope="module")
def test_within_transformers_float32_error(name, text, model, ref):
    meta, arr = ref
    t = meta["texts"][text]
    assert model.encode(TEXTS[text]).ids[0] == t["ids"]  # the same tokens
    rows, lrows, budget = t["rows"], t["logit_rows"], t["budget"]
    L = model.config.n_layers
    tr = model.trace(TEXTS[text], names=["embed.out", "layers.*.out", "final_norm", "layers.*.attn.weights"])
    att = torch.stack([tr[f"layers.{i}.attn.weights"][0][:, rows] for i in range(L)]).numpy()  # (layers, H, R, L)
    hidden = torch.stack([tr["embed.out"][0]] + [tr[f"layers.{i}.out"][0] for i in range(L - 1)]
                         + [tr["final_norm"][0]])[:, rows].numpy()
    with torch.no_grad():
        # the fused kernel, at the sampled rows (every row of Gemma's 631 tokens: 660 MB of logits)
        logits = model.lm_logits(model(torch.tensor([t["ids"]]))[0][lrows]).numpy()
    ours = {"attentions": _err(att, arr[f"{text}.attn64"]), "hidden_states": _err(hidden, arr[f"{text}.hidden64"]),
            "logits": _err(logits, arr[f"{text}.logits64"])}
    theirs = {"attentions": _err(arr[f"{text}.attn32"], arr[f"{text}.attn64"]),
              "hidden_states": _err(arr[f"{text}.hidden32"], arr[f"{text}.hidden64"]),
              "logits": _err(arr[f"{text}.logits32"], arr[f"{text}.logits64"])}
    for what in ours:
        # against transformers' float32 error over every number (budget), and at the same samples
        assert ours[what] <= FACTOR * budget[what] + 1e-7, (what, ours[what], budget[what])
        assert ours[what] <= FACTOR * theirs[what] + 1e-7, (what, ours[what], theirs[what])
    assert _err(att, arr[f"{text}.attn32"]) <= 1e-5  # and the weights are transformers' float32 weights


@pytest.mark.parametrize("name", MODELS, scope="module")
def test_padded_batch_of_real_texts(name, model, ref):
    """Right padding: the short texts padded to the 627/631-token one get what they get alone."""
    meta, arr = ref
    texts = [TEXTS["en"], TEXTS["zh"], TEXTS["long"]]
    tr = model.trace(texts, names=["layers.*.attn.weights", "final_norm"])
    assert min(tr.lengths) < max(tr.lengths)
    for b, label in enumerate(("en", "zh", "long")):
        t = meta["texts"][label]
        n, rows = len(t["ids"]), t["rows"]
        att = torch.stack([tr[f"layers.{i}.attn.weights"][b][:, rows, :n]
                           for i in range(model.config.n_layers)]).numpy()
        assert _err(att, arr[f"{label}.attn64"]) <= FACTOR * t["budget"]["attentions"] + 1e-7
        assert float(torch.stack([tr[f"layers.{i}.attn.weights"][b][:, :n, n:].abs().sum()
                                  for i in range(model.config.n_layers)]).sum()) == 0.0


@pytest.mark.parametrize("name", MODELS, scope="module")
def test_greedy_generation_equals_transformers(name, model, ref):
    meta, _ = ref
    assert [(g["prompt"], g["chat"]) for g in meta["generate"]] == PROMPTS[name]
    for g in meta["generate"]:
        ours = model.generate(g["prompt"], chat=g["chat"], max_new_tokens=len(g["new_ids"]))
        assert ours.prompt_ids == g["prompt_ids"]
        n = len(ours.new_ids)  # stops at EOS; transformers' ids then continue with padding
        assert ours.new_ids == g["new_ids"][:n], g["prompt"]
        assert n == len(g["new_ids"]) or g["new_ids"][n - 1] in model.config.eos_token_ids


@pytest.mark.parametrize("name", ["smollm2-135m"], scope="module")
def test_smollm2_answers_paris(name, model):
    g = model.generate("What is the capital of France?", chat=True, max_new_tokens=20)
    assert g.text == "The capital of France is Paris." and g.finish_reason == "eos"


@pytest.mark.parametrize("name", ["gemma-3-270m"], scope="module")
def test_gemma_window_hides_keys_past_512_on_sliding_layers(name, model):
    assert model.config.layer_types.count("full") == 3 and model.config.window(0) == 512
    tr = model.trace(TEXTS["long"], names=["layers.0.attn.weights[0]", "layers.5.attn.weights[0]"])
    L = tr.lengths[0]
    i = torch.arange(L)
    far = (i[:, None] - i[None, :]) >= 512
    assert float(tr["layers.0.attn.weights[0]"][0][far].sum()) == 0.0  # a sliding layer
    assert float(tr["layers.5.attn.weights[0]"][0][far].sum()) > 0.0  # the first global layer
