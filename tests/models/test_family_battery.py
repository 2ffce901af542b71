"""The family battery (issue 24, item 5): every tiny checkpoint registered with
:func:`attnscope.testing.tiny.tiny_family` (attnscope.testing.tiny and every tests/models/*/tiny.py)
goes through everything a family must do, so that a new family gets all of it by registering its
builder:

* ``test_parity_with_transformers`` — transformers' eager model of the same folder: the hidden
  states of every layer (≤ 1e-5), every head's attention weights (≤ 1e-5), the plain (untraced)
  forward's output (≤ 1e-5) and, with an LM head, the logits (≤ 1e-4), for one text and for a
  padded batch of two (real tokens compared), in each language of the vocabulary; pairs: both
  stacks, decoder self-attention and cross-attention;
* ``test_float64_reference_equals_the_trace`` — :func:`attnscope.reference_model.forward` (pairs:
  :func:`~attnscope.reference_model_seq2seq.forward_seq2seq`) covers every traced name and equals
  the model's float32 trace there (≤ 1e-5 relative to the step's largest value);
* ``test_trace_names_are_the_pinned_ones`` — ``model.hook_names`` are instances of the public
  templates (:data:`~attnscope.trace.TRACE_NAMES` / ``SEQ2SEQ_NAMES``), exactly the core of the
  family's kind plus the steps its registration declares, in every layer, and a full trace
  records them all;
* ``test_explain_row_and_path`` — ``attnscope explain --model FOLDER --format json`` of one row
  gives transformers' attention row (≤ 1e-5), and ``--path`` runs and each of its values equals
  the float64 reference's (≤ 1e-9 relative);
* ``test_viewer_data_weights_are_transformers`` — the page data ``attnscope view`` writes
  (:func:`attnscope.viewer.run.view_data`; pairs: :func:`~attnscope.viewer.seq2seq.seq2seq_view_data`):
  the page's arithmetic on its stored q, k gives transformers' weights (≤ 1e-5);
* ``test_analyze_statistic_is_transformers`` — :func:`attnscope.analysis.analyze` on a small corpus:
  each head's mean entropy and mean attention distance equal the same means computed from
  transformers' attentions (≤ 1e-5).

Where a check does not apply it says so by a property of the registration (``lm_head=False``: no
logits; ``reads="pair"``: source and target; ``viewer=False``: the viewer's one-sentence refusal is
checked instead), never by a skip.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch

import attnscope
from attnscope import InputError
from attnscope.cli import main
from tests.models.battery import (
    LOGITS_TOL,
    TEXTS,
    TOL,
    float64_forward,
    hf_one_text,
    hf_pair,
    hidden_names,
    max_err,
    page_mask,
    path_matches,
    reference_name,
    row_sums,
    step_error,
    templates,
    texts_of,
)
from tests.models.fixtures import tiny_families

FAMILIES = tiny_families()
# ----------------------------------------------------------------------------------------------
# fixtures: each family built once, attnscope's model and transformers' eager model of it
# ----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """``get(name) -> (folder, attnscope model, transformers eager model)``, built on first use."""
    import transformers
    transformers.logging.set_verbosity_error()
    root = tmp_path_factory.mktemp("battery")
    held: dict = {}

    def get(name: str):
        if name not in held:
            fam = FAMILIES[name]
            folder = fam.build(root / name)
            hf = getattr(transformers, fam.hf_class).from_pretrained(str(folder), attn_implementation="eager",
                                                                     dtype=torch.float32).eval()
            held[name] = (folder, attnscope.load(folder), hf)
        return held[name]
    return get


# ----------------------------------------------------------------------------------------------
# (a) parity with transformers
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("single", [True, False], ids=["single", "batch"])
@pytest.mark.parametrize("name", list(FAMILIES))
def test_parity_with_transformers(name, single, tiny):
    fam = FAMILIES[name]
    folder, model, hf = tiny(name)
    assert model.has_lm_head == fam.lm_head, f"{name}: the registration's lm_head is not the model's"
    for lang in fam.lang.split("+"):
        if fam.reads == "pair":
            _pair_parity(fam, model, hf, lang, single)
            continue
        texts = texts_of(fam, lang)[:1] if single else texts_of(fam, lang)
        names = hidden_names(fam, model)
        tr = model.trace(texts, names=names + ["layers.*.attn.weights"])
        hidden, attentions, logits = hf_one_text(hf, model, model.encode(texts))
        assert len(hidden) == len(names) and len(attentions) == model.config.n_layers
        if not single:
            assert len(set(tr.lengths)) > 1, "the batch must really be padded"
        with torch.no_grad():
            plain = model.run(texts)  # the plain forward: fused kernels, nothing traced
            ours_logits = model.logits(texts) if fam.lm_head else None
        for b, n in enumerate(tr.lengths):
            for ours, theirs in zip(names, hidden):
                err = max_err(tr[ours][b, :n], theirs[b, :n])
                assert err <= TOL, f"{name} {lang} text {b} {ours}: {err:.2e}"
            for i, theirs in enumerate(attentions):
                err = max_err(tr[f"layers.{i}.attn.weights"][b, :, :n, :n], theirs[b, :, :n, :n])
                assert err <= TOL, f"{name} {lang} text {b} layer {i} weights: {err:.2e}"
            err = max_err(plain[b, :n], hidden[-1][b, :n])
            assert err <= TOL, f"{name} {lang} text {b} plain forward: {err:.2e}"
            if fam.lm_head:
                err = max_err(ours_logits[b, :n], logits[b, :n])
                assert err <= LOGITS_TOL, f"{name} {lang} text {b} logits: {err:.2e}"


def _pair_parity(fam, model, hf, lang, single):
    sources, targets = texts_of(fam, lang)
    if single:
        sources, targets = sources[:1], targets[:1]
    c = model.config
    enc = ["encoder.embed.out"] + [f"encoder.layers.{i}.out" for i in range(c.n_layers)]
    dec = ["decoder.embed.out"] + [f"decoder.layers.{i}.out" for i in range(c.n_decoder_layers)]
    if "final_norm" in fam.names:
        enc[-1], dec[-1] = "encoder.final_norm", "decoder.final_norm"
    tr = model.trace(sources, targets, names=enc + dec + ["*.attn.weights", "*.self_attn.weights", "*.cross_attn.weights"])
    ref = hf_pair(hf, tr)
    if not single:
        assert len(set(tr.lengths)) > 1 and len(set(tr.target_lengths)) > 1, "sources and targets must be padded"
    assert len(ref.encoder_hidden_states) == len(enc) and len(ref.decoder_hidden_states) == len(dec)
    with torch.no_grad():
        plain = model.run(sources, targets)  # the plain forward: fused kernels, nothing traced
        logits = model.logits(sources, targets)
    for b, (S, T) in enumerate(zip(tr.lengths, tr.target_lengths)):
        for ours, theirs in [*zip(enc, ref.encoder_hidden_states), *zip(dec, ref.decoder_hidden_states)]:
            n = S if ours.startswith("encoder.") else T
            assert max_err(tr[ours][b, :n], theirs[b, :n]) <= TOL, f"{fam.name} text {b} {ours}"
        for i, w in enumerate(ref.encoder_attentions):
            assert max_err(tr[f"encoder.layers.{i}.attn.weights"][b, :, :S, :S], w[b, :, :S, :S]) <= TOL
        for i, (w, x) in enumerate(zip(ref.decoder_attentions, ref.cross_attentions)):
            assert max_err(tr[f"decoder.layers.{i}.self_attn.weights"][b, :, :T, :T], w[b, :, :T, :T]) <= TOL
            assert max_err(tr[f"decoder.layers.{i}.cross_attn.weights"][b, :, :T, :S], x[b, :, :T, :S]) <= TOL
        assert max_err(plain[b, :T], ref.decoder_hidden_states[-1][b, :T]) <= TOL, f"{fam.name} text {b} plain forward"
        if fam.lm_head:
            err = max_err(logits[b, :T], ref.logits[b, :T])
            assert err <= LOGITS_TOL, f"{fam.name} text {b} logits: {err:.2e}"


# ----------------------------------------------------------------------------------------------
# (b) the float64 reference
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(FAMILIES))
def test_float64_reference_equals_the_trace(name, tiny):
    fam = FAMILIES[name]
    _, model, _ = tiny(name)
    f, tr = float64_forward(fam, model)
    ref = {n: reference_name(n) for n in model.hook_names}
    missing = [n for n, r in ref.items() if r not in f]
    assert missing == [], f"{name}: the float64 reference does not compute {missing[:6]} …"
    worst = {n: step_error(f[r], tr[n][0]) for n, r in ref.items()}
    bad = {n: e for n, e in worst.items() if not e <= TOL}
    assert bad == {}, f"{name}: float64 reference vs float32 trace beyond {TOL}: {bad}"


# ----------------------------------------------------------------------------------------------
# (c) the trace-name pin
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(FAMILIES))
def test_trace_names_are_the_pinned_ones(name, tiny):
    from attnscope.trace import SEQ2SEQ_NAMES, TRACE_NAMES
    fam = FAMILIES[name]
    _, model, _ = tiny(name)
    pinned = set(SEQ2SEQ_NAMES if fam.reads == "pair" else TRACE_NAMES)
    c = model.config
    layers = {"layers": c.n_layers, "encoder.layers": c.n_layers, "decoder.layers": getattr(c, "n_decoder_layers", 0)}
    seen: dict[str, set[int]] = {}
    for n in model.hook_names:
        m = re.match(r"^((?:encoder\.|decoder\.)?layers)\.(\d+)\.(.+)$", n)
        t = f"{m.group(1)}.{{i}}.{m.group(3)}" if m else n
        seen.setdefault(t, set()).add(int(m.group(2)) if m else -1)
    assert set(seen) <= pinned, f"{name}: names outside the public templates: {sorted(set(seen) - pinned)}"
    want = templates(fam)
    assert set(seen) == want, f"{name}: missing {sorted(want - set(seen))}, unexpected {sorted(set(seen) - want)}"
    for t, idx in seen.items():  # every layer has every layer step
        if "{i}" in t:
            assert idx == set(range(layers[t.split(".{i}.")[0]])), (name, t, idx)
    assert len(set(model.hook_names)) == len(model.hook_names)
    texts = texts_of(fam)
    tr = model.trace(texts[0][:1], texts[1][:1]) if fam.reads == "pair" else model.trace(texts[:1])
    assert [n for n in model.hook_names if n not in tr] == []


# ----------------------------------------------------------------------------------------------
# (d) explain: one row and the whole path
# ----------------------------------------------------------------------------------------------

def _explain_json(tmp_path, args: list[str], stem: str) -> dict:
    out = tmp_path / f"{stem}.json"
    assert main(["explain", *args, "--format", "json", "-o", str(out)]) == 0
    return json.loads(out.read_text(encoding="utf-8"))


def _query(model, n: int) -> tuple[int, int, int]:
    """(layer, head, position) of the row the battery explains: the last layer, the last head
    (a grouped k/v head where there are some), a token in the middle."""
    return model.config.n_layers - 1, model.config.n_heads - 1, n // 2


@pytest.mark.parametrize("name", list(FAMILIES))
def test_explain_row_and_path(name, tiny, tmp_path):
    fam = FAMILIES[name]
    folder, model, hf = tiny(name)
    if fam.reads == "pair":
        return _explain_pair(fam, folder, model, hf, tmp_path)
    from attnscope import reference_model
    text = texts_of(fam)[0]
    batch = model.encode(text)
    n = batch.lengths[0]
    layer, head, pos = _query(model, n)
    args = ["--model", str(folder), "--text", text, "--layer", str(layer), "--head", str(head)]
    # the row of a token named as the tokenizer writes it; --position too: the two must agree
    row = _explain_json(tmp_path, args + [f"--token={batch.tokens[0][pos]}", "--position", str(pos)], "row")
    assert row["meta"]["query_position"] == pos
    args += ["--position", str(pos)]
    _, attentions, _ = hf_one_text(hf, model, batch)
    want = attentions[layer][0, head, pos, :n].double().numpy()
    got = np.array(row["values"]["weights"], dtype=np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    err = float(np.abs(got - want).max())
    assert err <= TOL, f"{name}: explain's row (layer {layer}, head {head}, position {pos}) ≠ transformers' by {err:.3g}"
    path = _explain_json(tmp_path, args + ["--path"], "path")
    f = reference_model.forward(model, text, upto=layer)
    assert path_matches(path["values"], f, model, pos, {"weights": (f"layers.{layer}.attn.weights", head)}) >= 20


def _explain_pair(fam, folder, model, hf, tmp_path):
    from attnscope import reference_model_seq2seq
    sources, targets = texts_of(fam)
    src, tgt = sources[0], targets[0]
    tr = model.trace([src], [tgt], names=["decoder.layers.0.cross_attn.weights"])
    ref = hf_pair(hf, tr)
    S, T = tr.lengths[0], tr.target_lengths[0]
    c, head = model.config, model.config.n_heads - 1
    for attention, weights, layer, pos, n_k in (("encoder", ref.encoder_attentions, c.n_layers - 1, S // 2, S),
                                                ("self", ref.decoder_attentions, c.n_decoder_layers - 1, T // 2, T),
                                                ("cross", ref.cross_attentions, c.n_decoder_layers - 1, T // 2, S)):
        args = ["--model", str(folder), "--text", src, "--target", tgt, "--attention", attention, "--layer", str(layer),
                "--head", str(head), "--position", str(pos)]
        row = _explain_json(tmp_path, args, f"row-{attention}")
        got = np.array(row["values"]["weights"], dtype=np.float64)
        want = weights[layer][0, head, pos, :n_k].double().numpy()
        assert got.shape == want.shape, (attention, got.shape, want.shape)
        err = float(np.abs(got - want).max())
        assert err <= TOL, f"{fam.name}: explain's {attention} row ≠ transformers' by {err:.3g}"
    args = ["--model", str(folder), "--text", src, "--target", tgt, "--layer", str(layer), "--head", str(head),
            "--position", str(pos), "--path"]
    path = _explain_json(tmp_path, args, "path")
    f = reference_model_seq2seq.forward_seq2seq(model, src, tgt, decoder_upto=layer)
    rows = {"weights": (f"decoder.layers.{layer}.self_attn.weights", head),
            "cross_weights": (f"decoder.layers.{layer}.cross_attn.weights", head)}
    assert path_matches(path["values"], f, model, pos, rows) >= 30


# ----------------------------------------------------------------------------------------------
# (e) the viewer's data
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(FAMILIES))
def test_viewer_data_weights_are_transformers(name, tiny):
    from attnscope.viewer import data as V
    fam = FAMILIES[name]
    _, model, hf = tiny(name)
    if fam.reads == "pair":
        from attnscope.viewer import seq2seq as S
        sources, targets = texts_of(fam)
        d = S.seq2seq_view_data(model, sources[0], targets[0])
        ref = hf_pair(hf, model.trace(sources[:1], targets[:1], names=["encoder.embed.out"]))
        cfg, entry = d["config"], d["texts"][0]
        for att, theirs in (("encoder", ref.encoder_attentions), ("self", ref.decoder_attentions),
                            ("cross", ref.cross_attentions)):
            q, k = V.decode(entry[att]["q"]), V.decode(entry[att]["k"])
            for layer, w in enumerate(theirs):
                page = S.page_weights(q[layer], k[layer], cfg["factor"], att, cfg["bias"])
                err = float(np.abs(page - w[0].double().numpy()).max())
                assert err <= TOL, f"{name}: the page's {att} weights of layer {layer} ≠ transformers' by {err:.3g}"
        return
    from attnscope.viewer.run import view_data
    text = texts_of(fam)[0]
    if not fam.viewer:  # declared: the page cannot recompute these weights, and says so in one sentence
        with pytest.raises(InputError, match="the viewer only shows plain dot-product attention"):
            view_data(model, text)
        return
    d = view_data(model, text)
    _, attentions, _ = hf_one_text(hf, model, model.encode(text))
    cfg, entry = d["config"], d["texts"][0]
    q, k = V.decode(entry["q"]), V.decode(entry["k"])
    n = q.shape[2]
    bias = None
    if cfg.get("bias"):  # a score term of the key the page adds (ALiBi): head h adds rows[h][j] at key j
        rows = np.asarray(cfg["bias"]["rows"], dtype=np.float64)[:, :n]  # (H, n)
        bias = np.broadcast_to(rows[:, None, :], (rows.shape[0], n, n))
    for layer, w in enumerate(attentions):
        rope = cfg["rope"][layer] if cfg["rope"] else None
        page = V.page_weights(q[layer], k[layer], cfg["factor"], page_mask(cfg, layer, n), rope, bias)
        err = float(np.abs(page - w[0].double().numpy()).max())
        assert err <= TOL, f"{name}: the page's weights of layer {layer} ≠ transformers' by {err:.3g}"


# ----------------------------------------------------------------------------------------------
# (f) analyze
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(FAMILIES))
def test_analyze_statistic_is_transformers(name, tiny, tmp_path):
    from attnscope.analysis import analyze
    fam = FAMILIES[name]
    _, model, hf = tiny(name)
    corpus = tmp_path / "corpus.txt"
    if fam.reads == "pair":
        sources, targets = texts_of(fam)
        corpus.write_text("".join(f"{s}\t{t}\n" for s, t in zip(sources, targets)), encoding="utf-8")
        r = analyze(corpus, model, batch_size=2, progress=False)
        sums: dict = {}
        for s, t in zip(sources, targets):
            ref = hf_pair(hf, model.trace([s], [t], names=["encoder.embed.out"]))
            for stack, ws in (("encoder", ref.encoder_attentions), ("self", ref.decoder_attentions),
                              ("cross", ref.cross_attentions)):
                for layer, w in enumerate(ws):
                    e, dist, rows = row_sums(w[0])
                    acc = sums.setdefault((stack, layer), [0.0, 0.0, 0])
                    acc[0], acc[1], acc[2] = acc[0] + e, acc[1] + dist, acc[2] + rows
        for (stack, layer), (e, dist, rows) in sums.items():
            got = r.means[stack]
            np.testing.assert_allclose(got["entropy"][layer], e / rows, rtol=0, atol=TOL, err_msg=f"{stack} {layer}")
            if stack != "cross":  # cross-attention reports no distance (the source is another text)
                np.testing.assert_allclose(got["distance"][layer], dist / rows, rtol=0, atol=TOL, err_msg=f"{stack} {layer}")
        return
    texts = texts_of(fam)
    corpus.write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    r = analyze(corpus, model, batch_size=2, importance_texts=0, induction_seqs=0, lanes=1, progress=False)
    L = model.config.n_layers
    ent, dist, rows = np.zeros((L, model.config.n_heads)), np.zeros((L, model.config.n_heads)), 0
    for t in texts:
        _, attentions, _ = hf_one_text(hf, model, model.encode(t))
        for layer, w in enumerate(attentions):
            e, d_, n = row_sums(w[0])
            ent[layer] += e
            dist[layer] += d_
        rows += n
    assert r.counters["texts"] == len(texts)
    np.testing.assert_allclose(r.means["entropy"], ent / rows, rtol=0, atol=TOL)
    np.testing.assert_allclose(r.means["distance"], dist / rows, rtol=0, atol=TOL)


# ----------------------------------------------------------------------------------------------
# the registry itself
# ----------------------------------------------------------------------------------------------

def test_every_builder_is_registered_and_well_formed():
    """Every tiny builder of the tests (the BUILDERS of attnscope.testing.tiny and of every
    tests/models/*/tiny.py) is in the registry, so none escapes the battery; each registration
    names a transformers class, languages the battery has texts for, and steps that are public
    trace names; a name registered by a second module is refused."""
    import importlib
    from pathlib import Path

    import transformers

    from attnscope.testing import tiny as testing
    from attnscope.trace import SEQ2SEQ_NAMES, TRACE_NAMES

    builders = set(testing.BUILDERS)
    for path in Path(__file__).resolve().parent.glob("*/tiny.py"):
        builders |= set(getattr(importlib.import_module(f"tests.models.{path.parent.name}.tiny"), "BUILDERS", {}))
    assert builders <= set(FAMILIES), sorted(builders - set(FAMILIES))
    for name, fam in FAMILIES.items():
        assert fam.name == name and fam.reads in ("text", "pair")
        assert hasattr(transformers, fam.hf_class), (name, fam.hf_class)
        assert set(fam.lang.split("+")) <= set(TEXTS), (name, fam.lang)
        assert templates(fam) <= set(SEQ2SEQ_NAMES if fam.reads == "pair" else TRACE_NAMES), name
        assert fam.first_hidden in ("embed.out", "embed.projected"), name
    with pytest.raises(ValueError, match="already registered by another module"):
        testing.tiny_family("gpt2", "GPT2LMHeadModel")(lambda folder: folder)
    assert testing.FAMILIES["gpt2"].build is testing.tiny_gpt2
