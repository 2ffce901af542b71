"""``analyze --shard i/N`` and ``--merge`` (the tests' tiny BERT, with MiniLM's vocabulary, and tiny
GPT-2): four shards merged are the single run, bit for bit —
every statistic, the labels, the importance, the counters, the reports — also after a shard was
killed (SIGKILL, in its own process, right after its first checkpoint) and resumed; shards of
another run, missing or given twice are refused with one sentence.

The corpus has an empty line and a line that is not UTF-8 (skipped, with its example), and more
windows than shards, so every shard has two windows and the merged examples and counters must come
out in the single run's order. The single run is the reference: the same batches, the same
per-batch numbers, added exactly (tests/analysis/test_exact_sums.py checks the sums themselves).
"""

import json
import os
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest
import torch

import attnscope
from attnscope.analysis import Thresholds, analyze
from attnscope.analysis.report import to_json
from attnscope.analysis.shards import STATE, analyze_shard, merge_shards, parse_shard
from attnscope.cli import main
from attnscope.errors import InputError
from attnscope.i18n import error_message
from attnscope.testing import tiny as testing

TEXTS = ["The cat sat on the mat.", "Heads attend to the previous token, or to [SEP].",
         "Lower layers local; higher layers global?", "A much longer sentence, with commas, clauses and a "
         "final full stop, so that batches pad.", "Short.", "Queries, keys, values.", "Every number must be right.",
         "Nothing is lost silently: errors are counted.", "One more line.", "Why?", "Because it is so.",
         "The last text of the corpus, a little longer than most."]
KW = dict(batch_size=2, chunk_size=2, importance_texts=2, importance_batch=1, norm_texts=1,
          on_decode_error="skip", lanes=1, progress=False)
VARYING = ("seconds", "timings", "processes")  # how long and on how many processes: not the numbers


@pytest.fixture(scope="module")
def bert_path(tmp_path_factory):
    return testing.tiny_bert(tmp_path_factory.mktemp("bert"))  # MiniLM's vocabulary, 2 layers × 4 heads


@pytest.fixture(scope="module")
def bert(bert_path):
    return attnscope.load(bert_path)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    f = tmp_path_factory.mktemp("shards") / "corpus.txt"
    body = "\n".join(TEXTS[:3]).encode() + b"\n\nbad \xff byte\n" + "\n".join(TEXTS[3:]).encode() + b"\n"
    f.write_bytes(body)
    return f


@pytest.fixture(scope="module")
def single(bert, corpus):
    return analyze(corpus, bert, **KW)


@pytest.fixture(scope="module")
def shard_dirs(bert, corpus, tmp_path_factory):
    root = tmp_path_factory.mktemp("four")
    for i in range(4):
        analyze_shard(corpus, (i, 4), root / f"s{i}", bert, **KW)
    return [root / f"s{i}" for i in range(4)]


def same_numbers(a, b):
    assert a.means.keys() == b.means.keys()
    for k in a.means:
        assert np.array_equal(a.means[k], b.means[k], equal_nan=True), k
    assert (a.importance is None) == (b.importance is None)
    if a.importance is not None:
        assert np.array_equal(a.importance, b.importance)
    assert np.array_equal(a.labels, b.labels)
    assert a.counters == b.counters and a.decode_examples == b.decode_examples
    assert torch.equal(a.accumulator.sums, b.accumulator.sums) and torch.equal(a.accumulator.counts, b.accumulator.counts)
    ja, jb = to_json(a), to_json(b)
    for k in VARYING:
        ja.pop(k), jb.pop(k)
    assert json.dumps(ja, sort_keys=True) == json.dumps(jb, sort_keys=True)


def test_four_shards_merge_to_the_single_run(corpus, single, shard_dirs, tmp_path):
    merged = merge_shards([shard_dirs[k] for k in (2, 0, 3, 1)])  # any order
    same_numbers(single, merged)
    assert merged.world_size == 4 and single.counters["texts"] == len(TEXTS)
    assert single.counters["skipped_decode"] == 1 and single.counters["empty"] == 1
    assert single.decode_examples == [f"{corpus}:5: byte ff at byte 4 is not valid utf-8"]
    a, b = single.write(tmp_path / "one"), merged.write(tmp_path / "merged")
    for name in ("heads.csv", "layers.csv"):
        assert a[name].read_bytes() == b[name].read_bytes(), name
    # every shard did its own windows (13 numbered texts, 12 decodable: 7 windows of 2)
    texts = [json.loads((d / STATE).read_text())["accumulator"]["counters"]["texts"] for d in shard_dirs]
    assert sum(texts) == len(TEXTS) and all(t >= 1 for t in texts)


def test_a_killed_shard_resumes_without_counting_twice(bert, bert_path, corpus, single, shard_dirs, tmp_path):
    dirs = [tmp_path / f"s{i}" for i in range(4)]
    for i in (0, 2, 3):
        shutil.copytree(shard_dirs[i], dirs[i])
    # shard 1 in its own process, killed by SIGKILL as soon as its first checkpoint is written
    script = ("import os, signal, sys\n"
              "from attnscope.analysis import shards\n"
              "write = shards.write_state\n"
              "def write_then_die(out, state):\n"
              "    write(out, state)\n"
              "    os.kill(os.getpid(), signal.SIGKILL)\n"
              "shards.write_state = write_then_die\n"
              "from attnscope.cli import main\n"
              "sys.exit(main(sys.argv[1:]))\n")
    args = ["analyze", str(corpus), "--model", str(bert_path), "--shard", "1/4", "--out", str(dirs[1]),
            "--batch-size", "2", "--chunk-size", "2",
            "--importance-texts", "2", "--importance-batch", "1", "--norm-texts", "1", "--on-decode-error", "skip",
            "--threads", str(torch.get_num_threads()), "--lanes", "1", "--no-progress"]
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    proc = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
    state = json.loads((dirs[1] / STATE).read_text())
    assert state["progress"] == {"windows": 2, "statistics": False, "importance": 0, "finished": False}
    # window 1 only: text 2, and text 3 (the line that is not UTF-8) skipped, its example kept
    assert state["accumulator"]["counters"]["texts"] == 1 and state["log"]["skipped_decode"] == 1
    assert [e[0] for e in state["log"]["examples"]] == [3]
    with pytest.raises(InputError, match=r"shard 1 of 4 in .* has not finished: run the same analyze --shard 1/4"):
        merge_shards(dirs)
    # resumed (here in this process, with the same model and settings): the remaining window and passes
    done = analyze_shard(corpus, (1, 4), dirs[1], bert, **KW)
    assert done["progress"]["finished"] and done["progress"]["windows"] == 6
    assert done["accumulator"] == json.loads((shard_dirs[1] / STATE).read_text())["accumulator"]
    out = tmp_path / "merged"
    assert main(["analyze", "--merge", *map(str, dirs), "--out", str(out)]) == 0
    a = json.loads(json.dumps(to_json(single)))
    b = json.loads((out / "analysis.json").read_text(encoding="utf-8"))
    assert b["processes"] == 4
    for k in VARYING:
        a.pop(k), b.pop(k)
    assert a == b


def test_refusals_are_one_sentence(bert, corpus, shard_dirs, tmp_path):
    with pytest.raises(InputError, match=r"shards 3 of 4 are missing"):
        merge_shards(shard_dirs[:3])
    with pytest.raises(InputError, match=r"shard 1 of 4 is given twice"):
        merge_shards([*shard_dirs, shard_dirs[1]])
    other = tmp_path / "other"
    shutil.copytree(shard_dirs[3], other)
    state = json.loads((other / STATE).read_text())
    state["parts"]["corpus"] = "0" * 64
    state["fingerprint"] = "f" * 64
    (other / STATE).write_text(json.dumps(state))
    with pytest.raises(InputError) as e:
        merge_shards([*shard_dirs[:3], other])
    assert str(e.value).endswith("are shards of different runs (the corpus differ): merge only shards of one model, "
                                 "one corpus and the same settings")
    assert "（语料不同）" in error_message(e.value, "zh")
    # the same folder for a shard of other settings: refused before any work
    with pytest.raises(InputError, match=r"holds shard 3/4 of another run \(the settings differ\)"):
        analyze_shard(corpus, (3, 4), shard_dirs[3], bert, **{**KW, "window": 2})
    with pytest.raises(InputError, match=r"--shard must be I/N with 0 ≤ I < N"):
        parse_shard("4/4")
    with pytest.raises(InputError, match=r"--shard must be I/N with 0 ≤ I < N"):  # was a ValueError: isdigit('²')
        parse_shard("²/4")
    with pytest.raises(InputError, match="is not an attnscope shard"):
        merge_shards([tmp_path])


def test_causal_model_shards(tmp_path_factory, corpus):
    """A causal model adds the sink, the induction pass (its sequences split over the shards) and
    the copying scores (kept for every head by shard 0)."""
    gpt2 = attnscope.load(testing.tiny_gpt2(tmp_path_factory.mktemp("gpt2")))
    # every head an induction head (threshold 0), so that every head's copying score is picked
    kw = dict(KW, induction_seqs=6, induction_length=4, thresholds=Thresholds(induction=0.0))
    one = analyze(corpus, gpt2, **kw)
    root = tmp_path_factory.mktemp("causal")
    for i in range(4):
        analyze_shard(corpus, (i, 4), root / f"s{i}", gpt2, **kw)
    merged = merge_shards([root / f"s{i}" for i in range(4)])
    same_numbers(one, merged)
    assert "induction" in merged.means and merged.counters["repeat_texts"] == 6
    assert merged.copying == one.copying and merged.repeat == one.repeat
    assert len(one.copying["scores"]) == 2 * 4  # tiny GPT-2: 2 layers, 4 heads
    assert np.array_equal(merged.roles, one.roles)


def test_streamed_model_shards(bert_path, corpus, tmp_path):
    """A model streamed from its file (load(stream_layers=True): its layers are not in memory, so its
    fingerprint reads the weight file): its shards merge to its single run."""
    streamed = attnscope.load(bert_path, stream_layers=True)
    kw = dict(KW, importance_texts=0, norm_texts=0)  # what a streamed model does not run
    one = analyze(corpus, streamed, **kw)
    for i in range(2):
        analyze_shard(corpus, (i, 2), tmp_path / f"s{i}", streamed, **kw)
    same_numbers(one, merge_shards([tmp_path / "s0", tmp_path / "s1"]))


def test_examples_of_several_processes_back_in_reading_order(tmp_path):
    """torchrun gathers each process's decode examples: sorted by example_order they are the single
    reader's list (a string sort would put line 10 before line 9)."""
    from attnscope.analysis.corpus import CorpusReader, example_order
    (tmp_path / "a.txt").write_bytes(b"".join(b"bad \xff\n" if n in (9, 10) else b"ok %d\n" % n for n in range(1, 12)))
    (tmp_path / "b.txt").write_bytes(b"fine\nbad \xfe\n")
    reader = CorpusReader(tmp_path, on_decode_error="skip")
    assert len(list(reader)) == 10
    want = reader.log.decode_examples
    assert [x.split(": ")[0] for x in want] == [f"{tmp_path}/a.txt:9", f"{tmp_path}/a.txt:10", f"{tmp_path}/b.txt:2"]
    shuffled = [want[2], want[0], want[1]]
    assert sorted(shuffled) != want
    assert sorted(shuffled, key=example_order(tmp_path)) == want


@pytest.mark.parametrize("edit, field", [
    (lambda s: s["accumulator"].__setitem__("sums", s["accumulator"]["sums"][:-1]), "accumulator"),
    (lambda s: s["accumulator"]["sums"].__setitem__(0, "zz"), "accumulator"),
    (lambda s: s["accumulator"]["counters"].__setitem__("texts", "x"), "accumulator"),
    (lambda s: s.pop("accumulator"), "accumulator"),
    (lambda s: s.pop("progress"), "progress"),
    (lambda s: s.__setitem__("shard", "1/4"), "shard"),
    (lambda s: s["log"].__setitem__("examples", "none"), "log"),
    (lambda s: s["config"].__setitem__("no_such_setting", 1), "config"),
])
def test_a_damaged_shard_file_is_one_sentence(bert, corpus, shard_dirs, tmp_path, edit, field):
    """A shard file that is JSON of the right format but hand-edited or damaged (a field missing,
    a sum cut short or not a number) is refused in one sentence naming the file and the field, by
    --merge and by a resumed shard, not with a KeyError, ValueError or TypeError from inside."""
    dirs = [tmp_path / f"s{i}" for i in range(4)]
    for i in range(4):
        shutil.copytree(shard_dirs[i], dirs[i])
    state = json.loads((dirs[1] / STATE).read_text())
    edit(state)
    (dirs[1] / STATE).write_text(json.dumps(state))
    with pytest.raises(InputError, match=rf"s1/{STATE}' is a damaged attnscope shard \(its {field} field\)"):
        merge_shards(dirs)
    assert main(["analyze", "--merge", *map(str, dirs), "--out", str(tmp_path / "out")]) == 2
    with pytest.raises(InputError, match=rf"is a damaged attnscope shard \(its {field} field\)"):
        analyze_shard(corpus, (1, 4), dirs[1], bert, **KW)


def test_shards_of_another_attnscope_version_are_refused(bert, corpus, shard_dirs, tmp_path, monkeypatch):
    """A shard written by another attnscope version (whose statistics may be defined or computed
    otherwise) is not merged with this version's shards, nor resumed by this version: one sentence."""
    monkeypatch.setattr(attnscope, "__version__", "0.0.9")
    analyze_shard(corpus, (3, 4), tmp_path / "s3", bert, **KW)
    monkeypatch.undo()
    with pytest.raises(InputError, match=r"are shards of different runs \(the attnscope version differ\)"):
        merge_shards([*shard_dirs[:3], tmp_path / "s3"])
    with pytest.raises(InputError, match=r"holds shard 3/4 of another run \(the attnscope version differ\)"):
        analyze_shard(corpus, (3, 4), tmp_path / "s3", bert, **KW)


@pytest.mark.parametrize("extra", [["--model", "smollm2-135m"], ["--threshold", "local=0.3"], ["--max-texts", "5"],
                                   ["--window", "5"], ["--batch-size", "4"], ["--stream"], ["--seed", "1"]])
def test_merge_refuses_an_option_the_shards_decided(tmp_path, capsys, extra):
    """--merge reads the shards' own settings: '--threshold local=0.3', '--model …', '--max-texts 5'
    and the rest were dropped in silence and the report came out as without them; each is one
    sentence before any shard is read (the folder named here holds none)."""
    out = tmp_path / "out"
    assert main(["analyze", "--merge", str(tmp_path / "no-shard"), "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert f"{extra[0]} does not apply to analyze --merge" in err and err.count("\n") == 1, err
    assert not out.exists()
