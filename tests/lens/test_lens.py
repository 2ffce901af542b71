"""The logit lens and direct logit attribution against float64 NumPy written from the formulas:
the final norm and the unembedding applied by hand to the traced stream, each head's output as
z_h · W_O^h, the post-norms and the final norm linearised with their frozen statistics; the DLA
parts sum to the model's own logit (difference)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnscope
import tests.models.decoders.tiny  # noqa: F401  (registers the decoder families)
from attnscope.errors import InputError
from attnscope.lens import direct_logit_attribution, logit_lens
from attnscope.testing.tiny import FAMILIES
from tests.memory_report import release_memory

TEXT = "the cat sat on the mat"
FAMS = ("gpt2", "llama_gqa", "gemma3", "olmo2", "bloom", "qwen3")


@pytest.fixture(scope="module")
def tiny(tiny_family):
    return tiny_family


def f64(t) -> np.ndarray:
    return t.detach().double().cpu().numpy()


def final_norm_np(model, h: np.ndarray) -> np.ndarray:
    """The model's final norm, by its formula in float64: LayerNorm or (offset + w)-scaled RMSNorm."""
    ln = model.ln_f
    if isinstance(ln, torch.nn.LayerNorm):
        mu, var = h.mean(-1, keepdims=True), h.var(-1, keepdims=True)
        return (h - mu) / np.sqrt(var + ln.eps) * f64(ln.weight) + f64(ln.bias)
    return h / np.sqrt((h ** 2).mean(-1, keepdims=True) + ln.eps) * (ln.offset + f64(ln.weight))


def W_U(model) -> np.ndarray:
    W = model.lm_head_weight if model.lm_head_weight is not None else model.embed.token_embedding.weight
    return f64(W)


def log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


@pytest.mark.parametrize("name", FAMS)
def test_the_lens_is_the_final_norm_and_unembedding_of_each_point(tiny, name):
    m = tiny(name)
    r = logit_lens(m, TEXT, k=3)
    n = m.config.n_layers
    names = [f"layers.{i}.{s}" for i in range(n) for s in ("attn_resid", "out")]
    tr = m.trace([TEXT], names=names + ["embed.*", "layers.0.*"])
    assert [p.name for p in r.points] == ["embed"] + names
    final = log_softmax(final_norm_np(m, f64(tr[f"layers.{n - 1}.out"][0])) @ W_U(m).T)  # (L, V)
    assert np.array_equal(r.target_ids.numpy(), final.argmax(-1))
    for j, p in enumerate(r.points[1:], start=1):
        lp = log_softmax(final_norm_np(m, f64(tr[p.name][0])) @ W_U(m).T)  # (L, V)
        rows = np.arange(lp.shape[0])
        np.testing.assert_allclose(r.target_prob[j].numpy(), np.exp(lp[rows, final.argmax(-1)]), atol=2e-6)
        kl = (np.exp(final) * (final - lp)).sum(-1)
        np.testing.assert_allclose(r.kl[j].numpy(), kl, atol=2e-5)
        np.testing.assert_allclose(r.top_probs[j].numpy(), np.exp(np.sort(lp, -1)[:, ::-1][:, :3]), atol=2e-6)
        rank = (lp > lp[rows, final.argmax(-1)][:, None]).sum(-1)
        assert np.array_equal(r.target_rank[j].numpy(), rank)
    assert float(r.kl[-1].abs().max()) == 0.0 and bool((r.target_rank[-1] == 0).all())
    # the embedding point: what enters layer 0, the stream's first term
    emb = f64(tr["layers.0.attn_resid"][0]) - f64(tr["layers.0.attn.out" if m.config.norm == "pre" else
                                                      "layers.0.attn_post_norm"][0])
    lp0 = log_softmax(final_norm_np(m, emb) @ W_U(m).T)
    np.testing.assert_allclose(r.kl[0].numpy(), (np.exp(final) * (final - lp0)).sum(-1), atol=5e-5)


def test_the_lens_of_a_float64_model_matches_to_1e_9(tiny):
    import copy
    m64 = copy.deepcopy(tiny("llama_gqa")).to(torch.float64)
    r = logit_lens(m64, TEXT, keep_logits=True)
    assert r.logits.dtype == torch.float64
    tr = m64.trace([TEXT], names=["layers.*.out"])
    want = final_norm_np(m64, f64(tr["layers.0.out"][0])) @ W_U(m64).T
    got = r.logits[2].numpy()
    assert np.abs(got - want).max() <= 1e-9 * np.abs(want).max()


def _components_np(m, tr, p: int) -> tuple[list[str], np.ndarray]:
    """The stream at position p as a sum, by hand: the embedding, each head's z_h · W_O^h, W_O's
    bias, each MLP's output — through the layer's post-norm where it has one (frozen rms)."""
    n, H = m.config.n_layers, m.config.n_heads
    post = m.config.norm in ("sandwich", "post_block")
    first = "layers.0.attn_post_norm" if post else "layers.0.attn.out"
    comps = [f64(tr["layers.0.attn_resid"][0, p]) - f64(tr[first][0, p])]
    names = ["embed"]
    for i in range(n):
        layer = m.layers[i]
        attn = layer.attn
        z = f64(tr[f"layers.{i}.attn.z"][0, :, p])  # (H, dh)
        W_O = f64(attn.W_O.weight).reshape(-1, H, attn.d_head)  # (d, H, dh)
        heads = [W_O[:, h] @ z[h] for h in range(H)]
        bias = f64(attn.W_O.bias) if attn.W_O.bias is not None else np.zeros_like(heads[0])
        mlp = f64(tr[f"layers.{i}.ffn.out"][0, p])
        if post:  # x / rms(x) · (offset + w), with rms of the whole block output
            def scale(norm, total):
                return (norm.offset + f64(norm.weight)) / np.sqrt((total ** 2).mean() + norm.eps)
            s_a = scale(layer.ln_attn_post, sum(heads) + bias)
            heads, bias = [h * s_a for h in heads], bias * s_a
            mlp = mlp * scale(layer.ln_ffn_post, mlp)
        comps += heads + [bias, mlp]
        names += [f"L{i}H{h}" for h in range(H)] + [f"L{i} attn bias", f"L{i} mlp"]
    return names, np.stack(comps)


@pytest.mark.parametrize("name", ("gpt2", "llama_gqa", "gemma3", "olmo2"))
def test_dla_parts_equal_the_components_projected_by_hand(tiny, name):
    m = tiny(name)
    d = direct_logit_attribution(m, TEXT, target=(3, 5), position=2)
    n = m.config.n_layers
    post = ["layers.*.attn_post_norm"] if m.config.norm in ("sandwich", "post_block") else []
    tr = m.trace([TEXT], names=["layers.*.attn.z", "layers.*.attn.out", "layers.*.ffn.out", "layers.*.attn_resid",
                                "layers.*.out"] + post)
    names, C = _components_np(m, tr, 2)
    total = f64(tr[f"layers.{n - 1}.out"][0, 2])
    np.testing.assert_allclose(C.sum(0), total, atol=2e-5)  # the stream is the sum of its parts
    ln = m.ln_f
    if isinstance(ln, torch.nn.LayerNorm):  # centred parts over the whole's σ; β the bias part
        sigma = np.sqrt(total.var() + ln.eps)
        normed = (C - C.mean(-1, keepdims=True)) / sigma * f64(ln.weight)
        bias = f64(ln.bias)
    else:
        normed = C / np.sqrt((total ** 2).mean() + ln.eps) * (ln.offset + f64(ln.weight))
        bias = np.zeros(C.shape[1])
    U = W_U(m)
    direction = U[3] - U[5]
    assert d.names == names + ["bias"]
    np.testing.assert_allclose(d.parts[:-1].numpy(), normed @ direction, atol=2e-5, rtol=1e-5)
    assert abs(float(d.parts[-1]) - bias @ direction) < 1e-5
    with torch.no_grad():
        logits = m.logits([TEXT])[0, 2]
    assert abs(float(d.parts.sum()) - float(logits[3] - logits[5])) <= 1e-4 * max(1.0, abs(d.logit))
    assert d.heads(n, m.config.n_heads).shape == (n, m.config.n_heads)


def test_bad_input_is_one_sentence(tiny):
    m = tiny("llama_gqa")
    for kw, words in [({"k": 0}, "k 0 must be"), ({"target": 10 ** 9}, "is not a token id"),
                      ({"target": "the cat sat"}, "tokens for this tokenizer")]:
        with pytest.raises(InputError, match=words):
            logit_lens(m, TEXT, **kw)
    with pytest.raises(InputError, match="position 99 is out of range"):
        direct_logit_attribution(m, TEXT, position=99)
    with pytest.raises(InputError, match=r"give one token or a pair"):
        direct_logit_attribution(m, TEXT, target=(1, 2, 3))
    with pytest.raises(InputError, match="both sides are token 3"):
        direct_logit_attribution(m, TEXT, target=(3, 3))
    with pytest.raises(InputError, match="not a one-stack language model"):
        logit_lens(tiny("bert") if "bert" in FAMILIES else attnscope.load(), TEXT)
    for f in (logit_lens, direct_logit_attribution):  # not the start token alone, read as if it were the text
        with pytest.raises(InputError, match="the text is empty"):
            f(m, "")


@pytest.fixture(params=("smollm2-135m", "gemma-3-270m"))
def real(request):
    """One installed decoder at a time: the one before is let go first (tests/memory_report.py)."""
    release_memory()
    m = attnscope.load(request.param)
    yield m
    del m
    release_memory()


def test_dla_parts_sum_to_the_real_models_logit(real):
    m = real
    text = "When Mary and John went to the store, John gave a drink to"
    d = direct_logit_attribution(m, text)
    with torch.no_grad():
        logits = torch.nn.functional.linear(m.run([text])[0, -1], m.lm_head_weight if m.lm_head_weight is not None
                                            else m.embed.token_embedding.weight)
    assert d.target == int(logits.argmax())
    assert abs(float(d.parts.sum()) - float(logits[d.target])) <= 1e-4 * abs(float(logits[d.target]))
    lens = logit_lens(m, text)
    assert float(lens.kl[-1].abs().max()) == 0.0 and lens.kl[1:].mean(1)[0] > lens.kl[1:].mean(1)[-1]


def test_dollar_signs_in_tokens_are_drawn_as_written(tmp_path):
    """A token "$$" (SmolLM2 has one) made matplotlib read a lens label as TeX: saving the figure
    died in a ParseException, and "$x_1$" was drawn as a subscript. Cell labels, position ticks and
    the DLA title's target are drawn as written (the plots' own labels were fixed the same way)."""
    import torch

    from attnscope.lens.dla import LogitAttribution
    from attnscope.lens.figures import dla_figure, lens_figure
    from attnscope.lens.logit_lens import LensResult
    from attnscope.lens.stream import Point

    words = {0: "$$", 1: "$x_1$"}
    tokens = ["$$", "$x_1$", "b"]
    ids = torch.tensor([[[0], [1], [0]], [[1], [0], [1]]])  # (P, L, 1)
    r = LensResult(tokens=tokens, points=[Point("embed", -1, "embed"), Point("layers.0.out", 0, "mlp")], top_ids=ids,
                   top_probs=torch.full((2, 3, 1), 0.5), target_ids=torch.tensor([0, 1, 0]),
                   target_prob=torch.full((2, 3), 0.5), target_rank=torch.zeros(2, 3, dtype=torch.long),
                   kl=torch.zeros(2, 3), decode=lambda i: words[i])
    d = LogitAttribution(tokens=tokens, position=2, target=0, names=["embed", "L0H0", "L0 mlp", "bias"],
                         parts=torch.tensor([0.5, 1.0, -0.25, 0.0]), logit=1.25, words="$$")
    for i, fig in enumerate((lens_figure(r), dla_figure(d, 1, 1))):
        fig.savefig(tmp_path / f"{i}.png")  # raised ParseException
    ax = lens_figure(r).axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == tokens
    assert all(not t.get_parse_math() for t in ax.texts + ax.get_xticklabels())
    assert not dla_figure(d, 1, 1)._suptitle.get_parse_math()


def test_the_dla_figure_ticks_whole_heads_and_layers():
    """The heads' grid of a 4-head model had ticks at head −0.5, 0.0, 0.5 … 3.5 (matplotlib's own
    choice on an image axis); a head or a layer is a count, so every tick is now a whole number."""
    import torch

    from attnscope.lens.dla import LogitAttribution
    from attnscope.lens.figures import dla_figure

    n_layers, n_heads = 2, 4
    names = ["embed"] + [x for i in range(n_layers)
                         for x in [f"L{i}H{h}" for h in range(n_heads)] + [f"L{i} attn bias", f"L{i} mlp"]] + ["bias"]
    d = LogitAttribution(tokens=["a"], position=0, target=0, names=names,
                         parts=torch.linspace(-1, 1, len(names)), logit=0.0, words="'a'")
    fig = dla_figure(d, n_layers, n_heads)
    fig.canvas.draw()
    ax = fig.axes[0]
    for ticks, n in ((ax.get_xticks(), n_heads), (ax.get_yticks(), n_layers)):
        shown = [t for t in ticks if -0.5 <= t <= n - 0.5]
        assert shown and all(float(t).is_integer() for t in shown), ticks


@pytest.mark.parametrize("name", FAMS)
def test_the_embed_point_is_what_enters_layer_0_in_bfloat16(tiny, name):
    """The ``embed`` point was read back as layer 0's residual sum minus its other operand,
    (x + a) − a: in bfloat16 that is x only to bf16 rounding of the sum (Gemma 3 270M: 1.7 %
    relative, its KL 389.3 nats where the true point gives 393.0). The point is what a forward
    pre-hook on layer 0 receives — the lens reads it exactly, and DLA's embedding part is it
    through the frozen final norm, projected on W_U[target]."""
    import copy
    m = copy.deepcopy(tiny(name)).to(torch.bfloat16)
    seen = {}
    handle = m.layers[0].register_forward_pre_hook(lambda mod, args: seen.__setitem__("x", args[0].detach()))
    try:
        r = logit_lens(m, TEXT, keep_logits=True)
    finally:
        handle.remove()
    x0 = seen["x"][0]  # (L, d)
    with torch.no_grad():
        want = m.lm_logits(m.ln_f(x0))  # (L, V)
    assert torch.equal(r.logits[0], want)
    d = direct_logit_attribution(m, TEXT)
    tr = m.trace([TEXT], names=[f"layers.{m.config.n_layers - 1}.out"])
    h = f64(tr[f"layers.{m.config.n_layers - 1}.out"][0, -1])  # (d,)
    ln = m.ln_f
    if isinstance(ln, torch.nn.LayerNorm):
        part = (f64(x0[-1]) - f64(x0[-1]).mean()) / np.sqrt(h.var() + ln.eps) * f64(ln.weight)
    else:
        part = f64(x0[-1]) / np.sqrt((h ** 2).mean() + ln.eps) * (ln.offset + f64(ln.weight))
    want_part = part @ W_U(m)[d.target]
    assert abs(float(d.parts[0]) - want_part) <= 0.01 * abs(want_part) + 1e-3


def test_dla_of_a_float16_model_with_large_activations_sums_to_its_logit(tiny):
    """The final norm was linearised in the model's dtype: in float16 a residual stream with values
    of a few hundred (SmolLM2 has them) squares past 65504, rms = inf, and every part and the logit
    read 0.0 (SmolLM2 in float16: 0.0 where the model's logit is 6.11). The model's own RMSNorm
    computes in float32; DLA now does its sums in at least float32 too."""
    import copy
    m = copy.deepcopy(tiny("llama_gqa")).to(torch.float16)
    with torch.no_grad():
        E = m.embed.token_embedding.weight
        E.mul_(400.0 / float(E.float().pow(2).mean().sqrt()))  # rms(x) ~ 400 at the embed point: x² overflows float16
    d = direct_logit_attribution(m, TEXT)
    with torch.no_grad():
        h = m.run([TEXT])[0, -1]  # (d,): after the model's own final norm
    want = f64(h) @ W_U(m)[d.target]
    assert np.isfinite(float(d.parts.sum())) and want != 0
    assert abs(float(d.parts.double().sum()) - want) <= 1e-2 * abs(want)
    assert abs(d.logit - want) <= 1e-2 * abs(want)


def test_a_run_that_overflows_is_one_sentence_not_nan(tiny):
    """Gemma 3 270M in float16 overflows in its own run: the lens and DLA returned NaN in every
    cell and part without a word. Now one sentence names the first point that is not finite."""
    import copy
    m = copy.deepcopy(tiny("gemma3")).to(torch.float16)
    ids = m.encode([TEXT]).input_ids[0]
    with torch.no_grad():
        m.embed.token_embedding.weight[int(ids[1]), 0] = float("inf")  # the second token's row overflows
    for f in (logit_lens, direct_logit_attribution):
        with pytest.raises(InputError, match=r"not finite \(inf or NaN\) at the point embed, in torch.float16"):
            f(m, TEXT)


def gpt2_bytes(piece: str) -> bytes:
    """The bytes a byte-level BPE piece spells, by GPT-2's published table (bytes_to_unicode):
    the printable Latin-1 bytes stand for themselves, the other 68 for chr(256 + n) in byte order."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    table, n = {chr(b): b for b in keep}, 0
    for b in range(256):
        if b not in keep:
            table[chr(256 + n)] = b
            n += 1
    return bytes(table[c] for c in piece)


def test_a_piece_of_a_character_reads_as_its_bytes_not_as_a_replacement_mark(tiny):
    """The lens showed every byte-level piece that holds part of a character as '\\ufffd' (SmolLM2's
    '北京是中国的首' has 8 such pieces: the embed point's top token read '�' 1.00 at each), so
    that different tokens looked alike; DLA's target words too. Now the bytes in hex, as every
    token display shows them (‹e5›‹8c›); whole characters and words as they decode."""
    m = tiny("gpt2")
    text = "北京 cat"
    ids = m.tokenizer.backend.encode(text, add_special_tokens=False).ids
    r = logit_lens(m, text, k=2)
    want = []
    for i in ids:
        raw = gpt2_bytes(m.tokenizer.id_to_token(i))
        try:
            want.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            want.append("".join(f"‹{b:02x}›" for b in raw))
    assert sum(w.startswith("‹") for w in want) >= 2 and want[-1] == "at"  # ... " c", "at"
    assert [r.decode(i) for i in ids] == want
    assert direct_logit_attribution(m, text, target=ids[0]).words == repr(want[0])


def test_a_numpy_integer_target_is_a_token_id(tiny):
    """target=np.int64(i) (what np.argmax gives) was refused with 'target np.int64(i) is not a token
    id of this model', though it is one (patching takes them). The target's probability at the last
    point and its logit are the final norm and W_U by hand in float64."""
    m = tiny("llama_gqa")
    tr = m.trace([TEXT], names=[f"layers.{m.config.n_layers - 1}.out"])
    logits = final_norm_np(m, f64(tr[f"layers.{m.config.n_layers - 1}.out"][0])) @ W_U(m).T  # (L, V)
    t = np.argsort(logits[-1])[-2]  # np.int64: the last position's second token
    r = logit_lens(m, TEXT, target=t, k=1)
    np.testing.assert_allclose(r.target_prob[-1].numpy(), np.exp(log_softmax(logits)[:, t]), atol=2e-6)
    d = direct_logit_attribution(m, TEXT, target=t)
    assert d.target == int(t) and d.logit == pytest.approx(logits[-1, t], rel=1e-5)


def test_a_numpy_integer_position_is_a_position(tiny):
    """direct_logit_attribution(position=np.int64(2)) was refused with 'position np.int64(2) is out of
    range: the text has 17 tokens'. The logit at position 2 is the final norm and W_U by hand."""
    m = tiny("llama_gqa")
    tr = m.trace([TEXT], names=[f"layers.{m.config.n_layers - 1}.out"])
    logits = final_norm_np(m, f64(tr[f"layers.{m.config.n_layers - 1}.out"][0])) @ W_U(m).T  # (L, V)
    d = direct_logit_attribution(m, TEXT, position=np.int64(2))
    assert d.position == 2 and d.target == int(logits[2].argmax())
    assert d.logit == pytest.approx(logits[2].max(), rel=1e-5) and float(d.parts.sum()) == pytest.approx(d.logit, rel=1e-5)
