"""Head ablation through the z hook against transformers models whose W_O columns of that head are
zeroed (an independent way to remove a head): MiniLM's pooled-embedding cosine, tiny GPT-2's loss."""

import copy

import pytest
import torch
import torch.nn.functional as F

import attnscope
from attnscope.analysis.batching import TextEncoder, bucket
from attnscope.analysis.corpus import Text
from attnscope.analysis.importance import ablation_sums, metric_name
from attnscope.models import default_model_path
from attnscope.testing import tiny as testing

TEXTS = ["Heads attend to different things.", "The previous token, the next token, or [SEP]?",
         "Ablate one head and see what changes in the sentence embedding."]


def token_batch(model, texts):
    enc = TextEncoder(model.tokenizer, 64)
    (items,) = bucket(enc.encode([Text(i, t, "") for i, t in enumerate(texts)]), len(texts))
    return enc.pad(items)


def hf_without_head(hf, layer, head, n_heads, gpt2=False):
    m = copy.deepcopy(hf)
    dh = m.config.hidden_size // n_heads
    with torch.no_grad():
        if gpt2:  # Conv1D weight (in, out): the head's input rows
            m.transformer.h[layer].attn.c_proj.weight[head * dh:(head + 1) * dh, :] = 0
        else:  # nn.Linear weight (out, in): the head's input columns
            m.encoder.layer[layer].attention.output.dense.weight[:, head * dh:(head + 1) * dh] = 0
    return m


def test_minilm_cosine_matches_transformers_with_the_head_removed():
    import transformers
    transformers.logging.set_verbosity_error()
    model = attnscope.load()
    assert metric_name(model) == "one_minus_cosine"
    hf = transformers.BertModel.from_pretrained(str(default_model_path()), attn_implementation="eager").eval()
    tb = token_batch(model, TEXTS)
    assert not bool(tb.attention_mask.all())  # padding is part of the test
    got = ablation_sums(model, tb, layers=[0, 5])
    mask = tb.attention_mask
    pool = lambda h: (h * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)  # (B, d)
    with torch.no_grad():
        e0 = pool(hf(input_ids=tb.input_ids, attention_mask=mask).last_hidden_state).double()
        for layer, head in [(0, 3), (5, 11), (5, 0)]:
            e = pool(hf_without_head(hf, layer, head, 12)(input_ids=tb.input_ids, attention_mask=mask)
                     .last_hidden_state).double()
            want = (1 - F.cosine_similarity(e, e0, dim=-1)).sum().item()
            s, c = got[layer]
            assert c[head].item() == len(TEXTS)
            assert s[head].item() == pytest.approx(want, rel=1e-3, abs=1e-7), (layer, head)
    assert set(got) == {0, 5} and (got[5][0] > 0).all()


def test_gpt2_loss_change_matches_transformers(tmp_path):
    import transformers
    transformers.logging.set_verbosity_error()
    folder = testing.tiny_gpt2(tmp_path / "gpt2")
    model = attnscope.load(folder)
    assert metric_name(model) == "loss_change"
    hf = transformers.GPT2LMHeadModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    texts = ["The softmax turns scores into weights.", "I like cats."]
    tb = token_batch(model, texts)
    got = ablation_sums(model, tb)
    ids, mask = tb.input_ids, tb.attention_mask

    def token_loss(m):
        logits = m(input_ids=ids, attention_mask=mask).logits[:, :-1].double()
        ce = F.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten(), reduction="none").view(ids.shape[0], -1)
        return (ce * mask[:, 1:]).sum().item()

    with torch.no_grad():
        base = token_loss(hf)
        n_targets = int(mask[:, 1:].sum())
        for layer in range(2):
            for head in range(4):
                want = token_loss(hf_without_head(hf, layer, head, 4, gpt2=True)) - base
                s, c = got[layer]
                assert c[head].item() == n_targets
                assert s[head].item() == pytest.approx(want, rel=1e-4, abs=1e-5), (layer, head)
