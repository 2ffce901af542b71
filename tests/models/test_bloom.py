"""BLOOM (one family file, ALiBi registered once) equals transformers' eager BloomForCausalLM on tiny
random checkpoints written by transformers: 4 heads, and 6 heads (d_model 48) whose slopes follow
the rule for a head count that is not a power of two. Hidden states of every layer and attention
weights to 1e-5, logits to 1e-4, alone and in right- and left-padded batches; the masked scores are
transformers' own (ALiBi adds slope · key position, not slope · (k − q))."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import attnscope
from attnscope.errors import InputError, ModelLoadError
from attnscope.testing.tiny import tiny_bloom, tiny_bloom_6heads, tiny_gpt2

TEXTS = ["The quick brown fox jumps over the lazy dog.", "Attention is all you need!",
         "Queries, keys and values are three projections of the same input."]
TOL, LOGITS_TOL = 1e-5, 1e-4
BUILDERS = {"bloom": tiny_bloom, "bloom_6heads": tiny_bloom_6heads}


@pytest.fixture(scope="module")
def blooms(tmp_path_factory):
    import transformers

    transformers.logging.set_verbosity_error()
    root = tmp_path_factory.mktemp("bloom")
    out = {}
    for name, build in BUILDERS.items():
        folder = build(root / name)
        hf = transformers.AutoModelForCausalLM.from_pretrained(str(folder), attn_implementation="eager",
                                                               dtype=torch.float32).eval()
        out[name] = (folder, attnscope.load(folder), hf)
    return out


def _ours(model, input_ids, attention_mask):
    """Hidden states in transformers' order (embedding LayerNorm, each layer, the last after ln_f),
    the weights of every layer, and the logits of the plain forward."""
    L = model.config.n_layers
    names = ["embed.out"] + [f"layers.{i}.out" for i in range(L - 1)] + ["final_norm"]
    hooks, got = [], {}
    points = dict(model.named_modules())
    for n in names + [f"layers.{i}.attn.weights" for i in range(L)]:
        hooks.append(points[n].add_hook(lambda t, name, n=n: got.__setitem__(n, t.detach().clone())))
    try:
        with torch.no_grad():  # a hook on attn.weights makes the layer form them
            hidden = model(input_ids, attention_mask)
    finally:
        for h in hooks:
            h.remove()
    with torch.no_grad():
        logits = model.lm_logits(hidden)
    return [got[n] for n in names], [got[f"layers.{i}.attn.weights"] for i in range(L)], logits


def _hf(hf, input_ids, attention_mask):
    with torch.no_grad():
        out = hf(input_ids=input_ids, attention_mask=attention_mask, output_attentions=True,
                 output_hidden_states=True, use_cache=False)
    return list(out.hidden_states), list(out.attentions), out.logits


def _diffs(ours, theirs, rows):
    """Largest |ours − theirs| over hidden states, weights and logits, at the real tokens ``rows``
    ((b, index tensor) pairs)."""
    (h1, w1, l1), (h2, w2, l2) = ours, theirs
    dh = max(float((a[b, r] - c[b, r]).abs().max()) for a, c in zip(h1, h2) for b, r in rows)
    dw = max(float((a[b][:, r][:, :, r] - c[b][:, r][:, :, r]).abs().max()) for a, c in zip(w1, w2) for b, r in rows)
    dl = max(float((l1[b, r] - l2[b, r]).abs().max()) for b, r in rows)
    return dh, dw, dl


def _left_padded(batch, pad_id):
    """The right-padded batch moved to the right end of its rows (left padding)."""
    ids, mask = batch.input_ids.clone(), batch.attention_mask.clone()
    for b, n in enumerate(batch.lengths):
        ids[b] = torch.cat([torch.full((ids.shape[1] - n,), pad_id), batch.input_ids[b, :n]])
        mask[b] = torch.cat([torch.zeros(ids.shape[1] - n, dtype=mask.dtype), batch.attention_mask[b, :n]])
    return ids, mask


@pytest.mark.parametrize("name", list(BUILDERS))
def test_one_text_equals_transformers(blooms, name):
    _, model, hf = blooms[name]
    assert model.family == "bloom" and model.config.position == "alibi" and model.embed.position_embedding is None
    batch = model.encode(TEXTS[0])
    ours = _ours(model, batch.input_ids, batch.attention_mask)
    theirs = _hf(hf, batch.input_ids, batch.attention_mask)
    assert len(ours[0]) == len(theirs[0]) == model.config.n_layers + 1
    n = batch.lengths[0]
    dh, dw, dl = _diffs(ours, theirs, [(0, torch.arange(n))])
    assert dh <= TOL and dw <= TOL and dl <= LOGITS_TOL, (dh, dw, dl)
    # the trace records the same numbers (names, not hooks)
    tr = model.trace(TEXTS[0], names=["layers.*.attn.weights", "final_norm", "layers.*.attn.bias"])
    assert float((tr["final_norm"][0] - theirs[0][-1][0]).abs().max()) <= TOL
    assert float((tr["layers.1.attn.weights"] - theirs[1][1]).abs().max()) <= TOL


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("name", list(BUILDERS))
def test_padded_batch_equals_transformers_and_each_text_alone(blooms, name, side):
    """Right padding, and left padding, which transformers' BLOOM supports by numbering the keys
    among the real tokens (cumsum of the mask): each text gets what it gets alone."""
    _, model, hf = blooms[name]
    batch = model.encode(TEXTS)
    assert len(set(batch.lengths)) > 1  # really padded
    ids, mask = (batch.input_ids, batch.attention_mask) if side == "right" else _left_padded(batch, model.config.pad_token_id)
    ours = _ours(model, ids, mask)
    theirs = _hf(hf, ids, mask)
    T = ids.shape[1]
    rows = [(b, torch.arange(n) if side == "right" else torch.arange(T - n, T)) for b, n in enumerate(batch.lengths)]
    dh, dw, dl = _diffs(ours, theirs, rows)
    assert dh <= TOL and dw <= TOL and dl <= LOGITS_TOL, (side, dh, dw, dl)
    for (b, r), text in zip(rows, TEXTS):
        alone = model.encode(text)
        h, w, lg = _ours(model, alone.input_ids, alone.attention_mask)
        assert float((ours[0][-1][b, r] - h[-1][0]).abs().max()) <= TOL
        assert float((ours[1][0][b][:, r][:, :, r] - w[0][0]).abs().max()) <= TOL
        pads = torch.ones(T, dtype=torch.bool)
        pads[r] = False
        assert all(float(x[b][:, r][:, :, pads].abs().sum()) == 0.0 for x in ours[1])  # padded keys get 0


@pytest.mark.parametrize("name", list(BUILDERS))
def test_masked_scores_and_bias_are_transformers(blooms, name):
    """attn.bias is transformers' build_alibi_tensor (slope_h · key position, the slopes of
    _get_alibi_slopes: 6 heads take 4 of 2^(−8k/4) and 2 of 2^(−8k/8), k odd), and attn.masked is
    BLOOM's alibi.baddbmm(q, kᵀ, alpha=1/√d) at every allowed key — not slope · (k − q)."""
    from transformers.models.bloom.modeling_bloom import _get_alibi_slopes, build_alibi_tensor

    _, model, hf = blooms[name]
    H = model.config.n_heads
    batch = model.encode(TEXTS)
    tr = model.trace(TEXTS, names=["layers.0.attn_in", "layers.0.attn.bias", "layers.0.attn.masked"])
    B, T = batch.input_ids.shape
    alibi = build_alibi_tensor(batch.attention_mask, H, torch.float32).view(B, H, 1, T)
    assert torch.equal(tr["layers.0.attn.bias"], alibi.expand(B, H, T, T))
    assert torch.equal(model.layers[0].attn.position_bias(H, torch.arange(3)[None], torch.arange(3)[None])[0, :, 0, 1],
                       _get_alibi_slopes(H, "cpu"))
    if H == 6:
        assert _get_alibi_slopes(6, "cpu").tolist() == [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8, 2 ** -1, 2 ** -3]
    att = hf.transformer.h[0].self_attention
    with torch.no_grad():
        q, k, _ = att._reshape(att.query_key_value(tr["layers.0.attn_in"]))  # (B, H, T, d) each
        d = q.shape[-1]
        theirs = alibi.view(B * H, 1, T).baddbmm(q.reshape(B * H, T, d), k.reshape(B * H, T, d).transpose(1, 2),
                                                 beta=1.0, alpha=d ** -0.5).view(B, H, T, T)
    masked = tr["layers.0.attn.masked"]
    for b, n in enumerate(batch.lengths):
        allowed = torch.ones(n, n, dtype=torch.bool).tril()
        assert float((masked[b, :, :n, :n] - theirs[b, :, :n, :n])[:, allowed].abs().max()) <= TOL
        assert torch.isinf(masked[b, :, :n, :n][:, ~allowed]).all()
        # the paper's slope·(k − q) would differ by slope·q in row q: not what is recorded
        paper = theirs[b, :, :n, :n] - alibi[b, :, :, :n].transpose(-1, -2)[..., :n, :]
        assert float((masked[b, :, n - 1, :n] - paper[:, n - 1]).abs().max()) > 1e-3


def test_the_fused_projection_is_split_per_head(blooms):
    """query_key_value's rows are [q_h; k_h; v_h] per head; W_qkv holds [W_Q; W_K; W_V]."""
    _, model, hf = blooms["bloom_6heads"]
    H, d = model.config.n_heads, model.config.d_head
    W = hf.transformer.h[1].self_attention.query_key_value.weight.view(H, 3, d, -1)
    for h in (0, 5):
        mine = model.layers[1].attn.head_weights(h)
        for j, name in enumerate(("W_Q", "W_K", "W_V")):
            assert torch.equal(mine[name].T, W[h, j])


def test_the_hubs_spelling_of_the_sizes_is_read_as_transformers_reads_it(tmp_path):
    """bigscience's own configs (bloom-560m: ``n_embed``, ``num_attention_heads``, ``num_hidden_layers``,
    no ``n_head``/``n_layer``/``hidden_size``) are BloomConfig's aliases; they were ignored, and the
    model built with the defaults (8 heads, 2 layers): wrong slopes and head split, layers dropped."""
    import transformers

    transformers.logging.set_verbosity_error()
    folder = tiny_bloom(tmp_path / "hub-spelling", seed=7, n_heads=6, d_model=48, n_layers=3)
    cfg = json.loads((folder / "config.json").read_text())
    for hub, ours in (("n_embed", "hidden_size"), ("num_attention_heads", "n_head"), ("num_hidden_layers", "n_layer")):
        cfg[hub] = cfg.pop(ours)
    (folder / "config.json").write_text(json.dumps(cfg))
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(folder), attn_implementation="eager",
                                                           dtype=torch.float32).eval()
    assert (hf.config.n_head, hf.config.n_layer, hf.config.hidden_size) == (6, 3, 48)
    model = attnscope.load(folder)
    assert (model.config.n_heads, model.config.n_layers, model.config.d_model) == (6, 3, 48)
    batch = model.encode(TEXTS[0])
    dh, dw, dl = _diffs(_ours(model, batch.input_ids, batch.attention_mask),
                        _hf(hf, batch.input_ids, batch.attention_mask), [(0, torch.arange(batch.lengths[0]))])
    assert dh <= TOL and dw <= TOL and dl <= LOGITS_TOL, (dh, dw, dl)


def test_no_context_limit_past_seq_length_as_transformers(blooms, tmp_path):
    """ALiBi has no table of positions: transformers' BLOOM runs any length (config.json's
    ``seq_length``, 2,048 in the released checkpoints, is the training length). attnscope refused
    longer texts ("more than the model's 2048 positions"); with seq_length 8 here, a longer text, a
    cached continuation past it and greedy generation agree with transformers' eager BLOOM."""
    import shutil

    import transformers

    folder = tmp_path / "short-seq-length"
    shutil.copytree(blooms["bloom"][0], folder)
    cfg = json.loads((folder / "config.json").read_text())
    cfg["seq_length"] = 8
    (folder / "config.json").write_text(json.dumps(cfg))
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(folder), attn_implementation="eager",
                                                           dtype=torch.float32).eval()
    model = attnscope.load(folder)
    assert model.config.max_positions == 8  # the training length, recorded
    batch = model.encode(TEXTS[2])
    n = batch.lengths[0]
    assert n > 2 * 8
    dh, dw, dl = _diffs(_ours(model, batch.input_ids, batch.attention_mask),
                        _hf(hf, batch.input_ids, batch.attention_mask), [(0, torch.arange(n))])
    assert dh <= TOL and dw <= TOL and dl <= LOGITS_TOL, (dh, dw, dl)
    g = model.generate(TEXTS[0], max_new_tokens=12, eos_token_ids=[])
    ids = torch.tensor([g.prompt_ids])
    with torch.no_grad():
        theirs = hf.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=12,
                             min_new_tokens=12, eos_token_id=None, pad_token_id=3)
    assert len(g.prompt_ids) + 12 > 8 and g.new_ids == theirs[0, ids.shape[1]:].tolist()
    assert model.config.context_limit is None
    # analyze cuts texts at the trained length unless told more (the tokenizer no longer says it)
    from attnscope.analysis import analyze

    f = tmp_path / "c.txt"
    f.write_text(TEXTS[2] + "\n", encoding="utf-8")
    assert analyze(f, model, progress=False).max_length == 8
    assert analyze(f, model, max_length=n, progress=False).max_length == n
    # GPT-2's learned positions do end: its n_positions stays a refusal
    gpt2 = attnscope.load(tiny_gpt2(tmp_path / "gpt2"))
    assert gpt2.config.context_limit == gpt2.config.max_positions == 64
    with pytest.raises(InputError, match="more than the model's context of 64"):
        gpt2.decode(torch.zeros(1, 65, dtype=torch.long))


def test_unsupported_config_is_one_sentence(blooms, tmp_path):
    import shutil

    folder = tmp_path / "post-ln-residual"
    shutil.copytree(blooms["bloom"][0], folder)
    cfg = json.loads((folder / "config.json").read_text())
    cfg["apply_residual_connection_post_layernorm"] = True
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelLoadError, match="apply_residual_connection_post_layernorm is not supported"):
        attnscope.load(folder)


def test_explain_row_cli_and_path(blooms, capsys):
    """explain's row (the CLI on the folder) and --path show ALiBi's term as a step and reproduce the
    model's weights; every number of the path agrees with the model's own trace."""
    from attnscope.cli import main

    folder, model, _ = blooms["bloom_6heads"]
    layer, head, qpos = 1, 5, 6
    assert main(["explain", "--model", str(folder), "--text", TEXTS[0], "--position", str(qpos),
                 "--layer", str(layer), "--head", str(head)]) == 0
    out = capsys.readouterr().out
    assert "position bias" in out and "ALiBi" in out
    w = attnscope.explain(text=TEXTS[0], model=model, layer=layer, head=head, position=qpos, path=True)
    n = len(model.encode(TEXTS[0]).tokens[0])
    slope = 2.0 ** -3  # head 5 of 6: the second of the odd powers of 2^(−8/8)
    assert list(w.values["bias"]) == [slope * j for j in range(n)]
    traced = model.trace(TEXTS[0], names=[f"layers.{layer}.attn.weights"])[f"layers.{layer}.attn.weights"]
    assert abs(w.values["weights"] - traced[0, head, qpos].double().numpy()).max() <= 1e-6
    assert max(w.meta["trace_path_max_abs_diff"].values()) <= 1e-5
    assert "s' + b" in w.render("markdown") and "s' + b" in w.render("markdown", lang="zh")


def test_analyze_reads_the_models_weights(blooms, tmp_path):
    """analyze over a corpus: its statistics are those of the weights each text gets traced alone
    (to the previous token, over visible keys), importance as a loss change."""
    from attnscope.analysis import analyze

    _, model, _ = blooms["bloom"]
    f = tmp_path / "c.txt"
    f.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    r = analyze(f, model, batch_size=2, importance_texts=2, importance_batch=2, progress=False)
    assert r.importance_metric == "loss_change" and r.importance.shape == (2, 4)
    num, den = np.zeros((2, 4)), 0
    for t in TEXTS:
        tr = model.trace(t, names="layers.*.attn.weights")
        for layer in range(2):
            w = tr[f"layers.{layer}.attn.weights"][0].double().numpy()  # (H, n, n)
            num[layer] += np.diagonal(w, offset=-1, axis1=1, axis2=2).sum(-1)
        den += w.shape[-1] - 1  # queries with a previous token
    np.testing.assert_allclose(r.means["to_prev"], num / den, rtol=2e-5, atol=2e-6)


def test_the_served_viewers_held_text_adds_the_term(blooms):
    """A long text the server holds (attnscope.viewer.held) answers rows and a step with ALiBi's
    term: the model's own weights (without the term they would be far off)."""
    from attnscope.viewer.held import HeldText
    from attnscope.viewer.run import display_tokens

    _, model, _ = blooms["bloom_6heads"]
    tr = model.trace(TEXTS[2], names=["layers.*.attn.q", "layers.*.attn.k", "layers.*.attn.v", "layers.*.attn.weights"])
    held = HeldText(tr, display_tokens(model, tr.text_tokens(0)))
    n = tr.length(0)
    plain = HeldText(tr, display_tokens(model, tr.text_tokens(0)))
    plain.bias_np = None  # the page's arithmetic without the term
    assert np.abs(plain.rows(1, [4], 0, n)[0] - tr["layers.1.attn.weights"][0, 4].double().numpy()).max() > 0.05
    for layer in range(2):
        w = tr[f"layers.{layer}.attn.weights"][0].double().numpy()  # (H, n, n)
        assert np.abs(held.rows(layer, list(range(6)), 0, n) - w).max() <= 1e-6
        st = held.steps(layer, 4, n - 1)
        assert np.abs(st["weights"] - w[4, n - 1]).max() <= 1e-6
        assert st["scaled"][3] - st["raw"][3] * model.config.d_head ** -0.5 == pytest.approx(0.5 * 3)  # slope 2^-1


@pytest.mark.parametrize("lang,want", [("en", "max_length must be a positive integer (the model sets no limit), got 0"),
                                       ("zh", "max_length 必须是正整数（模型没有长度上限），收到的是 0")])
def test_a_bad_max_length_without_a_limit_names_no_limit(blooms, lang, want):
    """With no context limit (ALiBi) the tokenizer's bound is sys.maxsize, and a bad max_length read
    'must be an integer in [1, 9223372036854775807] (the model's positions)'."""
    from attnscope.i18n import error_message

    model = attnscope.load(blooms["bloom"][0])
    with pytest.raises(InputError) as e:
        model.encode(TEXTS[0], max_length=0)
    assert error_message(e.value, lang) == want
