"""The float64 recomputation of a trace's attention (:mod:`attnscope.reference.traced`) against
transformers' eager models, for scores that add a term to q·k."""

import numpy as np
import pytest
import torch

import attnscope
from attnscope import reference as R
from tests.models.fixtures import tiny_families


@pytest.mark.parametrize("family", ["deberta_v3", "deberta_v2"])
def test_rows_and_weights_of_a_model_with_learned_terms_are_its_weights(family, tmp_path):
    """DeBERTa adds c2p and p2c terms to q·k. trace_weights and trace_row recomputed softmax from q
    and k alone (0.40 off the model's weights on tiny DeBERTa-v3); they now add the recorded term."""
    import transformers

    folder = tiny_families()[family].build(tmp_path / family)
    text, layer, head, query = "the cat sat on the mat", 1, 2, 3
    model = attnscope.load(folder)
    tr = model.trace([text], names=[f"layers.{layer}.attn.{s}" for s in ("q", "k", "v", "bias")])
    hf = transformers.AutoModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    batch = model.encode(text)
    with torch.no_grad():
        want = hf(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                  output_attentions=True).attentions[layer][0].double().numpy()  # (H, n, n)
    np.testing.assert_allclose(R.trace_weights(tr, layer), want, atol=2e-6)
    np.testing.assert_allclose(R.trace_row(tr, layer, head, query)["weights"], want[head, query], atol=2e-6)
    bare = model.trace([text], names=[f"layers.{layer}.attn.{s}" for s in ("q", "k", "v")])
    with pytest.raises(attnscope.InputError, match=rf"layers.{layer}.attn.bias"):
        R.trace_weights(bare, layer)  # the term was not recorded: named, not left out
