"""A real model's row is judged against float64 values from the weights, and answers a learner made
from the float32 model (transformers eager, or attnscope's own trace) pass within its float32 error:
issue 15's MiniLM row whose eager answers used to get "wrong" for digits float32 moved."""

import numpy as np
import pytest
import torch

import attnscope
from attnscope.check import check
from attnscope.explain import explain
from attnscope.explain.numbers import fmt

TEXT = "The cat sat on the mat because it was tired."
LAYER, HEAD = 1, 9


@pytest.fixture(scope="module")
def eager():
    """The row's numbers from transformers' eager BertModel in float32, as a learner would take them."""
    import transformers
    transformers.logging.set_verbosity_error()
    m = attnscope.load()
    hf = transformers.BertModel.from_pretrained(str(attnscope.models.default_model_path()),
                                                attn_implementation="eager").eval()
    b = m.encode(TEXT)
    with torch.no_grad():
        o = hf(input_ids=b.input_ids, attention_mask=b.attention_mask, token_type_ids=b.token_type_ids,
               output_attentions=True, output_hidden_states=True)
        sa = hf.encoder.layer[LAYER].attention.self
        x = o.hidden_states[LAYER]
        q, k, v = (lin(x)[0].view(-1, 12, 32)[:, HEAD] for lin in (sa.query, sa.key, sa.value))  # float32 (L, 32)
    pos = b.tokens[0].index("it")
    s = (k @ q[pos]).numpy()                       # float32 raw scores
    scaled = s / np.float32(np.sqrt(32))
    e = np.exp(scaled)
    w = o.attentions[LAYER][0, HEAD, pos].numpy()  # transformers' own float32 probabilities
    z = (torch.from_numpy(w) @ v).numpy()
    return {"scores": s, "scaled": scaled, "exp": e, "sum": np.float32(e.sum()), "weights": w, "output": z[:3]}


def _answers(vals: dict, d: int = 4) -> str:
    lst = lambda a: "[" + ", ".join(fmt(float(x), d, as_int=False) for x in a) + "]"  # noqa: E731
    out = (f"problem:\n  text: \"{TEXT}\"\n  layer: {LAYER}\n  head: {HEAD}\n  token: it\nanswers:\n"
           f"  scores: {lst(vals['scores'])}\n  scaled: {lst(vals['scaled'])}\n  exp: {lst(vals['exp'])}\n"
           f"  sum: {fmt(float(vals['sum']), d, as_int=False)}\n  weights: {lst(vals['weights'])}\n"
           f"  output: {lst(vals['output'])}\n")
    return out


def test_answers_from_the_float32_model_pass(eager, tmp_path):
    row = explain(text=TEXT, layer=LAYER, head=HEAD, token="it")
    assert row.meta["operands"] == "weights"
    exact = {k: row.values[k] for k in ("scores", "scaled", "exp", "weights")}
    # float32 moved some printed digits: judged against those alone, these answers would be "wrong"
    moved = sum(fmt(float(a), 4) != fmt(float(b), 4) for k in exact for a, b in zip(eager[k], exact[k]))
    assert moved >= 2
    f = tmp_path / "eager.yaml"
    f.write_text(_answers(eager), encoding="utf-8")
    r = check(str(f))
    assert r.ok and not r.by_verdict("wrong"), r.render("markdown")
    assert r.problem["exact"] == "float64 from the model's weights"
    assert 0 < r.problem["float32_error"]["scores"] < 1e-4


def test_answers_from_the_trace_pass_and_a_slip_is_still_wrong(eager, tmp_path):
    m = attnscope.load()
    tr = m.trace(TEXT, names=[f"layers.{LAYER}.attn.{s}[{HEAD}]" for s in ("scores", "scaled", "weights", "z")])
    pos = tr.tokens[0].index("it")
    g = lambda s: tr[f"layers.{LAYER}.attn.{s}[{HEAD}]"][0, pos].numpy()  # noqa: E731
    e = np.exp(g("scaled"))
    vals = {"scores": g("scores"), "scaled": g("scaled"), "exp": e, "sum": e.sum(), "weights": g("weights"),
            "output": g("z")[:3]}
    f = tmp_path / "trace.yaml"
    f.write_text(_answers(vals), encoding="utf-8")
    assert check(str(f)).ok
    slip = dict(eager, weights=eager["weights"].copy())
    j = int(np.argmax(slip["weights"]))
    slip["weights"][j] += 0.01            # a real mistake is 10⁴ times the float32 error
    f.write_text(_answers(slip), encoding="utf-8")
    r = check(str(f))
    assert [(e.step, e.col) for e in r.by_verdict("wrong")] == [("weights", j)]
