"""The page data carries the traced q, k, v exactly, and the numbers recomputed from them are the
model's attention (checked against the traced weights and against torch's own attention)."""

import math
import re

import numpy as np
import pytest
import torch

from attnscope import reference as R
from attnscope.errors import InputError
from attnscope.functional import attention_steps
from attnscope.trace import Trace
from attnscope.viewer import data
from attnscope.viewer.context import context_comparison
from tests.viewer.fixtures import OTHER, TEXT


def test_qkv_are_the_traced_tensors_bit_for_bit(trace):
    d = data.build(trace)
    assert d["format"] == "attnscope.view" and [t["text"] for t in d["texts"]] == [TEXT, OTHER]
    for b, entry in enumerate(d["texts"]):
        n = len(trace.tokens[b])
        assert entry["tokens"] == trace.tokens[b]
        for step in "qkv":
            arr = data.decode(entry[step])  # (L, H, n, d_head)
            assert arr.shape == (6, 12, n, 32)
            for layer in (0, 5):
                ref = trace[f"layers.{layer}.attn.{step}"][b, :, :n].numpy()
                assert arr[layer].tobytes() == ref.tobytes()
    assert d["config"]["factor"] == 1 / math.sqrt(32)


def test_weights_from_q_k_are_the_models(full_trace):
    # every layer of the full trace, against the weights the model itself computed (float32)
    for layer in range(6):
        w = R.trace_weights(full_trace, layer, recorded=False)  # from q and k, float64
        np.testing.assert_allclose(w, full_trace[f"layers.{layer}.attn.weights"][0].double().numpy(), atol=2e-6)


def test_steps_match_torch_attention_in_float64(full_trace):
    q = full_trace["layers.4.attn.q"][0].double()  # (H, n, d)
    k = full_trace["layers.4.attn.k"][0].double()
    v = full_trace["layers.4.attn.v"][0].double()
    ref = attention_steps(q, k, v)  # torch float64, whole matrices at once
    for head, query in ((0, 0), (7, 3), (11, len(full_trace.tokens[0]) - 1)):
        s = R.trace_row(full_trace, 4, head, query)
        np.testing.assert_allclose(s["raw"], ref["scores"][head, query].numpy(), rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(s["scaled"], ref["scaled"][head, query].numpy(), rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(s["weights"], ref["weights"][head, query].numpy(), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(s["out"], ref["out"][head, query].numpy(), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(s["exp"] / s["sum"], s["weights"], rtol=1e-12)
        assert s["shift"] == 0.0 and s["d_k"] == 32


def test_causal_models_mask_future_keys(tiny_models):
    tr = tiny_models["gpt2"].trace(["the quick brown fox jumps"])
    n = len(tr.tokens[0])
    s = R.trace_row(tr, 1, 2, 1)
    assert np.isneginf(s["scaled"][2:]).all() and (s["exp"][2:] == 0).all() and (s["weights"][2:] == 0).all()
    w = R.trace_weights(tr, 1, recorded=False)  # computed from q, k with the causal mask
    np.testing.assert_allclose(w, tr["layers.1.attn.weights"][0].double().numpy(), atol=2e-6)
    d = data.build(tr)
    assert d["config"]["causal"] is True and len(d["texts"][0]["tokens"]) == n


def test_mismatched_weights_are_refused(trace):
    def tampered(tr):  # the same trace with its recorded weights flipped
        return Trace({n: t.flip(-1) if "attn.weights" in n else t for n, t in tr.items()}, tokens=tr.tokens,
                     input_ids=tr.input_ids, attention_mask=tr.attention_mask, model_name=tr.model_name,
                     family=tr.family, config=tr.config, texts=tr.texts)

    with pytest.raises(InputError, match="differs from the traced attention weights"):
        data.build(tampered(trace))


def test_context_comparison_is_cosine_of_the_token_vectors(trace):
    c = context_comparison(trace, token="bank")
    ia, ib = trace.tokens[0].index("bank"), trace.tokens[1].index("bank")
    assert (c["token"], c["pos_a"], c["pos_b"]) == ("bank", ia, ib)
    names = ["embed.out"] + [f"layers.{i}.out" for i in range(6)]
    assert c["layers"] == names
    for i, name in enumerate(names):
        a, b = trace[name][0, ia].double(), trace[name][1, ib].double()
        assert c["across"][i] == pytest.approx(torch.nn.functional.cosine_similarity(a, b, dim=0).item(), abs=1e-12)
        a0 = trace["embed.out"][0, ia].double()
        assert c["drift_a"][i] == pytest.approx(torch.nn.functional.cosine_similarity(a, a0, dim=0).item(), abs=1e-12)
    assert c["drift_a"][0] == pytest.approx(1.0, abs=1e-12)
    # context awareness: after the layers "bank" differs between the two sentences
    assert c["across"][-1] < c["across"][0]


def test_default_shared_token_and_errors(trace):
    assert context_comparison(trace)["token"] == "the"  # first non-special token in both
    with pytest.raises(InputError, match="token 'cat' is not among the tokens"):
        context_comparison(trace, token="cat")
    with pytest.raises(InputError, match="decimals"):
        data.build(trace, decimals=20)
    with pytest.raises(InputError, match="query token 99 is out of range"):
        R.trace_row(trace, 0, 0, 99)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_half_precision_trace_has_a_page(dtype):
    """A model run in bfloat16 / float16 records its weights in that type: the page's float64
    recomputation from the (exact) q and k differs from them by the type's round-off (MiniLM
    bfloat16: 0.0026 in layer 0), which is not "not dot-product attention" — the page was refused
    with that sentence. The page's weights are the model's to within that round-off
    (transformers' eager float64 MiniLM is the reference)."""
    import transformers

    import attnscope
    from attnscope.models import default_model_path
    from attnscope.viewer.run import trace_texts

    model = attnscope.load(dtype=dtype)
    tr = trace_texts(model, [TEXT])
    d = data.build(tr)
    hf = transformers.BertModel.from_pretrained(str(default_model_path()), attn_implementation="eager").eval().double()
    with torch.no_grad():
        want = hf(input_ids=tr.input_ids, output_attentions=True).attentions  # (1, H, n, n) a layer
    cfg, entry = d["config"], d["texts"][0]
    q, k = data.decode(entry["q"]), data.decode(entry["k"])
    n = len(entry["tokens"])
    for layer in range(cfg["n_layers"]):
        page = data.page_weights(q[layer], k[layer], cfg["factor"], np.ones((1, n, n), bool), None)
        assert np.abs(page - want[layer][0].numpy()).max() < 4 * torch.finfo(dtype).eps, layer  # seen: ≤ 1.9


def test_a_half_precision_trace_that_is_not_dot_product_attention_is_still_refused():
    """The tolerance is the type's round-off, not a pass: bfloat16 weights replaced by uniform rows."""
    import attnscope
    from attnscope.viewer.run import trace_texts

    model = attnscope.load(dtype=torch.bfloat16)
    tr = trace_texts(model, [TEXT])
    n = tr.length(0)
    with model.hooks({"layers.2.attn.weights[0]": lambda w, name: torch.full_like(w, 1.0 / n)}):
        bad = model.trace([TEXT], names=tr.names)
    with pytest.raises(InputError, match="layer 2: softmax.* differs from the traced attention weights"):
        data.build(bad)


def test_texts_selects_one_index_or_says_an_empty_selection_is_empty(trace):
    """texts=[] raised a bare IndexError and texts=1 "TypeError: 'int' object is not iterable"."""
    one = data.build(trace, texts=1)
    assert [t["text"] for t in one["texts"]] == [OTHER]
    assert one["texts"][0]["q"] == data.build(trace, texts=[1])["texts"][0]["q"]
    with pytest.raises(InputError, match=r"texts=\[\] selects no text to show; give the indices of some of the "
                                         r"trace's 2 texts"):
        data.build(trace, texts=[])


def test_no_shared_token_lists_both_texts_as_shown(tiny_models):
    """The second text's tokens were listed as byte-level pieces ('æĪ', 'ĳ' for 我), the first as
    read; both are now as the page shows them."""
    from attnscope.viewer.run import trace_each

    a, b = trace_each(tiny_models["gpt2"], ["the quick fox", "我喜欢"])
    assert b.text_tokens(0) != b.text_labels(0) and "我" in b.text_labels(0)  # byte pieces, shown as characters
    with pytest.raises(InputError) as e:
        context_comparison(a, b)
    assert str(e.value) == (f"the two texts share no token (tokens {a.text_labels(0)} and {b.text_labels(0)}); "
                            "pick texts with a common word")


def test_no_shared_token_lists_20_tokens_of_a_long_text(tiny_models):
    """A long text's tokens were listed whole in the context view's errors (all of them, past 20)."""
    from attnscope.viewer.run import trace_each

    long = " ".join(["fox"] * 25)  # about 50 pieces: the tiny GPT-2 reads 64 positions
    a, b = trace_each(tiny_models["gpt2"], [long, "the cat"])
    with pytest.raises(InputError) as e:
        context_comparison(b, a)
    n = len(a.text_labels(0))
    want = ", ".join(repr(t) for t in a.text_labels(0)[:20]) + f" … and {n - 20} more]"
    assert f"and [{want}); pick texts" in str(e.value) and n > 20
    with pytest.raises(InputError, match=re.escape(f"… and {n - 20} more]")):
        context_comparison(a, b, token="dog")
