"""The decoder families (llama, qwen2, mistral, gemma3) equal transformers' eager models on tiny
random checkpoints written by transformers: attention weights per query head and hidden states
to 1e-5, single texts and right-padded batches (each text gets what it gets alone)."""

from __future__ import annotations

import pytest
import torch

from tests.models.decoders.tiny import BUILDERS, hf_run

TEXTS = {
    "short": "Every token looks at the tokens before it and decides how much to listen.",
    # 96 tokens: longer than every window (5, 6) and than llama3_scaled's original 16 positions
    "long": "我喜欢人工智能。北京是中国的首都。 A sliding window keeps each token's view to the most recent few tokens.",
}
TOL = 1e-5


def _ours(model, text):
    names = ["embed.out", "layers.*.out", "final_norm", "layers.*.attn.weights"]
    tr = model.trace(text, names=names)
    L = model.config.n_layers
    hidden = [tr["embed.out"]] + [tr[f"layers.{i}.out"] for i in range(L - 1)] + [tr["final_norm"]]
    return tr, [tr[f"layers.{i}.attn.weights"] for i in range(L)], hidden


def _maxdiff(xs, ys):
    return max(float((x.double() - y.double()).abs().max()) for x, y in zip(xs, ys))


@pytest.mark.parametrize("text", list(TEXTS))
@pytest.mark.parametrize("name", list(BUILDERS))
def test_weights_and_hidden_states_equal_transformers(name, text, decoders, hf_decoders):
    model = decoders[name]
    ids = model.encode(TEXTS[text]).input_ids
    ref = hf_run(hf_decoders(name), ids)
    tr, weights, hidden = _ours(model, TEXTS[text])
    assert [w.shape for w in weights] == [a.shape for a in ref["attentions"]]  # (B, H, L, L): per query head
    assert len(hidden) == len(ref["hidden_states"])
    assert _maxdiff(weights, ref["attentions"]) <= TOL
    assert _maxdiff(hidden, ref["hidden_states"]) <= TOL
    with torch.no_grad():  # the plain forward: the fused kernel, no weights formed
        out = model(ids)
        logits = model.lm_logits(out)
    assert float((out - ref["hidden_states"][-1]).abs().max()) <= TOL
    assert float((logits - ref["logits"]).abs().max()) <= 2 * TOL


@pytest.mark.parametrize("name", list(BUILDERS))
def test_padded_batch_gives_each_text_what_it_gets_alone(name, decoders, hf_decoders):
    """Right padding: each text keeps its positions 0…n−1 and never sees a padded key."""
    model = decoders[name]
    texts = [TEXTS["short"], TEXTS["long"]]
    batch = model.encode(texts)
    assert batch.attention_mask[0].sum() < batch.attention_mask.shape[1]  # the first text is padded
    tr, weights, hidden = _ours(model, texts)
    for b, text in enumerate(texts):
        n = batch.lengths[b]
        ref = hf_run(hf_decoders(name), model.encode(text).input_ids)  # the text alone
        assert _maxdiff([w[b, :, :n, :n] for w in weights], [a[0] for a in ref["attentions"]]) <= TOL
        assert _maxdiff([h[b, :n] for h in hidden], [h[0] for h in ref["hidden_states"]]) <= TOL
        assert all(float(w[b, :, :n, n:].abs().sum()) == 0.0 for w in weights)  # padded keys get 0
    assert all(torch.isfinite(w).all() for w in weights)  # padded rows stay finite (they see themselves)
    with torch.no_grad():
        out = model(batch.input_ids, batch.attention_mask)
    n = batch.lengths[0]
    assert float((out[0, :n] - hidden[-1][0, :n]).abs().max()) <= TOL


def test_float64_models_run_in_float64(decoder_dirs, hf_decoders):
    import attnscope

    m = attnscope.load(decoder_dirs["gemma3"], dtype=torch.float64)
    ids = m.encode(TEXTS["long"]).input_ids
    ref64 = hf_run(hf_decoders("gemma3"), ids, dtype=torch.float64)
    hf_decoders("gemma3").float()
    tr, weights, hidden = _ours(m, TEXTS["long"])
    assert weights[0].dtype == torch.float64
    # transformers' float64 Gemma still normalises and rotates in float32; attnscope's float64 run
    # is float64 throughout, so the two agree to float32's precision, not to float64's
    assert _maxdiff(weights, ref64["attentions"]) <= TOL
    assert _maxdiff(hidden, ref64["hidden_states"]) <= TOL


def test_windows_hide_what_they_should(decoders):
    """Mistral's window 5 and Qwen2's 6 (layer 1 only) and Gemma's 6 (layers 0, 1): no weight on a
    key 5 (6) or more positions back, and some weight there on full layers."""
    def beyond(w, window):
        L = w.shape[-1]
        i = torch.arange(L)
        return float(w[..., (i[:, None] - i[None, :]) >= window].abs().sum())

    for name, window, windowed in (("mistral_window", 5, [0, 1]), ("qwen2_window", 6, [1]),
                                   ("gemma3", 6, [0, 1]), ("qwen2_full", 6, [])):
        model = decoders[name]
        _, weights, _ = _ours(model, TEXTS["long"])
        for i, w in enumerate(weights):
            assert (beyond(w, window) == 0.0) == (i in windowed), (name, i)
        for i in range(model.config.n_layers):
            tr_mask = model.trace(TEXTS["long"], names=[f"layers.{i}.attn.mask"])[f"layers.{i}.attn.mask"]
            L = tr_mask.shape[-1]
            pos = torch.arange(L)
            d = pos[:, None] - pos[None, :]
            want = (d >= 0) & ((d < window) if i in windowed else True)
            assert tr_mask.shape == (1, 1, L, L) and torch.equal(tr_mask[0, 0], want)
