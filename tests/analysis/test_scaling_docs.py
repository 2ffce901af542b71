"""docs/guide/scaling-out.md: its shell loop (shards 0 and 1) and its Slurm array script (the body
with SLURM_ARRAY_TASK_ID = 2 and 3) run as the page shows them, with bash, at once, on a tiny corpus
and the tests' tiny GPT-2; the page's merge of the four equals one run in this process, bit for bit.
Its Ray block runs with Ray on this machine (2 shards, merged), and its two-machine torchrun command
runs twice at once on this machine (2 "machines" × 1 process, c10d rendezvous, gloo): both equal
one run, bit for bit.

What is changed from the page, as a docs block's ``run-with`` would: the corpus file is a tiny one,
the options after it make the run small (a tiny model, few importance texts, windows of 2 texts so
that each shard has some), and the script's ``--threads 8`` is 1 (the reference runs on one thread:
the importance pass's rounding follows the thread count, docs "Exact sums"); torchrun's rendezvous
host is 127.0.0.1 with a free port and each "machine" runs 1 process, not 4."""

import gzip
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import attnscope
from attnscope.analysis import analyze
from attnscope.analysis.report import to_json
from attnscope.cli import main
from attnscope.testing import tiny as testing

PAGE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "scaling-out.md"
TEXTS = ["The cat sat on the mat.", "Heads attend to the previous token.", "Lower layers local, higher global?",
         "A longer sentence, with commas, clauses and a full stop.", "Short.", "Queries, keys, values.",
         "Every number must be right.", "Nothing is lost silently."]
SMALL = ("--importance-texts 3 --importance-batch 1 --norm-texts 2 --induction-seqs 4 --induction-length 4 "
         "--batch-size 2 --chunk-size 2 --no-progress")
VARYING = ("seconds", "timings", "processes")


def block_after(heading: str, containing: str = "") -> str:
    """The first fenced block under ``heading`` on the page (that contains ``containing``)."""
    text = PAGE.read_text(encoding="utf-8")
    at = text.index(heading)
    for m in re.finditer(r"```(\w+)\n(.*?)```", text[at:], flags=re.S):
        if containing in m.group(2):
            return m.group(2)
    raise AssertionError(f"no block under {heading!r} contains {containing!r}")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    ws = tmp_path_factory.mktemp("scaling")
    with gzip.open(ws / "corpus.txt.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(TEXTS) + "\n")
    model = testing.tiny_gpt2(ws / "gpt2")
    return ws, model


#: SMALL as keyword arguments of analyze() / analyze_shard()
SMALL_KW = dict(importance_texts=3, importance_batch=1, norm_texts=2, induction_seqs=4, induction_length=4,
                batch_size=2, chunk_size=2, progress=False)


def single_run(corpus, model, **kw) -> dict:
    """The report of one run in this process, on one thread as the page's commands run (--threads 1),
    less what varies between runs."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        r = analyze(corpus, attnscope.load(model), **SMALL_KW, **kw)
    finally:
        torch.set_num_threads(threads)
    out = json.loads(json.dumps(to_json(r)))
    for k in VARYING:
        out.pop(k)
    return out


@pytest.fixture(scope="module")
def reference(workspace):
    ws, model = workspace
    return single_run(ws / "corpus.txt.gz", model)


def env():
    # `attnscope` as installed next to this interpreter, offline
    return dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
                HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")


def test_shell_loop_and_slurm_array(workspace, reference):
    """Shards 0 and 1 from the shell loop, 2 and 3 from the Slurm script, all four at once: the
    loop and the script make shards of one run, and their merge is the single run's report."""
    ws, model = workspace
    loop = block_after("### A shell loop")
    assert "for i in 0 1 2 3; do" in loop and "--shard $i/4" in loop and "&" in loop and "wait" in loop
    loop = loop.replace("for i in 0 1 2 3; do", "for i in 0 1; do")
    loop = loop.replace("corpus.txt.gz", f"corpus.txt.gz --model {model} {SMALL}")
    merge = [ln for ln in loop.splitlines() if "--merge" in ln]
    loop = "\n".join(ln for ln in loop.splitlines() if "--merge" not in ln)  # the merge: below, once all are there
    script = block_after("### A Slurm array")
    assert script.startswith("#!/bin/bash") and "#SBATCH --array=0-3" in script
    assert "--shard $SLURM_ARRAY_TASK_ID/4 --out shards/$SLURM_ARRAY_TASK_ID" in script
    body = script.replace("corpus.txt.gz", f"corpus.txt.gz --model {model} {SMALL}").replace("--threads 8", "--threads 1")
    (ws / "job.sh").write_text(body, encoding="utf-8")
    procs = [subprocess.Popen(["bash", "-e", "-c", loop], cwd=ws, env=env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)]
    procs += [subprocess.Popen(["bash", "job.sh"], cwd=ws, env={**env(), "SLURM_ARRAY_TASK_ID": str(i)},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in (2, 3)]
    printed = ""
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        printed += out
    assert sorted(re.findall(r"shard (\d)/4", printed)) == ["0", "1", "2", "3"]
    # the page's merge command, run here in this process
    assert merge == ["attnscope analyze --merge shards/0 shards/1 shards/2 shards/3 --out analysis/"]
    cwd = os.getcwd()
    os.chdir(ws)
    try:
        assert main(merge[0].split()[1:]) == 0
    finally:
        os.chdir(cwd)
    got = json.loads((ws / "analysis" / "analysis.json").read_text(encoding="utf-8"))
    assert got["processes"] == 4
    for k in VARYING:
        got.pop(k)
    assert got.pop("corpus") == "corpus.txt.gz"  # as the commands named it, in the workspace
    assert got == {k: v for k, v in reference.items() if k != "corpus"}


def test_ray_block(workspace, reference, monkeypatch):
    """The page's Ray block, run here with Ray (2 CPUs, 2 tasks): its merged report is the single run's."""
    import ray  # a test dependency (pyproject.toml [test]); imported here, so that the other tests need it not

    ws, model = workspace
    code = block_after("### Ray")
    call = 'analyze_shard("corpus.txt.gz", (i, n), f"shards/{i}")'
    assert call in code and "ray.init(num_cpus=2, include_dashboard=False)" in code
    small = ", ".join(f"{k}={v!r}" for k, v in SMALL_KW.items())
    code = code.replace(call, f'analyze_shard("corpus.txt.gz", (i, n), f"shards/{{i}}", model={str(model)!r}, {small})')
    here = ws / "ray"  # its own folder: the shell loop's shards/0 and shards/1 are shards of 4
    here.mkdir()
    (here / "corpus.txt.gz").write_bytes((ws / "corpus.txt.gz").read_bytes())
    monkeypatch.chdir(here)  # Ray's workers start in the driver's folder, where the page's paths are
    for k, v in env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")  # no network
    try:
        exec(compile(code, f"{PAGE.name}: Ray", "exec"), {"__name__": "__docs__"})
    finally:
        ray.shutdown()
    got = json.loads((here / "analysis" / "analysis.json").read_text(encoding="utf-8"))
    assert got["processes"] == 2
    for k in VARYING:
        got.pop(k)
    assert got.pop("corpus") == "corpus.txt.gz"
    assert got == {k: v for k, v in reference.items() if k != "corpus"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.distributed
def test_torchrun_two_machines(workspace, monkeypatch):
    """The page's two-machine torchrun command, started twice at once here (each "machine" 1 process,
    gloo): the rendezvous forms, and rank 0's report is the single run's, bit for bit. The corpus has an
    empty line and a line that is not UTF-8 (skipped): the counters and the decode errors are
    gathered from both processes without counting anything twice."""
    ws, model = workspace
    block = block_after("## torchrun", containing="--nnodes")
    cmd = block.replace("\\\n", " ").strip()
    assert "\n" not in cmd and "--nnodes 2 --nproc-per-node 4 --rdzv-backend c10d" in cmd
    host = "node0.example.org:29400"
    assert host in cmd and "--rdzv-id attnscope-analyze-1" in cmd and "--out analysis/" in cmd
    cmd = cmd.replace(host, f"127.0.0.1:{free_port()}").replace("--nproc-per-node 4", "--nproc-per-node 1")
    cmd = cmd.replace("corpus.txt.gz", f"corpus.txt.gz --model {model} {SMALL} --on-decode-error skip --threads 1")
    here = ws / "torchrun"
    here.mkdir()
    with gzip.open(here / "corpus.txt.gz", "wb") as f:
        f.write("\n".join(TEXTS[:3]).encode() + b"\n\nbad \xff byte\n" + "\n".join(TEXTS[3:]).encode() + b"\n")
    procs = [subprocess.Popen(["bash", "-e", "-c", cmd], cwd=here, env={**env(), "PYTHONUNBUFFERED": "1"},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        outs = [p.communicate(timeout=300) for p in procs]
    finally:
        for p in procs:  # one that failed leaves the other waiting for its rendezvous
            if p.poll() is None:
                p.kill()
                p.communicate()
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, out[-3000:] + err[-3000:]
    assert sum("on 2 processes" in out for out, _ in outs) == 1  # rank 0 reports, the other is silent
    got = json.loads((here / "analysis" / "analysis.json").read_text(encoding="utf-8"))
    monkeypatch.chdir(here)  # the corpus named as the command names it
    want = single_run("corpus.txt.gz", model, on_decode_error="skip")
    assert got["processes"] == 2
    assert got["counters"]["texts"] == len(TEXTS) and got["counters"]["empty"] == 1
    assert got["counters"]["skipped_decode"] == 1 and got["counters"]["importance_texts"] == 3
    assert got["decode_errors"] == ["corpus.txt.gz:5: byte ff at byte 4 is not valid utf-8"]
    for k in VARYING:
        got.pop(k)
    assert got == want


def test_torchrun_one_machine(workspace, reference):
    """The page's one-machine torchrun command as written, with 2 processes instead of 4 (this machine
    has 2 cores): rank 0's report is the single run's, bit for bit."""
    ws, model = workspace
    cmd = block_after("## torchrun", containing="torchrun --nproc-per-node").strip()
    assert "\n" not in cmd and cmd.startswith("torchrun --nproc-per-node 4 $(which attnscope) analyze corpus.txt.gz")
    cmd = cmd.replace("--nproc-per-node 4", f"--nproc-per-node 2 --master-port {free_port()}")
    cmd = cmd.replace("corpus.txt.gz", f"corpus.txt.gz --model {model} {SMALL} --threads 1")
    here = ws / "torchrun-one"
    here.mkdir()
    (here / "corpus.txt.gz").write_bytes((ws / "corpus.txt.gz").read_bytes())
    r = subprocess.run(["bash", "-e", "-c", cmd], cwd=here, env={**env(), "PYTHONUNBUFFERED": "1"},
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    got = json.loads((here / "analysis" / "analysis.json").read_text(encoding="utf-8"))
    assert got["processes"] == 2
    for k in VARYING:
        got.pop(k)
    assert got.pop("corpus") == "corpus.txt.gz"  # named as the command names it
    assert got == {k: v for k, v in reference.items() if k != "corpus"}
