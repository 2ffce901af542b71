"""Activation patching against independent references: a brute-force loop of one plain ``[h]`` hook
per (layer, head), and transformers' GPT-2 patched through its own modules; exact facts of the
residual stream; the result's JSON; bad input, one clear error each."""

import json
import math

import numpy as np
import pytest
import torch

import attnscope
from attnscope.errors import InputError
from attnscope.patching import PatchingResult, patch, patch_heads, patch_residual
from attnscope.testing import tiny as testing

CLEAN = "I like cats. I like dogs. Cats and dogs like"
CORRUPTED = "I like dogs. I like cats. Cats and dogs like"


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    return testing.tiny_gpt2(tmp_path_factory.mktemp("gpt2"))


@pytest.fixture(scope="module")
def gpt2(gpt2_dir):
    return attnscope.load(gpt2_dir)


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    from tests.models.decoders.tiny import llama_gqa
    return attnscope.load(llama_gqa(tmp_path_factory.mktemp("llama") / "m"))


def last_ld(model, ids, a, w):
    with torch.no_grad():
        logits = model.logits(attnscope.tokenizer.Batch(ids, torch.ones_like(ids), torch.zeros_like(ids),
                                                        [[""] * ids.shape[1]], [""]))
    return float(logits[0, -1, a].double() - logits[0, -1, w].double())


def brute_force_heads(model, clean, corrupted, a, w):
    """One run of the corrupted prompt per (layer, head), with a plain hook on z[h] returning the
    clean run's slice of that head."""
    c = model.config
    tr = model.trace(clean, names="layers.*.attn.z")
    ids = model.encode(corrupted).input_ids
    out = np.zeros((c.n_layers, c.n_heads))
    for l in range(c.n_layers):
        for h in range(c.n_heads):
            src = tr[f"layers.{l}.attn.z"][:, h]  # (1, L, d_head)
            with model.hooks({f"layers.{l}.attn.z[{h}]": lambda t, n, src=src: src.clone()}):
                out[l, h] = last_ld(model, ids, a, w)
    return out


def token_id(model, text):
    (i,) = model.tokenizer.backend.encode(text, add_special_tokens=False).ids
    return i


def test_heads_equal_a_brute_force_loop_of_hooks(gpt2):
    a, w = token_id(gpt2, " cats"), token_id(gpt2, " dogs")
    for bs in (1, 3, 32):
        r = patch_heads(gpt2, CLEAN, CORRUPTED, " cats", " dogs", batch_size=bs)
        want = brute_force_heads(gpt2, CLEAN, CORRUPTED, a, w)
        np.testing.assert_allclose(r.values.numpy(), want, rtol=1e-5, atol=1e-5)
    assert r.clean == pytest.approx(last_ld(gpt2, gpt2.encode(CLEAN).input_ids, a, w), abs=1e-6)
    assert r.corrupted == pytest.approx(last_ld(gpt2, gpt2.encode(CORRUPTED).input_ids, a, w), abs=1e-6)
    assert r.clean != pytest.approx(r.corrupted, abs=1e-3)  # the pair tests something
    assert not np.allclose(r.values.numpy(), r.corrupted, atol=1e-4)  # and some head matters


def test_grouped_query_heads_and_a_bos_prefix_equal_the_brute_force_loop(llama):
    clean, corrupted = "The quick brown fox jumps over the lazy dog.", "The quick brown dog jumps over the lazy fox."
    assert len(llama.encode(clean).tokens[0]) == len(llama.encode(corrupted).tokens[0])
    assert llama.encode(clean).tokens[0][0] == "<bos>" and llama.config.kv_heads < llama.config.n_heads
    a, w = token_id(llama, " the"), token_id(llama, "x")
    r = patch(llama, clean, corrupted, a, w, batch_size=5)
    np.testing.assert_allclose(r.values.numpy(), brute_force_heads(llama, clean, corrupted, a, w),
                               rtol=1e-5, atol=1e-5)
    assert r.values.shape == (llama.config.n_layers, llama.config.n_heads)


def hf_patched(hf, clean_ids, corrupted_ids, a, w, *, layer, head=None, pos=None, site="resid_pre", d_head=8):
    """transformers' GPT-2 with one activation of the clean run patched into the corrupted run,
    through its own modules: a head's slice of c_proj's input (the merged z) or one position of a
    block's input (resid_pre) or output (resid_post)."""
    blk = hf.transformer.h[layer]
    if head is not None:
        mod, cols = blk.attn.c_proj, slice(head * d_head, (head + 1) * d_head)
    else:
        mod = blk
    saved = {}

    def grab_in(m, args, kwargs):
        saved["x"] = (args[0] if args else kwargs["hidden_states"]).clone()

    def grab_out(m, args, kwargs, out):
        saved["x"] = (out[0] if isinstance(out, tuple) else out).clone()

    def put_in(m, args, kwargs):
        x = (args[0] if args else kwargs["hidden_states"]).clone()
        if head is not None:
            x[..., cols] = saved["x"][..., cols]
        else:
            x[:, pos] = saved["x"][:, pos]
        return ((x,) + tuple(args[1:]), kwargs) if args else (args, {**kwargs, "hidden_states": x})

    def put_out(m, args, kwargs, out):
        y = (out[0] if isinstance(out, tuple) else out).clone()
        y[:, pos] = saved["x"][:, pos]
        return (y,) + tuple(out[1:]) if isinstance(out, tuple) else y

    post = head is None and site == "resid_post"
    with torch.no_grad():
        hd = (mod.register_forward_hook(grab_out, with_kwargs=True) if post
              else mod.register_forward_pre_hook(grab_in, with_kwargs=True))
        hf(clean_ids)
        hd.remove()
        hd = (mod.register_forward_hook(put_out, with_kwargs=True) if post
              else mod.register_forward_pre_hook(put_in, with_kwargs=True))
        logits = hf(corrupted_ids).logits[0, -1]
        hd.remove()
    return float(logits[a].double() - logits[w].double())


def test_gpt2_equals_transformers_patched_through_its_own_modules(gpt2, gpt2_dir):
    import transformers
    transformers.logging.set_verbosity_error()
    hf = transformers.GPT2LMHeadModel.from_pretrained(str(gpt2_dir), attn_implementation="eager").eval()
    ci, xi = gpt2.encode(CLEAN).input_ids, gpt2.encode(CORRUPTED).input_ids
    a, w = token_id(gpt2, " cats"), token_id(gpt2, " dogs")
    heads = patch(gpt2, CLEAN, CORRUPTED, a, w)
    d_head = gpt2.config.d_model // gpt2.config.n_heads
    for l in range(gpt2.config.n_layers):
        for h in range(gpt2.config.n_heads):
            assert heads.values[l, h] == pytest.approx(hf_patched(hf, ci, xi, a, w, layer=l, head=h, d_head=d_head),
                                                       abs=2e-5)
    for site in ("resid_pre", "resid_post"):
        r = patch_residual(gpt2, CLEAN, CORRUPTED, a, w, site=site, batch_size=7)
        assert r.values.shape == (gpt2.config.n_layers, ci.shape[1])
        for l in range(gpt2.config.n_layers):
            for p in range(ci.shape[1]):
                want = hf_patched(hf, ci, xi, a, w, layer=l, pos=p, site=site)
                assert r.values[l, p] == pytest.approx(want, abs=2e-5), (site, l, p)


def test_exact_facts_of_the_residual_stream(gpt2):
    L = len(gpt2.encode(CLEAN).tokens[0])
    post = patch_residual(gpt2, CLEAN, CORRUPTED, " cats", " dogs", site="resid_post")
    # the last layer's output at the last position is all the logits read: the clean metric, exactly
    assert post.normalized[-1, -1] == pytest.approx(1.0, abs=1e-5)
    assert post.values[-1, :-1].numpy() == pytest.approx(post.corrupted, abs=1e-5)  # other positions: unread
    pre = patch_residual(gpt2, CLEAN, CORRUPTED, " cats", " dogs")  # resid_pre
    same = [i for i, (x, y) in enumerate(zip(pre.clean_tokens, pre.corrupted_tokens)) if x == y]
    assert len(same) < L  # the prompts differ somewhere
    # layer 0's input at a position whose token is the same in both prompts: the same embedding
    np.testing.assert_allclose(pre.values[0, same].numpy(), pre.corrupted, atol=1e-6)
    # patching every differing position of the embeddings at once is the clean run: check it by hand
    differ = [i for i in range(L) if i not in same]
    tr = gpt2.trace(CLEAN, names="embed.out")
    src = tr["embed.out"]

    def put(x, n):
        x = x.clone()
        x[:, differ] = src[:, differ]
        return x
    a, w = token_id(gpt2, " cats"), token_id(gpt2, " dogs")
    with gpt2.hooks({"embed.out": put}):
        assert last_ld(gpt2, gpt2.encode(CORRUPTED).input_ids, a, w) == pytest.approx(pre.clean, abs=1e-5)


def test_attn_in_and_resid_mid_sites_and_layer_selection(gpt2):
    for site, name in (("attn_in", "layers.{l}.attn_in"), ("resid_mid", "layers.{l}.attn_resid")):
        r = patch_residual(gpt2, CLEAN, CORRUPTED, " cats", " dogs", site=site, layers=[1])
        assert np.isnan(r.values[0].numpy()).all() and r.layers == [1]
        tr = gpt2.trace(CLEAN, names=name.format(l=1))
        src = tr[name.format(l=1)]
        a, w = token_id(gpt2, " cats"), token_id(gpt2, " dogs")
        for p in (0, 4, r.values.shape[1] - 1):
            def put(x, n, p=p, src=src):
                x = x.clone()
                x[:, p] = src[:, p]
                return x
            with gpt2.hooks({name.format(l=1): put}):
                want = last_ld(gpt2, gpt2.encode(CORRUPTED).input_ids, a, w)
            assert r.values[1, p] == pytest.approx(want, abs=1e-5)


def test_custom_metric_and_json(gpt2, tmp_path):
    a = token_id(gpt2, " cats")
    prob = lambda logits: torch.softmax(logits.double(), -1)[:, a]  # noqa: E731
    r = patch(gpt2, CLEAN, CORRUPTED, metric=prob, layers=[0])
    assert r.metric == "<lambda>" and r.tokens == {} and 0 < r.clean < 1
    ld = patch(gpt2, CLEAN, CORRUPTED, " cats", " dogs", layers=[1])
    d = json.loads(ld.save(tmp_path / "p.json").read_text(encoding="utf-8"))
    assert d["format"] == "attnscope.patching" and d["answer"] == {"text": " cats", "id": a}
    assert d["rows"] == ["layer 0", "layer 1"] and d["cols"] == [f"head {h}" for h in range(4)]
    assert d["values"][0] == [None] * 4  # layer 0 not patched
    for v, n in zip(d["values"][1], d["normalized"][1]):
        assert n == pytest.approx((v - d["corrupted"]["metric"]) / (d["clean"]["metric"] - d["corrupted"]["metric"]))
    assert d["clean"]["tokens"] == ld.clean_tokens and d["note"] is None
    top = ld.top(2)
    eff = (ld.values[1] - ld.corrupted).abs()
    assert top[0][0] == f"1.{int(eff.argmax())}"


def test_identical_prompts_leave_the_normalised_score_undefined(gpt2, tmp_path):
    r = patch(gpt2, CLEAN, CLEAN, " cats", " dogs", layers=[0])
    assert r.normalized is None and "undefined" in r.note()
    np.testing.assert_allclose(r.values[0].numpy(), r.clean, atol=1e-6)
    assert json.loads(r.save(tmp_path / "x.json").read_text())["normalized"] is None
    r.figure().savefig(tmp_path / "x.png")  # the raw metric, with the note under it


def test_figure_of_chinese_tokens_has_every_glyph(tmp_path, recwarn):
    toks = ["我", "喜欢", "人工智能", "。"]
    r = PatchingResult(what="residual", site="resid_pre", values=torch.tensor([[0.0, 1.0, 2.0, 0.5]] * 3,
                       dtype=torch.float64), clean=2.0, corrupted=0.0, rows=["layer 0", "layer 1", "layer 2"],
                       cols=toks, metric="m", model_name="t", clean_text="我喜欢人工智能。",
                       corrupted_text="我喜欢北京。", clean_tokens=toks, corrupted_tokens=toks)
    fig = r.figure()
    fig.savefig(tmp_path / "zh.png")
    assert not [w for w in recwarn if "Glyph" in str(w.message)]
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels == ["我 (0)", "喜欢 (1)", "人工智能 (2)", "。 (3)"]
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts[:4] == ["0.00", "0.50", "1.00", "0.25"]  # normalised: (v − 0) / (2 − 0)


@pytest.mark.parametrize("kw,msg", [
    (dict(corrupted="I like dogs. Cats and dogs like"), "tokenize to different lengths (12 vs 8 tokens)"),
    (dict(answer=" cat"), "the answer ' cat' is 3 tokens (' ' | 'c' | 'at'), not one"),
    (dict(wrong="dogs"), "With a leading space, ' dogs' is one token"),
    (dict(wrong=" cats"), "the answer and the wrong token are the same token"),
    (dict(answer=10**6), "token id 1000000 is out of range"),
    (dict(what="mlp"), "what must be 'heads' or 'residual'"),
    (dict(what="residual", site="ffn"), "unknown residual site 'ffn'; sites: resid_pre, attn_in, resid_mid, resid_post"),
    (dict(layers=[2]), "layers: 2 is not a layer; the model has 2 (0..1)"),
    (dict(layers=[-1]), "layers: -1 is not a layer; the model has 2 (0..1)"),
    (dict(layers=[1, 1]), "layers: 1 is given twice; name each layer once"),
    (dict(layers=[]), "layers is empty"),
    (dict(batch_size=0), "batch_size must be a positive integer"),
    (dict(clean=" "), "the clean prompt must be a non-empty text"),
    (dict(metric=lambda x: x), "give either a metric or answer and wrong tokens, not both"),
])
def test_bad_input(gpt2, kw, msg):
    args = dict(clean=CLEAN, corrupted=CORRUPTED, answer=" cats", wrong=" dogs")
    args.update(kw)
    with pytest.raises(InputError) as e:
        patch(gpt2, args.pop("clean"), args.pop("corrupted"), args.pop("answer"), args.pop("wrong"), **args)
    assert msg in str(e.value), str(e.value)


@pytest.mark.parametrize("call", [lambda m: patch(m, CLEAN, CORRUPTED, " cats", " dogs", site="resid_mid"),
                                  lambda m: patch_heads(m, CLEAN, CORRUPTED, " cats", " dogs", site="attn_in")])
def test_a_site_with_heads_is_refused_not_dropped(gpt2, call):
    """patch(what="heads", site="resid_mid") ran the heads and dropped the site (the CLI refuses
    --site with --what heads); and an unknown site passed unseen. One sentence now."""
    with pytest.raises(InputError, match="what='heads' patches each head's output z, so the site would change nothing"):
        call(gpt2)


def test_different_lengths_show_both_token_lists_and_the_fix(gpt2):
    with pytest.raises(InputError) as e:
        patch(gpt2, CLEAN, "I like dogs. Cats and dogs like", " cats", " dogs")
    s = str(e.value)
    assert "clean     (12): 'I' | ' like' | ' cats'" in s and "corrupted (8): 'I' | ' like' | ' dogs'" in s
    assert "first differ at position 2 (' cats' vs ' dogs')" in s and "Fix:" in s


def test_a_model_without_a_language_model_head(minilm_like=None):
    with pytest.raises(InputError, match="has no language-model head: patching measures next-token logits"):
        patch(attnscope.load(), "a b", "a c", "a", "b")


def test_a_metric_of_the_wrong_shape(gpt2):
    with pytest.raises(InputError, match=r"one value per row, shape \(B,\)"):
        patch(gpt2, CLEAN, CORRUPTED, metric=lambda logits: logits)
    assert isinstance(patch(gpt2, CLEAN, CORRUPTED, " cats", " dogs", layers=[0]), PatchingResult)
    assert math.isfinite(patch(gpt2, CLEAN, CORRUPTED, " cats", " dogs", layers=[0]).clean)


def test_an_encoder_decoder_model_is_refused_in_one_sentence(tmp_path):
    """T5/BART have a language-model head but their stack is not one stack of layers: patch gave an
    error about trace names and path_patch an AttributeError ('Seq2SeqModel' has no 'layers')."""
    import tests.models.seq2seq.tiny  # noqa: F401  (registers the encoder–decoder families)
    from attnscope.patching import ablated_metric, head_means, pair_group, path_patch
    from attnscope.testing.tiny import FAMILIES
    t5 = attnscope.load(FAMILIES["t5"].build(tmp_path / "t5"))
    text = "the cat sat on the mat"
    group = pair_group(t5, text, text, 3, 5)
    for run in (lambda: patch(t5, text, text, 3, 5), lambda: path_patch(t5, text, text, sender=(0, 0), answer=3, wrong=5),
                lambda: head_means(t5, group), lambda: ablated_metric(t5, group, [(0, 0)], [torch.zeros(1)])):
        with pytest.raises(InputError, match="is an encoder–decoder model") as e:
            run()
        assert "\n" not in str(e.value)


def test_numpy_integers_are_layers_and_token_ids(gpt2):
    """layers=[np.int64(1)] was refused as 'np.int64(1) is not a layer; the model has 2 (0..1)' and an
    answer id np.int64(5) as 'must be a non-empty text or a token id'. They are what Python ints are."""
    text = "the cat sat"
    want = patch(gpt2, text, text, 5, 7, layers=[1])
    got = patch(gpt2, text, text, np.int64(5), np.int32(7), layers=[np.int64(1)])
    assert np.array_equal(got.values.numpy(), want.values.numpy(), equal_nan=True)
    assert got.layers == [1] and got.tokens["answer"]["id"] == 5
