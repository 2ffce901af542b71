"""evaluate_text against a hand-written loop: each variant run alone through the model's forward
pass, the target read by hand (a decoder's top logit at the last position; MiniLM's mean-pooled
embedding projected on its own direction), the ranking, the bins and ρ recomputed here."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import attnscope
from attnscope.faithfulness import stats
from attnscope.faithfulness.evaluate import evaluate_text
from attnscope.testing.tiny import FAMILIES
from tests.faithfulness.test_stats import spearman_loop

TEXT = "the cat sat on the mat because the mat was warm and the cat was cold"


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    return attnscope.load(FAMILIES["gpt2"].build(tmp_path_factory.mktemp("faith") / "gpt2"))


@pytest.fixture(scope="module")
def minilm():
    return attnscope.load()


def decoder_value(model, ids: list[int], token: int) -> float:
    x = torch.tensor([ids])
    with torch.no_grad():
        h = model(x, torch.ones_like(x))  # (1, L, d)
        return float(model.lm_logits(h[:, -1])[0, token])


def encoder_value(model, ids: list[int], direction: torch.Tensor) -> float:
    x = torch.tensor([ids])
    with torch.no_grad():
        h = model(x, torch.ones_like(x), torch.zeros_like(x))[0]  # (L, d)
    return float(h.mean(0) @ direction)


def hand(model, value, ids: list[int], content: list[int], scores: np.ndarray, bins) -> tuple[list, list]:
    """deleted/kept targets of the ranking of ``scores`` (over ``content``), one forward each."""
    order = sorted(range(len(content)), key=lambda k: (-scores[k], k))
    deleted, kept = [], []
    for k in bins:
        m = min(len(content) - 1, max(1, math.ceil(k * len(content) / 100 - 1e-9)))
        top = {content[i] for i in order[:m]}
        deleted.append(value([t for p, t in enumerate(ids) if p not in top]))
        kept.append(value([t for p, t in enumerate(ids) if p in top or p not in content]))
    return deleted, kept


def check(model, value, ids, content, bins=stats.ERASER_BINS):
    r = evaluate_text(model, 0, "here", TEXT, ["attention", "rollout", "leave_one_out", "random"], {}, bins, seed=0)
    full = value(ids)
    assert r.full == pytest.approx(full, abs=1e-4)
    loo = np.array([full - value(ids[:j] + ids[j + 1:]) for j in content])  # the reference by hand
    for name in ("attention", "rollout"):
        a = model.attribute(TEXT, method=name).scores.double().numpy()
        row = a[-1] if model.has_lm_head else a.mean(0)
        s = row[content]
        assert r.rho[name] == pytest.approx(spearman_loop(s, loo), abs=1e-6)
        d, k = hand(model, value, ids, content, s, bins)
        assert r.deleted[name] == pytest.approx(d, abs=1e-4) and r.kept[name] == pytest.approx(k, abs=1e-4)
        e = stats.eraser(r.full, r.deleted[name], r.kept[name])
        assert e["aopc_comprehensiveness"] == pytest.approx(np.mean([full - x for x in d]), abs=1e-4)
        assert e["aopc_sufficiency"] == pytest.approx(np.mean([full - x for x in k]), abs=1e-4)
    assert r.rho["leave_one_out"] == pytest.approx(1.0)
    d, k = hand(model, value, ids, content, loo, bins)
    assert r.deleted["leave_one_out"] == pytest.approx(d, abs=1e-4)
    return r


def test_decoder_against_a_loop(gpt2):
    ids = gpt2.encode(TEXT).input_ids[0].tolist()
    x = torch.tensor([ids])
    with torch.no_grad():
        top = int(gpt2.lm_logits(gpt2(x, torch.ones_like(x))[:, -1])[0].argmax())
    r = check(gpt2, lambda i: decoder_value(gpt2, i, top), ids, list(range(len(ids))), bins=(10, 30, 50, 70))
    assert r.n_content == len(ids)


def test_encoder_keeps_its_special_tokens(minilm):
    batch = minilm.encode(TEXT)
    ids, tokens = batch.input_ids[0].tolist(), batch.tokens[0]
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
    x = torch.tensor([ids])
    with torch.no_grad():
        p = minilm(x, torch.ones_like(x), torch.zeros_like(x))[0].mean(0)
    r = check(minilm, lambda i: encoder_value(minilm, i, p / p.norm()), ids, list(range(1, len(ids) - 1)))
    assert r.n_content == len(ids) - 2


def test_the_random_control_is_seeded(gpt2):
    a = evaluate_text(gpt2, 3, "here", TEXT, ["random"], {}, (10, 50), seed=1)
    b = evaluate_text(gpt2, 3, "here", TEXT, ["random"], {}, (10, 50), seed=1)
    c = evaluate_text(gpt2, 3, "here", TEXT, ["random"], {}, (10, 50), seed=2)
    assert a.deleted == b.deleted and a.rho == b.rho
    assert a.rho != c.rho


def test_a_text_of_fewer_than_four_tokens_is_skipped(minilm):
    assert evaluate_text(minilm, 0, "here", "a cat", ["attention"], {}, (10,), seed=0) is None


def test_texts_that_all_fail_are_one_error_with_the_first_reason(gpt2):
    # a method that fails on every text: the run says why, not that the corpus is too short
    from attnscope.errors import InputError
    from attnscope.faithfulness.run import evaluate
    opts = {"integrated_gradients": {"baseline": 10**8, "steps": 2}}
    with pytest.raises(InputError, match=r"only 0 texts could be evaluated: \d+ failed, the first with: .*"
                                         r"baseline token 100000000 is out of range"):
        evaluate(gpt2, n_texts=2, methods=["integrated_gradients"], max_tokens=12, options=opts, progress=False)


@pytest.mark.parametrize("pooling, en, zh", [("mean", "mean of every position", "取平均"),
                                             ("max", "each feature's maximum", "最大值"), ("cls", "[CLS]", "[CLS]")])
def test_the_report_says_which_row_each_pooling_reads(pooling, en, zh):
    """Max pooling takes each feature from its own position: the report called the mean of the
    rows it reads there "mean pooling"."""
    from types import SimpleNamespace

    from attnscope.faithfulness.evaluate import row_choice
    from attnscope.faithfulness.report import row_words
    res = {"kind": "encoder", "row": row_choice(SimpleNamespace(pooling=pooling, has_lm_head=False, config=None))}
    assert en in row_words(res, "en") and zh in row_words(res, "zh")
