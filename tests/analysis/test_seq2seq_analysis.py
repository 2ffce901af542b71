"""``analyze`` for encoder–decoder models: the cross-attention statistics on hand-made patterns
(a diagonal, an even spread, a reversed alignment, padding), and the pipeline over a small
parallel corpus written here, against the same statistics of transformers' own attention
weights; the report's files and the corpus's bad lines."""

import csv
import json
import math
from fractions import Fraction

import numpy as np
import pytest
import torch

from attnscope import InputError
from attnscope.analysis import analyze
from attnscope.analysis.cross_stats import aligned_positions, cross_means
from attnscope.analysis.seq2seq import analyze_seq2seq, report_markdown, split_pair
from attnscope.analysis.stats import StatOptions, attention_means
from attnscope.cli import main
from tests.models.seq2seq.fixtures import hf_seq2seq_models, seq2seq, seq2seq_dirs  # noqa: F401

PAIRS = [("translate English to German: The cat sat on the mat.", "Die Katze sass auf der Matte."),
         ("copy: one two three four", "one two three four"),
         ("Attention is all you need!", "Ja"),
         ("summarize: Queries and keys; values too? Yes, every token looks at every other token.", "Every token looks.")]


def one_hot_rows(T, S, cols):
    w = torch.zeros(1, 1, T, S, dtype=torch.float64)
    for t, j in enumerate(cols):
        w[0, 0, t, j] = 1.0
    return w


def test_diagonal_pattern():
    T, S = 5, 9
    a = [round(t * (S - 1) / (T - 1)) for t in range(T)]  # 0, 2, 4, 6, 8
    assert aligned_positions(torch.tensor([T]), torch.tensor([S]), T)[0].tolist() == a
    m = cross_means(one_hot_rows(T, S, a), torch.ones(1, T), torch.ones(1, S), window=0)
    assert m["to_diagonal"].item() == 1 and m["argmax_diagonal"].item() == 1 and m["diagonal_band"].item() == 1
    assert m["diagonal_offset"].item() == 0 and m["monotonic"].item() == 1 and m["entropy"].item() == 0
    assert m["to_source_end"].item() == pytest.approx(1 / T)  # only the last row is on </s>


def test_aligned_positions_round_exact_halves_up():
    """a(t) = t·(S − 1)/(T − 1) rounded half up, against exact fractions: 7 · 45/10 = 31.5 → 32 (in
    floats 7/10 · 45 = 31.4999…, which rounded down), and every pair of lengths up to 40 × 120."""
    def exact(t, T, S):
        return 0 if T == 1 else math.floor(Fraction(t * (S - 1), T - 1) + Fraction(1, 2))
    assert aligned_positions(torch.tensor([11]), torch.tensor([46]), 11)[0, 7].item() == 32
    m = cross_means(one_hot_rows(11, 46, [exact(t, 11, 46) for t in range(11)]), torch.ones(1, 11), torch.ones(1, 46),
                    window=0)
    assert m["to_diagonal"].item() == 1 and m["argmax_diagonal"].item() == 1
    Ts, Ss = zip(*[(T, S) for T in range(1, 41) for S in range(1, 121)])
    got = aligned_positions(torch.tensor(Ts), torch.tensor(Ss), 40)  # (pairs, 40)
    for b, (T, S) in enumerate(zip(Ts, Ss)):
        assert got[b, :T].tolist() == [exact(t, T, S) for t in range(T)], (T, S)


def test_even_spread_and_reversed_alignment():
    T, S = 4, 6
    even = torch.full((1, 1, T, S), 1 / S, dtype=torch.float64)
    m = cross_means(even, torch.ones(1, T), torch.ones(1, S), window=1)
    assert m["entropy"].item() == pytest.approx(math.log(S), rel=1e-14)
    assert m["entropy_norm"].item() == pytest.approx(1.0, rel=1e-14)
    assert m["to_diagonal"].item() == pytest.approx(1 / S) and m["to_source_end"].item() == pytest.approx(1 / S)
    # a(t) = 0, 2, 3, 5 (2 · 5/3 = 3.33 → 3); the band ±1 holds 2 keys at the ends, 3 inside
    assert m["diagonal_band"].item() == pytest.approx((2 + 3 + 3 + 2) / S / T)
    # the mean |j/5 − t/3| under an even row, by hand
    want = np.mean([np.mean([abs(j / 5 - t / 3) for j in range(S)]) for t in range(T)])
    assert m["diagonal_offset"].item() == pytest.approx(want, rel=1e-14)
    rev = one_hot_rows(T, S, [5, 3, 2, 0])  # a reversed alignment: never forward
    r = cross_means(rev, torch.ones(1, T), torch.ones(1, S), window=0)
    assert r["monotonic"].item() == 0 and r["argmax_diagonal"].item() == 0
    assert r["diagonal_offset"].item() == pytest.approx(np.mean([abs(j / 5 - t / 3) for t, j in enumerate([5, 3, 2, 0])]))


def test_padding_is_not_counted():
    """Two texts in one padded batch give the means of the two texts counted query by query."""
    w = torch.zeros(2, 1, 4, 6, dtype=torch.float64)
    w[0, 0, :4, :6] = one_hot_rows(4, 6, [0, 2, 3, 5])[0, 0]  # diagonal, full size
    w[1, 0, :2, :3] = one_hot_rows(2, 3, [2, 0])[0, 0]        # short pair (T 2, S 3), anti-diagonal
    w[1, 0, 2:, :] = float("nan")                             # padded rows: never read
    tm = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    sm = torch.tensor([[1] * 6, [1, 1, 1, 0, 0, 0]])
    m = cross_means(w, tm, sm, window=0)
    assert m["to_diagonal"].item() == pytest.approx(4 / 6)   # 4 diagonal rows of 6 counted
    assert m["monotonic"].item() == pytest.approx(3 / 4)     # 3 forward steps in the first, 1 back in the second
    assert m["entropy_norm"].item() == 0


def test_split_pair_errors():
    assert split_pair("a b\tc d", "x") == ("a b", "c d")
    for line, msg in (("no tab here", "has no tab"), ("a b\tc\td", "this one has 2"),
                      ("\tonly a target", "the target has no source"), ("only a source\t ", "the source has no target")):
        with pytest.raises(InputError, match=msg):
            split_pair(line, "corpus.tsv: text 3")


@pytest.fixture
def corpus(tmp_path):
    p = tmp_path / "pairs.tsv"
    p.write_text("".join(f"{s}\t{t}\n" for s, t in PAIRS), encoding="utf-8")
    return p


@pytest.mark.parametrize("name", ["t5", "bart"])
def test_pipeline_equals_transformers_weights(name, corpus, seq2seq, hf_seq2seq_models):  # noqa: F811
    """Per stack, the means over the corpus equal the same statistics of transformers' weights,
    pair by pair (one pair per batch, so that no padding enters the reference)."""
    model, hf = seq2seq[name], hf_seq2seq_models(name)
    r = analyze_seq2seq(corpus, model, batch_size=3, window=1)
    assert r.counters["texts"] == len(PAIRS) and r.counters["batches"] == 2
    sums = {stack: {} for stack in ("encoder", "self", "cross")}
    specials = {t.content for t in model.tokenizer.backend.get_added_tokens_decoder().values() if t.special}
    for s, t in PAIRS:
        tr = model.trace(s, t, names=["encoder.layers.0.attn.q"])
        with torch.no_grad():
            out = hf(input_ids=tr.input_ids, attention_mask=tr.attention_mask, decoder_input_ids=tr.decoder_input_ids,
                     output_attentions=True)
        S, T = tr.input_ids.shape[1], tr.decoder_input_ids.shape[1]

        def kinds(tokens, n):
            sp = torch.tensor([[x in specials for x in tokens]])
            cls, sep = torch.zeros(1, n, dtype=torch.bool), torch.zeros(1, n, dtype=torch.bool)
            cls[0, 0], sep[0, n - 1] = bool(sp[0, 0]), bool(sp[0, n - 1])
            return {"cls": cls, "sep": sep, "special": sp}
        for stack, weights, mask, kind, causal in (
                ("encoder", out.encoder_attentions, torch.ones(1, S), kinds(tr.tokens[0], S), False),
                ("self", out.decoder_attentions, torch.ones(1, T), kinds(tr.target_tokens[0], T), True)):
            for l, w in enumerate(weights):
                m = attention_means(w.double(), mask, kind, StatOptions(window=1, causal=causal))
                for stat in ("entropy", "distance", "to_prev", "to_self", "to_sep", "to_cls"):
                    n_q = T if stack == "self" else S
                    count = {"to_prev": n_q - 1}.get(stat, n_q)
                    sums[stack].setdefault((l, stat), []).append((m[stat].numpy(), count))
        for l, w in enumerate(out.cross_attentions):
            m = cross_means(w.double(), torch.ones(1, T), torch.ones(1, S), window=1)
            for stat in ("entropy_norm", "to_diagonal", "argmax_diagonal", "diagonal_offset", "monotonic"):
                count = T - 1 if stat == "monotonic" else T
                sums["cross"].setdefault((l, stat), []).append((m[stat].numpy(), count))
    for stack, per in sums.items():
        for (l, stat), parts in per.items():
            want = sum(v * c for v, c in parts) / sum(c for _, c in parts)
            got = r.means[stack][stat][l]
            if stat in ("argmax_diagonal", "monotonic"):  # an argmax: ties between float32 runs are not expected
                np.testing.assert_allclose(got, want, atol=1e-12, err_msg=f"{stack} {l} {stat}")
            else:
                np.testing.assert_allclose(got, want, atol=1e-5, err_msg=f"{stack} {l} {stat}")


def test_cli_report_files(corpus, seq2seq_dirs, tmp_path, capsys):  # noqa: F811
    out = tmp_path / "an"
    assert main(["analyze", str(corpus), "--model", str(seq2seq_dirs["t5"]), "--out", str(out), "--no-progress",
                 "--window", "1"]) == 0
    said = capsys.readouterr().out
    assert "cross-attention (target → source)" in said and "most diagonal cross-attention heads" in said
    rows = list(csv.DictReader(open(out / "heads.csv", encoding="utf-8")))
    c = json.loads((out / "analysis.json").read_text(encoding="utf-8"))
    assert c["kind"] == "seq2seq" and c["counters"]["texts"] == len(PAIRS)
    n = {"encoder": c["layers"]["encoder"], "self": c["layers"]["self"], "cross": c["layers"]["cross"]}
    assert len(rows) == sum(n.values()) * c["n_heads"]
    assert {r["stack"] for r in rows} == {"encoder", "self", "cross"}
    assert all(r["to_diagonal"] == "" for r in rows if r["stack"] != "cross")
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "## Alignment" in report and "(heatmaps/cross_to_diagonal.png)" in report
    assert (out / "heatmaps" / "cross_argmax_diagonal.png").stat().st_size > 1000


def test_corpus_bad_lines(tmp_path, seq2seq):  # noqa: F811
    p = tmp_path / "bad.tsv"
    p.write_text("a\tb\njust a source\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.tsv:2: a parallel corpus line is 'source<TAB>target'"):
        analyze(p, seq2seq["t5"], progress=False)
    p.write_text("\ta target without its source\n", encoding="utf-8")
    with pytest.raises(InputError, match="a target without its source"):  # the reader strips the line's tab
        analyze(p, seq2seq["bart"], progress=False)


def test_a_text_with_more_than_one_tab_is_refused(tmp_path, seq2seq):  # noqa: F811
    """Split at its first tab, a text of three columns (or, with --unit file, every pair of the
    file joined into one text) became one pair whose target held the rest, tabs included."""
    p = tmp_path / "pairs.tsv"
    p.write_text("a b c\td e f\ng h\ti j\n", encoding="utf-8")
    with pytest.raises(InputError, match="pairs.tsv:1: .* with one tab; this one has 2"):
        analyze(p, seq2seq["t5"], unit="file", progress=False)
    p.write_text("a b\tc d\te f\n", encoding="utf-8")
    with pytest.raises(InputError, match="with one tab; this one has 2"):
        analyze(p, seq2seq["t5"], progress=False)


def test_skipped_and_empty_lines_are_counted_and_said(tmp_path, seq2seq, capsys):  # noqa: F811
    """--on-decode-error skip dropped a line that was not UTF-8 (and empty lines) without a count:
    the counters, the printed summary and report.md said nothing of them."""
    p = tmp_path / "pairs.tsv"
    p.write_bytes(b"one two\tdrei vier\n\n\xff bad\tline\nfive\tsix\n")
    r = analyze(p, seq2seq["t5"], on_decode_error="skip", progress=False)
    assert r.counters["texts"] == 2 and r.counters["skipped_decode"] == 1 and r.counters["empty"] == 1
    r.print_summary(tmp_path / "out", 1)
    assert "left out: 1 undecodable line skipped; 1 empty text" in capsys.readouterr().out
    r.write(tmp_path / "out")
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "Left out: 1 line was not valid UTF-8 and skipped (listed at the end); 1 empty text was skipped." in report
    assert f"- {p}:3: byte ff at byte 0 is not valid utf-8" in report


def test_a_pair_past_the_limit_names_its_line(tmp_path, seq2seq):  # noqa: F811
    """A source or target longer than its stack reads is named by its corpus line and side (the
    trace's own sentence said "text 2", its index in the batch, whatever the line)."""
    model = seq2seq["bart"]  # 64 positions: the source reads 64 tokens, the target 63 after the start token
    long = " ".join(["word"] * 70)
    n = len(model.tokenizer.backend.encode(long).ids)
    p = tmp_path / "long.tsv"
    lines = [f"{s}\t{t}" for s, t in PAIRS] * 2  # eight good pairs: the bad one is in the second batch of 4
    for bad, side, limit in ((f"{long}\tshort", "source", 64), (f"short\t{long}", "target", 63)):
        p.write_text("\n".join(lines[:6] + [bad] + lines[6:]) + "\n", encoding="utf-8")
        with pytest.raises(InputError, match=rf"long.tsv:7: the {side} has {n} tokens, more than the {limit} "):
            analyze_seq2seq(p, model, batch_size=4)


def test_max_length_is_refused_not_ignored(corpus, seq2seq, seq2seq_dirs, tmp_path, capsys):  # noqa: F811
    """--max-length truncates one-stack models' texts; the pairs are read whole, so it is refused
    (it was silently ignored: the report said nothing of it)."""
    with pytest.raises(InputError, match=r"max_length = 8 truncates .* leave out --max-length"):
        analyze(corpus, seq2seq["t5"], max_length=8, progress=False)
    assert main(["analyze", str(corpus), "--model", str(seq2seq_dirs["bart"]), "--out", str(tmp_path / "an"),
                 "--max-length", "8", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "max_length = 8" in err[0] and not (tmp_path / "an" / "heads.csv").exists()


def test_progress_bar_counts_pairs_and_changes_nothing(tmp_path, seq2seq, capsys):  # noqa: F811
    p = tmp_path / "pairs.tsv"
    p.write_text("".join(f"{s}\t{t}\n" for s, t in PAIRS), encoding="utf-8")
    quiet = analyze_seq2seq(p, seq2seq["bart"], batch_size=3, progress=False)
    assert "pair" not in capsys.readouterr().err
    shown = analyze_seq2seq(p, seq2seq["bart"], batch_size=3, progress=True)
    assert f"{len(PAIRS)}pair" in capsys.readouterr().err.replace(" ", "").replace("/", "")
    assert shown.counters == quiet.counters == {"texts": 4, "source_tokens": quiet.counters["source_tokens"],
                                                 "target_tokens": quiet.counters["target_tokens"], "batches": 2,
                                                 "skipped_decode": 0, "empty": 0}
    for stack in ("encoder", "self", "cross"):
        for s, v in quiet.means[stack].items():
            np.testing.assert_array_equal(shown.means[stack][s], v)


@pytest.mark.parametrize("name", ["t5", "bart"])
def test_no_special_queries_leaves_the_cross_rows_of_special_tokens_out(name, corpus, seq2seq, hf_seq2seq_models):  # noqa: F811
    """special_queries=False (``analyze --no-special-queries``) left out the decoder's start token
    and </s> in the self-attention rows but counted them in the cross rows, which the report
    said were left out too. Reference: transformers' cross weights, pair by pair, over the rows
    of non-special target tokens."""
    model, hf = seq2seq[name], hf_seq2seq_models(name)
    r = analyze_seq2seq(corpus, model, batch_size=3, window=1, special_queries=False)
    specials = {t.content for t in model.tokenizer.backend.get_added_tokens_decoder().values() if t.special}
    parts: dict = {}
    for s, t in PAIRS:
        tr = model.trace(s, t, names=["encoder.layers.0.attn.q"])
        with torch.no_grad():
            out = hf(input_ids=tr.input_ids, attention_mask=tr.attention_mask, decoder_input_ids=tr.decoder_input_ids,
                     output_attentions=True)
        rows = [i for i, x in enumerate(tr.target_tokens[0]) if x not in specials]
        assert len(rows) < len(tr.target_tokens[0])  # the start token at least is special
        for l, w in enumerate(out.cross_attentions):
            w = w[0].double().numpy()[:, rows]  # (H, rows, S)
            entropy = -(w * np.log(w)).sum(-1)  # (H, rows)
            parts.setdefault(l, []).append((entropy.sum(-1), len(rows)))
    for l, per in parts.items():
        want = sum(v for v, _ in per) / sum(c for _, c in per)
        np.testing.assert_allclose(r.means["cross"]["entropy"][l], want, atol=1e-5, err_msg=f"cross {l} entropy")


@pytest.mark.parametrize("extra, said", [(["--importance-texts", "5"], "importance_texts = 5 (--importance-texts)"),
                                         (["--norm-texts", "3"], "norm_texts = 3 (--norm-texts)"),
                                         (["--induction-seqs", "8"], "induction_seqs = 8 (--induction-seqs)"),
                                         (["--seed", "2"], "seed = 2 (--seed)"),
                                         (["--threshold", "local=0.3"], "thresholds = local=0.3 (--threshold)")])
def test_one_stack_settings_are_refused_not_dropped(corpus, seq2seq_dirs, tmp_path, capsys, extra, said):  # noqa: F811
    """An encoder–decoder analysis runs its three attentions' statistics only: head importance, norm
    shares, repeated sequences and label thresholds were taken and dropped (the same report as without
    them). One sentence now; 0 (none) still passes, as the CLI's defaults do."""
    argv = ["analyze", str(corpus), "--model", str(seq2seq_dirs["t5"]), "--out", str(tmp_path / "an"), "--no-progress"]
    assert main([*argv, *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and said in err[0] and "it would be dropped" in err[0], err
    assert not (tmp_path / "an" / "heads.csv").exists()
    assert main([*argv, "--importance-texts", "0", "--norm-texts", "0", "--induction-seqs", "0"]) == 0


def test_one_pair_in_one_batch_is_said_in_the_singular(tmp_path, seq2seq, capsys):  # noqa: F811
    """The summary and report.md said "1 pairs" and "1 batches" of a one-pair corpus."""
    p = tmp_path / "pairs.tsv"
    p.write_text("one two\tdrei vier\n", encoding="utf-8")
    r = analyze_seq2seq(p, seq2seq["t5"], batch_size=4)
    r.print_summary(tmp_path / "out", 1)
    assert ": 1 pair (" in capsys.readouterr().out
    r.write(tmp_path / "out")
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "1 (source, target) pair: " in report and " tokens (the decoder's start token included), 1 batch, " in report
    p.write_text("one two\tdrei vier\nfive\tsix\n", encoding="utf-8")
    r = analyze_seq2seq(p, seq2seq["t5"], batch_size=1)
    r.print_summary(tmp_path / "out", 1)
    assert ": 2 pairs (" in capsys.readouterr().out and "2 (source, target) pairs: " in report_markdown(r)
    assert ", 2 batches, " in report_markdown(r) and "2 个（源，目标）文本对：" in report_markdown(r, "zh")
