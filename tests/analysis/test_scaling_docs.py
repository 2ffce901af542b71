"""docs/guide/scaling-out.md: its shell loop (shards 0 and 1) and its Slurm array script (the body
with SLURM_ARRAY_TASK_ID = 2 and 3) run as the page shows them, with bash, at once, on a tiny corpus
and the tests' tiny GPT-2; the page's merge of the four equals one run in this process, bit for bit.

What is changed from the page, as a docs block's ``run-with`` would: the corpus file is a tiny one,
the options after it make the run small (a tiny model, few importance texts, windows of 2 texts so
that each shard has some), and the script's ``--threads 8`` is 1 (the reference runs on one thread:
the importance pass's rounding follows the thread count, docs "Exact sums").
"""

import gzip
import json
import os
import re
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


def block_after(heading: str) -> str:
    """The first fenced block under ``heading`` on the page."""
    text = PAGE.read_text(encoding="utf-8")
    at = text.index(heading)
    m = re.search(r"```(\w+)\n(.*?)```", text[at:], flags=re.S)
    assert m is not None, heading
    return m.group(2)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    ws = tmp_path_factory.mktemp("scaling")
    with gzip.open(ws / "corpus.txt.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(TEXTS) + "\n")
    model = testing.tiny_gpt2(ws / "gpt2")
    return ws, model


@pytest.fixture(scope="module")
def reference(workspace):
    ws, model = workspace
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the page's commands run (--threads 1)
    try:
        r = analyze(ws / "corpus.txt.gz", attnscope.load(model), importance_texts=3, importance_batch=1, norm_texts=2,
                    induction_seqs=4, induction_length=4, batch_size=2, chunk_size=2, progress=False)
    finally:
        torch.set_num_threads(threads)
    out = json.loads(json.dumps(to_json(r)))
    for k in VARYING:
        out.pop(k)
    return out


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
