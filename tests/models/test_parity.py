"""Every layer's hidden states and every head's attention weights match transformers (eager) to
1e-5 in float32: the packaged MiniLM, for one text and for a padded batch (real tokens compared).
The tiny random BERT (English and Chinese vocabularies), RoBERTa and GPT-2 checkpoints, like every
registered tiny checkpoint, go through the same checks in the family battery
(tests/models/test_family_battery.py); GPT-2 without attention scaling is checked here."""

import pytest

from tests.models.fixtures import hf_forward

TOL = 1e-5
TEXTS = {
    "zh": ["我喜欢人工智能", "你好世界。", "北京是中国的首都。我爱北京！"],
    "en": ["The cat sat on the mat.", "Attention is all you need, said the paper in 2017!",
           "Queries and keys; values too? Yes."],
}
CASES = [("minilm", "en")]


def _model(name, minilm, tiny_models):
    return minilm if name == "minilm" else tiny_models[name]


def _reference_names(model):
    """Our trace names, in the order of transformers' hidden_states tuple."""
    n = model.config.n_layers
    names = ["embed.out"] + [f"layers.{i}.out" for i in range(n)]
    if model.config.final_norm:  # GPT-2 applies ln_f to the last entry
        names[-1] = "final_norm"
    return names


@pytest.mark.parametrize("single", [True, False], ids=["single", "batch"])
@pytest.mark.parametrize("name,lang", CASES, ids=[c[0] for c in CASES])
def test_hidden_states_and_weights_match_transformers(name, lang, single, minilm, tiny_models, hf_models):
    model = _model(name, minilm, tiny_models)
    texts = TEXTS[lang][:1] if single else TEXTS[lang]
    names = _reference_names(model) + ["layers.*.attn.weights"]
    tr = model.trace(texts, names=names)
    ref = hf_forward(hf_models(name), model.encode(texts))
    if not single:
        assert len(set(tr.lengths)) > 1, "the batch must really be padded"
    assert len(ref.hidden_states) == len(_reference_names(model))
    for b, n in enumerate(tr.lengths):
        for ours, theirs in zip(_reference_names(model), ref.hidden_states):
            err = (tr[ours][b, :n] - theirs[b, :n]).abs().max().item()
            assert err <= TOL, f"{name} text {b} {ours}: max abs error {err:.2e}"
        for i, theirs in enumerate(ref.attentions):
            err = (tr[f"layers.{i}.attn.weights"][b, :, :n, :n] - theirs[b, :, :n, :n]).abs().max().item()
            assert err <= TOL, f"{name} text {b} layer {i} weights: max abs error {err:.2e}"
        # the plain forward (fast fused kernel, nothing traced) gives the same last hidden state
        last = ref.hidden_states[-1][b, :n]
        assert (model.run(texts)[b, :n] - last).abs().max().item() <= TOL


def test_minilm_shape_is_the_real_one(minilm, hf_models):
    c = minilm.config
    assert (c.n_layers, c.n_heads, c.d_model, c.d_ff, c.vocab_size) == (6, 12, 384, 1536, 30522)
    assert minilm.family == "bert" and minilm.name == "sentence-transformers/all-MiniLM-L6-v2"
    hf = hf_models("minilm")
    pooler = sum(p.numel() for p in hf.pooler.parameters())
    assert sum(p.numel() for p in minilm.parameters()) == sum(p.numel() for p in hf.parameters()) - pooler


def test_gpt2_without_scaling_matches_transformers(tiny_dirs, tmp_path):
    import json
    import shutil

    import transformers

    import attnscope

    folder = tmp_path / "unscaled"
    shutil.copytree(tiny_dirs["gpt2"], folder)
    cfg = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**cfg, "scale_attn_weights": False}))
    model = attnscope.load(folder)
    hf = transformers.GPT2Model.from_pretrained(str(folder), attn_implementation="eager").eval()
    texts = TEXTS["en"]
    tr = model.trace(texts, names=["final_norm", "layers.*.attn.weights"])
    ref = hf_forward(hf, model.encode(texts))
    for b, n in enumerate(tr.lengths):
        assert (tr["final_norm"][b, :n] - ref.last_hidden_state[b, :n]).abs().max().item() <= TOL
        for i, theirs in enumerate(ref.attentions):
            assert (tr[f"layers.{i}.attn.weights"][b, :, :n, :n] - theirs[b, :, :n, :n]).abs().max().item() <= TOL
