"""The methods on the installed decoder packages (SmolLM2-135M, Gemma 3 270M: grouped-query heads,
rotary positions, Gemma's sliding layers): rollout against the float64 loop, flow against the
hand-written Edmonds–Karp, leave_one_out against the shortened token sequences run alone."""

from __future__ import annotations

import numpy as np
import torch

import attnscope
from tests.attribution.flow_ref import flow_values
from tests.attribution.test_occlusion import next_logits
from tests.attribution.test_weights import loop_rollout

TEXT = "The capital of France is"


def test_rollout_and_flow(real):
    n = real.config.n_layers
    names = [f"layers.{i}.attn.weights" for i in range(n)]
    t = real.trace(TEXT, names=names)
    W = np.stack([t[name][0].double().numpy() for name in names])  # (n_layers, H, L, L)
    a = real.attribute(TEXT, "rollout")
    assert np.abs(a.scores.double().numpy() - np.array(loop_rollout(W, n - 1))).max() <= 1e-6
    f = real.attribute(TEXT, "flow")
    values = np.array(flow_values(f.per_layer.double().numpy(), n - 1))
    assert np.abs(f.details["values"].double().numpy() - values).max() <= 1e-6


def test_leave_one_out(real):
    b = real.encode(TEXT)
    L = b.input_ids.shape[1]
    a = real.attribute(TEXT, "leave_one_out")
    with torch.no_grad():
        full = next_logits(real, b)
        assert a.target == int(full.argmax())
        for j in range(L):
            keep = [k for k in range(L) if k != j]
            short = attnscope.tokenizer.Batch(b.input_ids[:, keep], b.attention_mask[:, keep],
                                              b.token_type_ids[:, keep], [[b.tokens[0][k] for k in keep]], [TEXT])
            expected = full[a.target] - next_logits(real, short)[a.target]
            assert abs(float(a.scores[j] - expected)) <= 1e-4, j
