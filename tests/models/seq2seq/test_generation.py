"""Greedy generation with the cache equals transformers' ``generate(do_sample=False, num_beams=1)``
with each checkpoint's generation settings (BART: forced BOS, forced EOS, no-repeat 3-grams; the
Chinese BART: min_length, repetition_penalty); cached steps equal a full recompute; cross-attention
keys and values are computed once."""

import pytest
import torch

from tests.models.seq2seq.texts import PAIRS
from tests.models.seq2seq.tiny import BUILDERS

N = 12


def hf_greedy(hf, model, source, n=N, **kw):
    ids = model.encode(source).input_ids
    # transformers' cache for T5 sizes its layers from num_layers, not num_decoder_layers (3 ≠ 2 here)
    cache = model.config.n_decoder_layers == model.config.n_layers
    with torch.no_grad():
        out = hf.generate(input_ids=ids, do_sample=False, num_beams=1, max_new_tokens=n, use_cache=cache, **kw)
    return out[0].tolist()


@pytest.mark.parametrize("name", list(BUILDERS))
def test_greedy_ids_equal_transformers(name, seq2seq, hf_seq2seq_models):
    model, hf = seq2seq[name], hf_seq2seq_models(name)
    for source in PAIRS[BUILDERS[name][1]][0]:
        g = model.generate(source, max_new_tokens=N)
        assert [model.config.decoder_start_token_id] + g.new_ids == hf_greedy(hf, model, source)
        assert g.tokens[0] == model.tokenizer.id_to_token(model.config.decoder_start_token_id)


def test_bart_rules_are_applied_and_reported(seq2seq, hf_seq2seq_models):
    model, hf = seq2seq["bart"], hf_seq2seq_models("bart")
    source = PAIRS["en"][0][0]
    g = model.generate(source, max_new_tokens=N)
    assert g.settings["applied"] == {"forced_bos_token_id": 0, "forced_eos_token_id": 2, "no_repeat_ngram_size": 3}
    assert g.new_ids[0] == 0 and g.new_ids[-1] == 2 and len(g.new_ids) == N  # forced <s>, forced </s> at the limit
    ids = [2] + g.new_ids
    trigrams = [tuple(ids[i:i + 3]) for i in range(len(ids) - 2)]
    assert len(trigrams) == len(set(trigrams))
    plain = model.generate(source, max_new_tokens=N, checkpoint_rules=False)
    assert plain.new_ids != g.new_ids
    want = hf_greedy(hf, model, source, forced_bos_token_id=None, forced_eos_token_id=None, no_repeat_ngram_size=0)
    assert [2] + plain.new_ids == want[:1 + len(plain.new_ids)]


def test_one_new_token_with_forced_bos_and_eos_is_eos(seq2seq, hf_seq2seq_models):
    """The first new token is also the last: transformers applies the forced EOS after the forced
    BOS, so BART's one new token is </s> (attnscope gave <s>)."""
    model, hf = seq2seq["bart"], hf_seq2seq_models("bart")
    source = PAIRS["en"][0][0]
    for n in (1, 2):
        g = model.generate(source, max_new_tokens=n)
        assert [2] + g.new_ids == hf_greedy(hf, model, source, n=n)
        assert g.new_ids[-1] == 2  # reaching max_new_tokens ends with </s>


def test_cached_steps_equal_a_full_recompute(seq2seq):
    for name in ("t5", "bart_zh"):
        model = seq2seq[name]
        source = PAIRS[BUILDERS[name][1]][0][1]
        g = model.generate(source, max_new_tokens=8, logits=True, attentions=True, checkpoint_rules=False)
        src = model.encode(source)
        dec = torch.tensor([[model.config.decoder_start_token_id] + g.new_ids[:-1]])
        with torch.no_grad():
            full = model.lm_logits(model(src.input_ids, src.attention_mask, decoder_input_ids=dec))[0]  # (T, V)
            tr = model.trace(source, "", names=[])  # warm-up of the trace path (no names)
        assert tr.names == []
        for t, step in enumerate(g.logits):
            assert (step - full[t]).abs().max().item() <= 1e-4
        # the attention of the step that chose token t: its row of the full self/cross weights
        ids = dec
        with torch.no_grad(), model.hooks({}):
            h, ws, wc = model.decoder(ids, model.encoder(src.input_ids), need_weights=True)
        for t, a in enumerate(g.attentions):
            assert a["self"].shape == (model.config.n_decoder_layers, model.config.n_heads, t + 1)
            assert (a["self"] - torch.stack([w[0, :, t, :t + 1] for w in ws])).abs().max() <= 1e-5
            assert (a["cross"] - torch.stack([w[0, :, t] for w in wc])).abs().max() <= 1e-5


def test_cross_attention_keys_are_computed_once(seq2seq, monkeypatch):
    model = seq2seq["bart"]
    calls = []
    att = type(model.decoder.layers[0].cross_attn)
    project = att.project

    def counted(self, x, context=None):
        if context is not None:
            calls.append(self.layer_index)
        return project(self, x, context)
    monkeypatch.setattr(att, "project", counted)
    g = model.generate(PAIRS["en"][0][1], max_new_tokens=6)
    assert len(g.new_ids) > 1 and sorted(calls) == list(range(model.config.n_decoder_layers))  # once per layer


def test_min_new_tokens_takes_precedence_over_min_length(seq2seq_dirs, tmp_path):
    """With both set, transformers replaces min_length by min_new_tokens + 1 (the start token): a
    BART whose logits favour </s> stops after min_new_tokens, not at min_length."""
    import json
    import shutil

    from safetensors.torch import load_file, save_file

    import attnscope
    from tests.models.seq2seq.tiny import hf_seq2seq

    folder = tmp_path / "bart-eos"
    shutil.copytree(seq2seq_dirs["bart"], folder)
    sd = load_file(str(folder / "model.safetensors"))
    sd["final_logits_bias"][0, 2] += 50.0  # </s> wins every step it is not banned
    save_file(sd, str(folder / "model.safetensors"), metadata={"format": "pt"})
    gen = json.loads((folder / "generation_config.json").read_text())
    for key in ("forced_bos_token_id", "forced_eos_token_id", "no_repeat_ngram_size"):
        gen.pop(key, None)
    gen.update(min_length=9, min_new_tokens=3)
    (folder / "generation_config.json").write_text(json.dumps(gen))
    model, hf = attnscope.load(folder), hf_seq2seq(folder)
    source = PAIRS["en"][0][0]
    g = model.generate(source, max_new_tokens=N)
    want = hf_greedy(hf, model, source)
    assert len(want) == 1 + 3 + 1 and want[-1] == 2  # three new tokens, then </s>
    assert [model.config.decoder_start_token_id] + g.new_ids == want
    assert "min_length" not in g.settings["applied"] and g.settings["applied"]["min_new_tokens"] == 3
