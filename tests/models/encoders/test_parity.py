"""DistilBERT, ALBERT, ELECTRA, XLM-RoBERTa and DeBERTa-v2/v3 match transformers (eager) to 1e-5 in
float32: every layer's hidden states and every head's attention weights, for one text and for a
padded batch (real tokens compared), English and Chinese vocabularies; the weights are the
checkpoint's (same parameter count as transformers' encoder, each HF tensor copied where it belongs)."""

import pytest
import torch

from tests.models.encoders.tiny import BUILDERS

TOL = 1e-5
TEXTS = {
    "en": ["The cat sat on the mat.", "Attention is all you need, said the paper in 2017!",
           "Queries and keys; values too? Yes."],
    "zh": ["我喜欢人工智能", "你好世界。", "北京是中国的首都。我爱北京！"],
}
CASES = [(name, lang) for name, (_, langs) in BUILDERS.items() for lang in langs.split("+")]


def hf_forward(hf, model, batch):
    kw = dict(input_ids=batch.input_ids, attention_mask=batch.attention_mask, output_hidden_states=True,
              output_attentions=True)
    if model.config.type_vocab_size > 0:
        kw["token_type_ids"] = batch.token_type_ids
    with torch.no_grad():
        return hf(**kw)


def reference_names(model):
    """Our names of transformers' hidden_states: the embeddings as the first layer gets them
    (after ALBERT's/ELECTRA's E → d projection), then each layer's output."""
    first = "embed.projected" if "embed.projected" in model.hook_names and model.family != "deberta-v2" else "embed.out"
    return [first] + [f"layers.{i}.out" for i in range(model.config.n_layers)]


@pytest.mark.parametrize("single", [True, False], ids=["single", "batch"])
@pytest.mark.parametrize("name,lang", CASES, ids=[f"{n}-{lang}" for n, lang in CASES])
def test_hidden_states_and_weights_match_transformers(name, lang, single, encoders, hf_encoders):
    model = encoders[name]
    texts = TEXTS[lang][:1] if single else TEXTS[lang]
    names = reference_names(model)
    tr = model.trace(texts, names=names + ["layers.*.attn.weights"])
    ref = hf_forward(hf_encoders(name), model, model.encode(texts))
    if not single:
        assert len(set(tr.lengths)) > 1, "the batch must really be padded"
    assert len(ref.hidden_states) == len(names) and len(ref.attentions) == model.config.n_layers
    if lang == "zh" and model.tokenizer.source.endswith("vocab.txt"):  # bert-base-chinese's ids, one per character
        assert model.encode(["我喜欢人工智能"]).ids[0] == [101, 2769, 1599, 3614, 782, 2339, 3255, 5543, 102]
    for b, n in enumerate(tr.lengths):
        for ours, theirs in zip(names, ref.hidden_states):
            err = (tr[ours][b, :n] - theirs[b, :n]).abs().max().item()
            assert err <= TOL, f"{name} text {b} {ours}: max abs error {err:.2e}"
        for i, theirs in enumerate(ref.attentions):
            err = (tr[f"layers.{i}.attn.weights"][b, :, :n, :n] - theirs[b, :, :n, :n]).abs().max().item()
            assert err <= TOL, f"{name} text {b} layer {i} weights: max abs error {err:.2e}"
        # the plain forward (fused kernel, nothing traced) gives the same last hidden state
        last = ref.hidden_states[-1][b, :n]
        assert (model.run(texts)[b, :n] - last).abs().max().item() <= TOL


@pytest.mark.parametrize("name", list(BUILDERS))
def test_every_checkpoint_weight_is_used_once(name, encoders, hf_encoders):
    """As many distinct parameters as transformers' encoder (pooler excluded), and nothing of the
    encoder left unused."""
    model, hf = encoders[name], hf_encoders(name)
    pooler = sum(p.numel() for n, p in hf.named_parameters() if n.startswith("pooler"))
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in hf.parameters()) - pooler
    heads = ("pooler.", "cls.", "predictions.", "lm_predictions.", "vocab_", "discriminator_predictions.",
             "generator_", "sop_classifier.", "lm_head.")
    assert [k for k in model.unused_weights if not k.startswith(heads)] == []
