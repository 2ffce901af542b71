"""The importance pass that reuses the clean pass below the ablated layer (the ladder) against the
plain reference: one forward pass per (layer, head) with a zeroing ``layers.{l}.attn.z[h]`` hook
through ``model.hooks``, its measure written out here. Encoder (MiniLM), GPT-2 and a grouped-query
Llama, float32 and float64, padded batches; and the layers below the ablated one run once."""

import pytest
import torch
import torch.nn.functional as F

import attnscope
from attnscope.analysis.batching import TextEncoder, bucket
from attnscope.analysis.corpus import Text
from attnscope.analysis.importance import Ladder, ablation_sums, is_language_model
from attnscope.testing import tiny as testing

TEXTS = ["Heads attend to different things.", "The previous token, the next token, or [SEP]?",
         "Ablate one head and see what changes.", "Short one."]


def token_batch(model, texts=TEXTS):
    enc = TextEncoder(model.tokenizer, 64)
    (items,) = bucket(enc.encode([Text(i, t, "") for i, t in enumerate(texts)]), len(texts))
    tb = enc.pad(items)
    assert not bool(tb.attention_mask.all())  # padding is part of every test
    return tb


@torch.no_grad()
def loop_reference(model, tb):
    """{layer: [importance sum of head h]}: every head removed on its own, one full pass each."""
    ids, mask = tb.input_ids, tb.attention_mask
    n_layers, H = model.config.n_layers, model.config.n_heads
    lm = is_language_model(model)

    def measure(hidden):
        if lm:  # summed next-token cross-entropy over real targets (float64)
            logits = model.lm_logits(hidden)[:, :-1].double()
            ce = F.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten(), reduction="none").view(ids.shape[0], -1)
            return (ce * mask[:, 1:]).sum(dim=1)  # (B,)
        m = mask[..., None].to(hidden.dtype)
        return ((hidden * m).sum(1) / m.sum(1)).double()  # (B, d): mean over real tokens

    base = measure(model(ids, mask))
    out = {}
    for layer in range(n_layers):
        row = []
        for head in range(H):
            with model.hooks({f"layers.{layer}.attn.z[{head}]": lambda z, name: torch.zeros_like(z)}):
                got = measure(model(ids, mask))
            row.append((got - base).sum().item() if lm else (1 - F.cosine_similarity(got, base, dim=-1)).sum().item())
        out[layer] = row
    return out


def assert_matches(got, want, rel, abs_):
    assert set(got) == set(want)
    for layer, row in want.items():
        s, c = got[layer]
        for h, w in enumerate(row):
            assert s[h].item() == pytest.approx(w, rel=rel, abs=abs_), (layer, h)


@pytest.fixture(scope="module")
def minilm():
    return attnscope.load()


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    return attnscope.load(testing.tiny_gpt2(tmp_path_factory.mktemp("gpt2")))


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    from tests.models.decoders.tiny import llama_gqa
    return attnscope.load(llama_gqa(tmp_path_factory.mktemp("llama")))


def test_minilm_float32_equals_one_pass_per_head(minilm):
    tb = token_batch(minilm)
    ladder = Ladder.for_model(minilm)
    got = ablation_sums(minilm, tb, ladder=ladder)
    assert ladder.ok  # the fast form ran
    # 1 - cos is small, so float32 rounding of the embeddings (~1e-7) is its error scale
    assert_matches(got, loop_reference(minilm, tb), rel=1e-3, abs_=2e-6)
    assert all((got[l][1] == len(TEXTS)).all() for l in got)


def test_minilm_float64_equals_one_pass_per_head(minilm):
    model = attnscope.load().double()
    tb = token_batch(model)
    got = ablation_sums(model, tb, layers=[0, 3, 5])
    want = loop_reference(model, tb)
    assert_matches(got, {l: want[l] for l in (0, 3, 5)}, rel=1e-9, abs_=1e-14)
    plain = ablation_sums(model, tb, layers=[0, 3, 5], plain=True)  # the form before the ladder
    assert_matches(plain, {l: want[l] for l in (0, 3, 5)}, rel=1e-9, abs_=1e-14)


@pytest.mark.parametrize("name", ["gpt2", "llama"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_decoders_equal_one_pass_per_head(request, name, dtype):
    model = request.getfixturevalue(name)
    if dtype == torch.float64:
        model = __import__("copy").deepcopy(model).double()
    tb = token_batch(model)
    ladder = Ladder.for_model(model)
    got = ablation_sums(model, tb, ladder=ladder)
    assert ladder.ok
    rel, abs_ = (1e-4, 1e-5) if dtype == torch.float32 else (1e-9, 1e-12)
    assert_matches(got, loop_reference(model, tb), rel=rel, abs_=abs_)
    n_targets = int(tb.attention_mask[:, 1:].sum())
    assert all((got[l][1] == n_targets).all() for l in got)


def test_layers_below_the_ablated_one_run_once_per_batch(minilm):
    """Rows through each layer: the clean pass (B) and, for each ablated layer l ≤ i, its H·B
    copies; before the ladder every layer ran B + n_layers·H·B rows."""
    tb = token_batch(minilm)
    B, H, N = len(tb), minilm.config.n_heads, minilm.config.n_layers
    rows = [0] * N

    def counter(i):
        def hook(module, args, kwargs, output):
            rows[i] += args[0].shape[0]
        return hook

    handles = [minilm.layers[i].register_forward_hook(counter(i), with_kwargs=True) for i in range(N)]
    try:
        ladder = Ladder.for_model(minilm)  # its replica's layers carry the counting hooks too
        ablation_sums(minilm, tb, ladder=ladder)
        ladder.checked = False
    finally:
        for h in handles:
            h.remove()
    check = [1 if i == N - 1 else 0 for i in range(N)]  # the one-time check runs the top layer on B rows
    assert rows == [B + (i + 1) * H * B + check[i] * B for i in range(N)]


def test_a_stack_the_ladder_cannot_start_runs_the_plain_way(minilm, monkeypatch):
    import attnscope.analysis.importance as imp
    monkeypatch.setattr(imp, "_check_ladder", lambda *a: False)
    tb = token_batch(minilm, TEXTS[:2])
    ladder = Ladder.for_model(minilm)
    got = ablation_sums(minilm, tb, layers=[2], ladder=ladder)
    assert ladder.checked and not ladder.ok
    want = loop_reference(minilm, tb)
    assert_matches(got, {2: want[2]}, rel=1e-3, abs_=2e-6)


@pytest.mark.parametrize("copies", [3, 8])
def test_the_loss_measure_takes_the_logits_of_several_copies_at_once(llama, monkeypatch, copies):
    """One output-matrix product per ``copies`` ablated copies (8 heads: chunks of 3, 3, 2, or all
    8 at once), not one per head: per head it read the whole vocabulary matrix for a few rows each
    time (SmolLM2: 16 s for one text, 5 s batched). Same sums as one pass per head."""
    import attnscope.analysis.importance as imp
    tb = token_batch(llama)
    B, L = tb.input_ids.shape
    monkeypatch.setattr(imp, "LOGIT_CHUNK", copies * B * L * llama.config.vocab_size)
    calls = []
    monkeypatch.setattr(llama, "lm_logits", lambda h, f=llama.lm_logits: calls.append(h.shape[0]) or f(h))
    got = ablation_sums(llama, tb, ladder=Ladder.for_model(llama))
    H, N = llama.config.n_heads, llama.config.n_layers
    per_layer = [c * B for c in ([3, 3, 2] if copies == 3 else [8])]
    assert calls == [B] + per_layer * N  # the clean pass, then each layer's copies
    assert_matches(got, loop_reference(llama, tb), rel=1e-4, abs_=1e-5)
    assert H == 8
