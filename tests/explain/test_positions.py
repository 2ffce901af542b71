"""explain positions against independent references: mpmath at 50 digits for the sinusoids (every
shown digit is the true one), transformers' apply_rotary_pos_emb / LlamaRotaryEmbedding /
ROPE_INIT_FUNCTIONS for rotary positions (a tiny Llama 3 checkpoint with scaled frequencies), and
T5Attention._relative_position_bucket for T5's buckets; in Markdown, rich, JSON and Chinese."""

import json
import re

import mpmath
import numpy as np
import pytest
import torch

from attnscope.cli import main
from attnscope.errors import AttnscopeError
from attnscope.explain import explain

from .reference import half_up

mpmath.mp.dps = 50


def true(x, d):
    """An mpmath number rounded half-up at d decimals, as text (the true digits)."""
    return half_up(float(mpmath.nstr(x, 40, strip_zeros=False)), d) if abs(x) > mpmath.mpf(10) ** -30 else "0"


def mp_pe(p, i, d, base=10000):
    """(sin, cos) of p / base^(2i/d), 50 digits."""
    a = mpmath.mpf(p) / mpmath.power(base, mpmath.mpf(2 * i) / d)
    return mpmath.sin(a), mpmath.cos(a), a


def numbers(text):
    return set(re.findall(r"-?\d+\.\d+", text))


@pytest.mark.parametrize("p, dim, k, d, decimals", [(5, 2, 3, 8, 4), (1000, 15, -7, 16, 10), (0, 0, 4, 4, 6)])
def test_sinusoids_have_true_digits(p, dim, k, d, decimals):
    w = explain(lesson="positions", position=p, dim=dim, offset=k, d_model=d)
    for lang in ("en", "zh"):
        md = w.render("markdown", lang=lang, decimals=decimals)
        nums = numbers(md) | set(re.findall(r"-?\d+", md))
        for i in range(d // 2):
            om = 1 / mpmath.power(10000, mpmath.mpf(2 * i) / d)
            for x in (mpmath.sin(p * om), mpmath.cos(p * om), p * om, mpmath.sin((p + k) * om),
                      mpmath.cos((p + k) * om), mpmath.cos(k * om), mpmath.sin(k * om), om):
                want = true(x, decimals)
                whole = abs(x - mpmath.nint(x)) < mpmath.mpf(10) ** -25  # an integer is shown as one
                if not whole and want.rstrip("0") not in ("0.", "1.", "-1.", "-0."):
                    assert want in nums, (lang, i, want)
        s, c, a = mp_pe(p, dim // 2, d)
        assert float(w.values["value"]) == pytest.approx(float(s if dim % 2 == 0 else c), abs=1e-15)
    # float64 values in JSON, unrounded
    js = json.loads(w.render("json"))
    want = [float(f(mp_pe(p, j // 2, d)[0 if j % 2 == 0 else 1])) for j in range(d) for f in (lambda x: x,)]
    np.testing.assert_allclose(js["values"]["pe"], want, rtol=0, atol=2e-16 * max(1, p))


def test_pe_shifted_is_the_rotation_of_pe():
    w = explain(lesson="positions", position=7, dim=5, offset=4, d_model=12)
    pe, pk = w.values["pe"], w.values["pe_shifted"]
    for i in range(6):
        omega = 10000 ** (-2 * i / 12)
        M = np.array([[np.cos(4 * omega), np.sin(4 * omega)], [-np.sin(4 * omega), np.cos(4 * omega)]])
        np.testing.assert_allclose(M @ pe[2 * i:2 * i + 2], pk[2 * i:2 * i + 2], atol=1e-15)
        np.testing.assert_allclose(w.values["rotation"][i], M, atol=1e-16)
    md = w.render("markdown")
    assert "PE(11) is PE(7) turned: a rotation per pair that depends on k = 4 only" in md
    assert w.meta["max_abs_diff"] < 1e-15
    # PE(p)·PE(p+k) = Σ cos(kω_i), the same from every p
    s = sum(mpmath.cos(4 / mpmath.power(10000, mpmath.mpf(2 * i) / 12)) for i in range(6))
    assert md.count(f"| {true(s, 4)} |") == 3


def rotate_half_ref(x, pos, inv):
    """transformers' apply_rotary_pos_emb (rotate_half pairing), float64."""
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb
    q = torch.tensor(x, dtype=torch.float64)[None, None, None, :]  # (1, 1, 1, d)
    ang = torch.tensor([pos * f for f in inv], dtype=torch.float64)
    emb = torch.cat([ang, ang])[None, None, :]  # (1, 1, d)
    out, _ = apply_rotary_pos_emb(q, q, emb.cos(), emb.sin())
    return out[0, 0, 0].numpy()


def test_rotary_against_apply_rotary_pos_emb():
    x = [0.5, -1.0, 2.0, 0.25, 1.0, 0.0, -0.5, 1.5]
    w = explain(lesson="positions", scheme="rotary", position=6, dim=2, offset=5, vector=x)
    inv = [10000 ** (-2 * i / 8) for i in range(4)]
    np.testing.assert_allclose(w.values["rotated"], rotate_half_ref(x, 6, inv), atol=1e-15)
    np.testing.assert_allclose(w.values["rotated_shifted"], rotate_half_ref(x, 11, inv), atol=1e-15)
    th = inv[2]
    Rm = lambda a: np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])  # noqa: E731
    np.testing.assert_allclose(w.values["rotation"], Rm(6 * th), atol=1e-16)
    np.testing.assert_allclose(w.values["rotation_offset"] @ w.values["rotation"], Rm(11 * th), atol=1e-15)
    # the distance proof: the same q·k from (3, 1) and (7, 5)
    q = np.array(x)
    s = [rotate_half_ref(x, m, inv) @ rotate_half_ref(x, n, inv) for m, n in ((3, 1), (7, 5), (3, 0))]
    got = [v["rotated"] for v in w.values["distance"]]
    np.testing.assert_allclose(got, s, atol=1e-14)
    assert q.size == 8
    for lang in ("en", "zh"):
        md = w.render("markdown", lang=lang)
        nums = numbers(md)
        trig = [f(q * th_j) for th_j in inv for q in (6, 11) for f in (np.cos, np.sin)]
        trig += [np.cos(5 * th), np.sin(5 * th)] + [q * th_j for th_j in inv for q in (5, 6, 11)]
        for v in list(rotate_half_ref(x, 6, inv)) + list(rotate_half_ref(x, 11, inv)) + s + trig + inv:
            if not float(v).is_integer():
                assert half_up(v, 4) in nums, (lang, v)
    assert "feature 2 belongs to pair 2: features 2 and 6".lower() in w.render("markdown").lower()


def test_rotary_adjacent_pairing():
    w = explain(lesson="positions", scheme="rotary", position=3, dim=3, offset=1, pairing="adjacent", d_k=4, base=100)
    th = [100 ** (-2 * i / 4) for i in range(2)]
    z = np.exp(1j * 3 * np.array(th))  # (1, 0) per pair turned by 3θ_i = (cos, sin)
    want = np.empty(4)
    want[0::2], want[1::2] = z.real, z.imag
    np.testing.assert_allclose(w.values["rotated"], want, atol=1e-16)
    assert w.meta["pair"] == 1 and w.meta["pairing"] == "adjacent"


def test_rotary_from_a_model_uses_its_scaled_frequencies(tmp_path):
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    import attnscope
    from tests.models.decoders.tiny import hf_model, llama3_scaled

    folder = llama3_scaled(tmp_path / "llama3")
    model = attnscope.load(folder)
    w = explain(lesson="positions", scheme="rotary", model=model, position=9, offset=4)
    hf = hf_model(folder)
    rope = LlamaRotaryEmbedding(hf.config)
    x = torch.zeros(1, 1, 16)
    cos, sin = rope(x, torch.tensor([[9, 13]]))  # (1, 2, d_head) float32
    d = w.meta["d_k"]
    assert d == hf.config.head_dim and w.meta["scaling"] == "llama3"
    np.testing.assert_allclose(w.values["inv_freq"], rope.inv_freq.double().numpy(), rtol=1e-6)
    # the default vector (1, 0) per pair turns into (cos φ, sin φ): HF's own cos and sin tables
    np.testing.assert_allclose(w.values["rotated"][:d // 2], cos[0, 0, :d // 2].double().numpy(), atol=2e-6)
    np.testing.assert_allclose(w.values["rotated"][d // 2:], sin[0, 0, :d // 2].double().numpy(), atol=2e-6)
    np.testing.assert_allclose(w.values["rotated_shifted"][d // 2:], sin[0, 1, :d // 2].double().numpy(), atol=2e-6)
    md = w.render("markdown")
    assert "llama3" in md and "layer 0" in md


def t5_ref(delta, bidirectional, buckets, max_distance):
    from transformers.models.t5.modeling_t5 import T5Attention
    return T5Attention._relative_position_bucket(torch.as_tensor(delta), bidirectional=bidirectional,
                                                 num_buckets=buckets, max_distance=max_distance).numpy()


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("buckets, max_distance", [(32, 128), (16, 40), (8, 20)])
def test_t5_buckets_equal_transformers(causal, buckets, max_distance):
    deltas = list(range(-3 * max_distance, 3 * max_distance + 1, 7)) + [-max_distance, max_distance, -1, 0, 1]
    for delta in deltas:
        w = explain(lesson="positions", scheme="t5", position=max(0, -delta), offset=delta, buckets=buckets,
                    max_distance=max_distance, causal=causal)
        assert w.meta["bucket"] == int(t5_ref(delta, not causal, buckets, max_distance)), delta
    # the table of every distance's bucket
    span = np.arange(-2 * max_distance, 2 * max_distance + 1)
    np.testing.assert_array_equal(w.values["bucket_of_delta"]["bucket"], t5_ref(span, not causal, buckets, max_distance))


def test_t5_worked_numbers_are_t5s_float32_logs():
    w = explain(lesson="positions", scheme="t5", position=20, offset=-13)
    ratio = np.float32(np.log(np.float32(13) / np.float32(8)))
    span = np.float32(np.log(128 / 8))
    scaled = np.float32(ratio / span * np.float32(8))
    assert w.values["log_ratio"] == float(ratio) and w.values["scaled"] == float(scaled)
    assert w.meta["bucket"] == 8 + int(scaled) == int(t5_ref(-13, True, 32, 128))
    for lang in ("en", "zh"):
        md = w.render("markdown", lang=lang)
        for x in (ratio, span, scaled):
            assert half_up(float(x), 4) in numbers(md)
        assert "| 9 | -15 | -12 | 4 |" in md  # bucket 9 holds δ = -15 … -12
    assert "Query 20, key 7: δ = -13 is bucket 9." in w.render("markdown")


@pytest.mark.parametrize("position", [0, 5, 12, 13, 20])
def test_t5_default_offset_stays_in_the_text(position, capsys):
    """Without --offset the T5 lesson took δ = −13 whatever the query: `--position 5` was refused
    with "offset -13 from query position 5 gives key position -8", an offset the user never gave.
    The default is 13 keys back, or back to key 0 for a query nearer the start."""
    want = -min(13, position)
    w = explain(lesson="positions", scheme="t5", position=position)
    assert w.meta["bucket"] == int(t5_ref(want, True, 32, 128))
    assert f"Query {position}, key {position + want}: δ = {want} is bucket" in w.render("markdown")
    assert main(["explain", "positions", "--scheme", "t5", "--position", str(position)]) == 0
    assert f"distance {want}" in capsys.readouterr().out


def test_t5_from_a_model(tmp_path):
    import attnscope
    from tests.models.seq2seq.tiny import t5

    folder = t5(tmp_path / "t5")
    model = attnscope.load(folder)
    w = explain(lesson="positions", scheme="t5", model=model, position=3, offset=2)
    cfg = json.loads((folder / "config.json").read_text())
    assert w.meta["buckets"] == cfg["relative_attention_num_buckets"]
    assert w.meta["max_distance"] == cfg["relative_attention_max_distance"]
    assert w.meta["bucket"] == int(t5_ref(2, True, w.meta["buckets"], w.meta["max_distance"]))


@pytest.mark.parametrize("kw, msg", [
    (dict(position=-1), "position must be ≥ 0 (positions count from 0"),
    (dict(dim=8), "dim 8 is out of range: d_model = 8 has dimensions 0..7"),
    (dict(dim=-1), "dim -1 is out of range"),
    (dict(d_model=7), "d_model must be even"),
    (dict(position=2, offset=-3), "offset -3 from position 2 gives position -1; positions are ≥ 0"),
    (dict(base=0), "base must be a positive number"),
    (dict(scheme="alibi"), "unknown position scheme 'alibi'; choose one of sinusoidal, rotary, t5"),
    (dict(scheme="rotary", position=-2), "position must be ≥ 0"),
    (dict(scheme="rotary", dim=8), "dim 8 is out of range: a head has d_k = 8 features, 0..7"),
    (dict(scheme="rotary", d_k=5), "d_k must be even"),
    (dict(scheme="rotary", vector=[1, 2]), "vector: expected 8 numbers, got 2"),
    (dict(scheme="rotary", buckets=4), "buckets is not an option of the rotary lesson"),
    (dict(scheme="t5", position=-1), "position (the query's) must be ≥ 0"),
    (dict(scheme="t5", position=2, offset=-5), "gives key position -3"),
    (dict(scheme="t5", buckets=3), "buckets = 3 is too few or odd"),
    (dict(scheme="t5", max_distance=4), "max_distance = 4 must be larger than the 8 exact buckets"),
    (dict(scheme="t5", dim=2), "dim is not an option of the T5 lesson"),
    (dict(d_k=4), "d_k is not an option of the sinusoidal lesson"),
    (dict(colour="red"), "unknown option 'colour'"),
])
def test_one_clear_error_each(kw, msg):
    with pytest.raises(AttnscopeError) as e:
        explain(lesson="positions", **kw)
    assert msg in str(e.value), str(e.value)


def test_a_model_without_rotary_positions_or_t5_buckets():
    import attnscope
    m = attnscope.load()  # the packaged MiniLM: learned absolute positions
    with pytest.raises(AttnscopeError, match="has learned positions, not rotary ones"):
        explain(lesson="positions", scheme="rotary", model=m)
    with pytest.raises(AttnscopeError, match="has learned positions, not T5's relative buckets"):
        explain(lesson="positions", scheme="t5", model=m)
    with pytest.raises(AttnscopeError, match="d_k comes from the model"):
        explain(lesson="positions", scheme="rotary", model=m, d_k=8)


def test_command_line(capsys):
    assert main(["explain", "positions", "--position", "5", "--dim", "3", "--offset", "2", "-f", "markdown",
                 "--lang", "zh"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# 手算正弦位置编码：位置 5，维度 3") and "第 3 维是奇数" in out
    assert main(["explain", "positions", "--scheme", "t5", "--position", "4", "-k", "30", "-f", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["meta"]["bucket"] == int(t5_ref(30, True, 32, 128))
    for argv, msg in ((["positions", "--position", "-1"], "--position must be from 0 to"),
                      (["positions", "--dim", "9"], "dim 9 is out of range"),
                      (["--example", "multi-head", "--offset", "2"], "--offset is an option of 'attnscope explain positions'")):
        assert main(["explain", *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and msg in err and "Traceback" not in err


def test_t5_bias_of_the_bucket_from_the_model(tmp_path):
    import attnscope
    from tests.models.seq2seq.tiny import hf_seq2seq, t5

    folder = t5(tmp_path / "t5b")
    model, hf = attnscope.load(folder), hf_seq2seq(folder)
    for causal, stack in ((False, hf.encoder), (True, hf.decoder)):
        w = explain(lesson="positions", scheme="t5", model=model, position=9, offset=-6, causal=causal)
        b = int(t5_ref(-6, not causal, w.meta["buckets"], w.meta["max_distance"]))
        want = stack.block[0].layer[0].SelfAttention.relative_attention_bias.weight[b].detach().double().numpy()
        np.testing.assert_allclose(w.values["bias"], want, rtol=0, atol=0)
        md = w.render("markdown")
        assert f"the learned bias of bucket {b}, every head" in md
        for h, x in enumerate(want):
            assert f"| {h} | {half_up(x, 4)} |" in md


@pytest.mark.parametrize("k, lang, says, never", [
    (3, "en", "the token 3 places back", "ahead"),
    (-3, "en", "the token 3 places ahead", "-3 places"),
    (0, "en", "A shift by 0 positions is the identity", "places"),
    (-3, "zh", "往后 3 个位置的 token", "往前 -3"),
])
def test_the_meaning_of_a_shift_says_which_way(capsys, k, lang, says, never):
    """From position p + k the token at p is k places back when k > 0, and |k| places ahead when
    k < 0 (issue #23: --offset -3 said "−3 places back")."""
    assert main(["explain", "positions", "--position", "5", "--offset", str(k), "--lang", lang]) == 0
    meaning = capsys.readouterr().out.split("\n\n")[-2:]
    text = " ".join(" ".join(meaning).split())
    assert says in text and never not in text, text


def test_one_pair_says_so_instead_of_a_falling_frequency():
    # d_model = 2 (the articles' 2-d tokens) or d_k = 2 has one pair only: the lessons said the frequencies
    # "fall geometrically from ω_0 = 1 … to 1 for the last pair, i = 0" and "the last of the 1 pairs by only 1"
    for lang, gone, said in (("en", "fall geometrically", "one pair only"), ("zh", "几何级数", "只有一对")):
        md = explain(lesson="positions", position=5, dim=1, d_model=2).render("markdown", lang=lang)
        assert gone not in md and said in md, md
    md = explain(lesson="positions", scheme="rotary", position=5, d_k=2).render("markdown")
    assert "the last of the 1 pairs" not in md and "The one pair turns by θ_0 = 1 radians" in md
    md = explain(lesson="positions", scheme="rotary", position=5, d_k=4).render("markdown")
    assert "the last of the 2 pairs by only 0.0100" in md  # two pairs: 10000^(-2/4) = 0.01
    md = explain(lesson="positions", position=5, dim=1, d_model=4).render("markdown")
    assert "to 0.0100 for the last pair, i = 1" in md
