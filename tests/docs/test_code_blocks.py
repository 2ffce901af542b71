"""Every code block of README.md and docs/**/*.md runs, and shows what the tool gives now.

What runs (see tests/docs/blocks.py for how blocks and their markers are read):

* ```python blocks: the blocks of one page run in order in one namespace (like a notebook), in the
  workspace below. A line that is a bare expression followed by a comment that is a Python literal
  (``b.ids[0]   # [101, 2769, …]`` without the ellipsis) asserts that value; an assignment followed
  by a comment of literal shapes (``y, w = mha(x)   # (1, 9, 768), (1, 12, 9, 9)``) asserts the
  shapes of its targets.
* ```bash / ```sh / ```console blocks: every command must be an ``attnscope …`` command; it runs
  in this process (``attnscope.cli.main``), so loaded models are reused, and must exit 0, or the
  code its comment names (``# exit 1: …``). A ```console block's output lines (those that do not
  start with ``$ ``) must be exactly what the command printed, or, with ``<!-- output: excerpt
  -->``, lines of it in order.
* Pages written by a script (:data:`GENERATED`) have their own test that re-runs the script and
  compares the page; here their commands run and what they print must be on the page.

Not run: blocks marked ``<!-- not-run: REASON -->`` (a set-up command such as ``make test``, a
server, several processes) and those marked ``<!-- checked-by: TEST -->`` (another test runs or
checks the block; the named test file must exist and name the page). :func:`test_markers` keeps
the not-run marks few (:data:`MAX_UNRUN`).

The workspace: a folder made once per test session with the files the docs' commands name as
placeholders: ``toy.yaml`` (the article's three-token input), ``answers.yaml`` (answers to it),
``corpus.txt.gz`` and ``texts/`` (paragraphs of Python's documentation), ``pairs.tsv``, and tiny
random checkpoints at ``path/to/gpt2``, ``path/to/bert-base-chinese`` (with bert-base-chinese's
ids for the characters of 我喜欢人工智能) and ``t5-small``. ``attnscope.load`` is memoised while
these tests run, so each model loads once per worker. Slow commands run on tiny inputs through
``<!-- run-with: OLD => NEW -->``, which the page shows beside the block.
"""

from __future__ import annotations

import ast
import contextlib
import gzip
import io
import re
import shlex
import tokenize
from pathlib import Path

import numpy as np
import pytest

from tests.docs.blocks import ROOT, RUN, Block, all_blocks
from tests.marks import names_a_model_package
from tests.memory_report import release_memory

BLOCKS = all_blocks()

#: Pages written by a script, and the test that re-runs it and compares the page.
GENERATED = {
    "docs/multi-head.md": "tests/explain/test_worked_docs.py",
    "docs/positions.md": "tests/explain/test_worked_docs.py",
    "docs/reference/cli.md": "tests/docs/test_cli_reference.py",
}

#: At most this many blocks may be marked not-run (nothing runs them). A checked-by block is run or
#: checked by the test it names (which must exist and name its page), so it does not count here.
MAX_UNRUN = 8

SHELL = {"bash", "sh", "console"}


def _rel(b: Block) -> str:
    return str(b.path.relative_to(ROOT))


def _substituted(b: Block) -> str:
    code = b.code
    for sub in b.marker("run-with"):
        old, sep, new = sub.partition(" => ")
        assert sep, f"{b.id}: run-with needs 'OLD => NEW', got {sub!r}"
        assert old in code, f"{b.id}: run-with {old!r} is not in the block (stale marker)"
        code = code.replace(old, new)
    return code


def _runs(b: Block) -> bool:
    return b.lang in RUN and not b.marker("not-run") and not b.marker("checked-by")


# --- the marks themselves -------------------------------------------------------------------------

def test_markers():
    unrun = [b for b in BLOCKS if b.lang in RUN and not _runs(b)]
    for b in unrun:
        for reason in b.marker("not-run"):
            assert len(reason.split()) >= 3, f"{b.id}: not-run needs a reason, got {reason!r}"
        for test in b.marker("checked-by"):
            path = ROOT / test.split()[0].split("::")[0]
            assert path.is_file(), f"{b.id}: checked-by names {test!r}, which does not exist"
            name = b.path.name if b.path.name != "README.md" else "README.md"
            assert name in path.read_text(encoding="utf-8"), f"{b.id}: {test} never names {name}"
    not_run = [b.id for b in unrun if not b.marker("checked-by")]
    assert len(not_run) <= MAX_UNRUN, f"{len(not_run)} blocks are not run: {not_run}"
    for b in BLOCKS:
        if b.marker("run-with"):
            _substituted(b)


def test_every_command_block_has_a_language():
    """A block of commands or code without a language would never run here."""
    bad = [b.id for b in BLOCKS if not b.lang
           and re.match(r"\s*(\$ |attnscope |import |from \w+ import |python )", b.code)]
    assert bad == [], f"give these blocks a language (```bash, ```python, ```console): {bad}"


# --- the workspace ---------------------------------------------------------------------------------

TOY = """\
# The second article's three tokens: X, W_Q, W_K, W_V.
tokens: [我, 爱, 你]
X: [[1, 0], [0, 1], [1, 1]]
W_Q: [[1, 0], [1, 1]]
W_K: [[1, 2], [0, 1]]
W_V: [[2, 0], [0, 1]]
"""

ANSWERS = """\
problem: {example: three-tokens}
answers:
  Q: [[1, 0], [1, 1], [2, 1]]
  weights:
  - [0.401, 0.198, 0.401]
  - ~
  - [0.318, 0.038, 0.644]
"""


@pytest.fixture(scope="session")
def workspace(tmp_path_factory) -> Path:
    from attnscope.analysis.corpus import python_docs_paragraphs

    ws = tmp_path_factory.mktemp("docs-workspace")
    (ws / "toy.yaml").write_text(TOY, encoding="utf-8")
    (ws / "answers.yaml").write_text(ANSWERS, encoding="utf-8")
    texts = [t for _, t in python_docs_paragraphs()[:12]]
    with gzip.open(ws / "corpus.txt.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(texts) + "\n")
    (ws / "texts").mkdir()
    for i in range(3):
        (ws / "texts" / f"part{i}.txt").write_text("\n\n".join(texts[4 * i:4 * i + 4]) + "\n", encoding="utf-8")
    (ws / "pairs.tsv").write_text("the cat sat\tthe cat sat\na dog ran far\ta dog ran\n", encoding="utf-8")
    (ws / "docs").symlink_to(ROOT / "docs")  # commands that name docs/examples/… as from the repository
    return ws


#: The models the docs' commands loaded, by load arguments: kept for the whole module (the same
#: model for every block), but at most one model package (SmolLM2, Gemma: 1-1.3 GB each) at a time.
_MODELS: dict = {}


@pytest.fixture(scope="module", autouse=True)
def _free_models():
    yield
    _MODELS.clear()
    release_memory()


def _checkpoints() -> dict:
    from attnscope.testing import tiny
    from tests.models.seq2seq import tiny as tiny_seq2seq
    return {"path/to/gpt2": tiny.tiny_gpt2, "path/to/bert-base-chinese": tiny.tiny_bert_chinese,
            "t5-small": tiny_seq2seq.t5}


def need_checkpoints(ws: Path, code: str) -> None:
    """Write the tiny checkpoints a block names (once per worker: writing them imports transformers)."""
    for name, build in _checkpoints().items() if re.search(r"path/to/|t5-small", code) else ():
        if name in code and not (ws / name).exists():
            build(ws / name)


@pytest.fixture
def in_workspace(workspace, monkeypatch):
    """cwd = the workspace; attnscope.load memoised (the same model object for the same arguments)."""
    import attnscope
    import attnscope.models as models

    real = models.load

    def load(path=None, **kw):
        key = (str(path), tuple(sorted((k, str(v)) for k, v in kw.items() if v is not None)))
        if key not in _MODELS:
            if names_a_model_package(str(path)):
                for k in [k for k in _MODELS if names_a_model_package(k[0])]:
                    del _MODELS[k]
                release_memory()
            _MODELS[key] = real(path, **kw)
        return _MODELS[key]

    monkeypatch.setattr(models, "load", load)
    monkeypatch.setattr(attnscope, "load", load)
    monkeypatch.chdir(workspace)
    monkeypatch.setenv("COLUMNS", "100")
    return workspace


# --- python ----------------------------------------------------------------------------------------

def _comments(code: str) -> dict[int, str]:
    out = {}
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type == tokenize.COMMENT:
            out[tok.start[0]] = tok.string[1:].strip()
    return out


def _literal(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _shape(x):
    return tuple(x.shape) if hasattr(x, "shape") else None


def _claims(code: str):
    """(statement, kind, value) for each statement whose last line's comment states a value."""
    comments = _comments(code)
    for node in ast.parse(code).body:
        text = comments.get(node.end_lineno)
        if text is None:
            continue
        value = _literal(text)
        if value is None:
            continue
        if isinstance(node, ast.Expr) and not (isinstance(node.value, ast.Call)
                                               and getattr(node.value.func, "id", None) == "print"):
            yield node, "value", value
        elif isinstance(node, ast.Assign) and isinstance(value, tuple):
            targets = node.targets[0]
            names = targets.elts if isinstance(targets, ast.Tuple) else [targets]
            shapes = value if value and isinstance(value[0], tuple) else (value,)
            if len(names) == len(shapes) and all(isinstance(s, tuple) and all(isinstance(i, int) for i in s)
                                                 for s in shapes):
                yield node, "shapes", list(zip(names, shapes))


def _equal(got, want) -> bool:
    if hasattr(got, "tolist"):
        got = got.tolist()
    if isinstance(want, float) or (isinstance(want, list) and want and isinstance(want[0], float)):
        return bool(np.allclose(got, want, rtol=0, atol=0.5 * 10 ** -4))
    return got == want


def run_python(code: str, ns: dict, where: str) -> None:
    """Run one block, checking each value its comments state."""
    tree = ast.parse(code)
    # Keyed by the statement's lines: _claims parses the code again, so its nodes are other objects
    # (an id() key never matched, and no comment's value was ever checked).
    claims = {(n.lineno, n.end_lineno): (kind, v) for n, kind, v in _claims(code)}
    for node in tree.body:
        mod = ast.Module(body=[node], type_ignores=[])
        claim = claims.get((node.lineno, node.end_lineno))
        if claim is not None and claim[0] == "value":
            got = eval(compile(ast.Expression(node.value), where, "eval"), ns)
            want = claim[1]
            assert _equal(got, want), f"{where} line {node.lineno}: {ast.unparse(node)} gives {got!r}, the page says {want!r}"
            continue
        exec(compile(mod, where, "exec"), ns)
        if claim is not None:
            for target, shape in claim[1]:
                got = _shape(eval(compile(ast.unparse(target), where, "eval"), ns))  # a Load of the assigned name
                assert got == shape, f"{where} line {node.lineno}: {ast.unparse(target)} has shape {got}, the page says {shape}"


PY_PAGES = sorted({_rel(b) for b in BLOCKS if b.lang == "python" and _runs(b)})


def _needs_a_model_package(code: str) -> bool:
    """A block names a model package, or runs ``attnscope generate``, ``patch`` or ``lens``, whose model is
    SmolLM2 unless ``--model`` says otherwise (tests/marks.py: the real_model mark)."""
    return names_a_model_package(code) or re.search(r"\battnscope (generate|patch|lens)\b", code) is not None


def _page_param(page: str):
    """A page whose Python blocks load a model package is marked ``real_model`` (tests/marks.py)."""
    code = "".join(_substituted(b) for b in BLOCKS if _rel(b) == page and b.lang == "python" and _runs(b))
    return pytest.param(page, marks=[pytest.mark.real_model] if _needs_a_model_package(code) else [])


@pytest.fixture
def registries():
    """A page may register a scoring or a position scheme (the docs show how): undone afterwards, so
    that the other tests of this worker see the registries as they were."""
    from attnscope import positions, scorings
    saved = [(r, dict(r)) for r in (scorings._REGISTRY, positions._REGISTRY)]
    yield
    for reg, before in saved:
        reg.clear()
        reg.update(before)


def run_script(code: str, where: str, tmp: Path) -> None:
    """A block marked ``<!-- run-as: script -->`` (its functions must be importable, e.g. by the
    processes of attnscope.distributed.run_local): written to a file and run as __main__."""
    import subprocess
    import sys
    path = tmp / ("block_" + re.sub(r"\W", "_", where) + ".py")
    path.write_text(code, encoding="utf-8")
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=600, cwd=tmp)
    assert r.returncode == 0, f"{where} exited {r.returncode}:\n{r.stderr[-3000:]}"


@pytest.mark.parametrize("page", [_page_param(p) for p in PY_PAGES])
def test_python_blocks(page, in_workspace, registries, tmp_path):
    ns: dict = {"__name__": "__docs__"}
    for b in BLOCKS:
        if _rel(b) == page and b.lang == "python" and _runs(b):
            need_checkpoints(in_workspace, b.code)
            if b.marker("run-as") == ["script"]:
                run_script(_substituted(b), b.id, tmp_path)
            else:
                run_python(_substituted(b), ns, b.id)


# --- shell -----------------------------------------------------------------------------------------

def _commands(code: str, console: bool):
    """(argv, expected exit code, shown output lines) per command of a shell block."""
    lines = code.rstrip("\n").split("\n")
    out = []
    i = 0
    while i < len(lines):
        ln = lines[i]
        i += 1
        if console and not ln.startswith("$ "):
            assert out, f"output before the first command: {ln!r}"
            out[-1][2].append(ln)
            continue
        if console:
            ln = ln[2:]
        while ln.rstrip().endswith("\\") and i < len(lines):
            ln = ln.rstrip()[:-1] + " " + lines[i].strip()
            i += 1
        if not ln.strip() or ln.lstrip().startswith("#"):
            continue
        argv = shlex.split(ln, comments=True)
        code_ = re.search(r"#\s*exit (\d+)", ln)
        out.append((argv, int(code_.group(1)) if code_ else 0, []))
    return out


_RUNS: dict[tuple[str, ...], tuple[int, str]] = {}


def run_cli(argv: list[str]) -> tuple[int, str]:
    """(exit code, stdout) of ``attnscope ARGV``; a command the docs show twice (the English and the
    Chinese tutorial) runs once per worker."""
    key = tuple(argv)
    if key not in _RUNS:
        _RUNS[key] = _run_cli(argv)
    return _RUNS[key]


#: Commands that refuse to replace an existing output unless given --overwrite.
OVERWRITING = {"explain", "example", "exercise", "plot", "view", "patch", "generate", "analyze", "experiment"}


def _writes(argv: list[str]) -> bool:
    """Whether the command writes a file: not explain without -o, say, which refuses --overwrite."""
    from attnscope.cli import build_parser
    try:
        args = build_parser().parse_args(argv)
    except (SystemExit, Exception):  # a bad option: main says so below
        return True
    outputs = getattr(args, "overwrite_outputs", None)
    return not outputs or any(getattr(args, dest) for dest in outputs)


def _run_cli(argv: list[str]) -> tuple[int, str]:
    from attnscope.cli import main
    if argv and argv[0] in OVERWRITING and "--help" not in argv and _writes(argv):
        # every page's commands share one workspace, where a reader's folder holds only their own
        # outputs: what another page wrote there (attention.html, analysis/) is replaced
        argv = argv + ["--overwrite"]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            rc = main(argv)
        except SystemExit as e:  # argparse: a bad option in the docs
            rc = e.code if isinstance(e.code, int) else 2
    return rc, buf.getvalue()


def _norm(s: str) -> str:
    return " ".join(s.split())


def excerpt_matches(shown: list[str], printed: str) -> bool:
    got = [_norm(x) for x in printed.splitlines()]
    at = 0
    for want in (_norm(x) for x in shown if x.strip()):
        while at < len(got) and not (got[at] == want or (want.endswith("…") and got[at].startswith(want[:-1].rstrip()))):
            at += 1
        if at == len(got):
            return False
        at += 1
    return True


SHELL_BLOCKS = [b for b in BLOCKS if b.lang in SHELL and _runs(b)]


@pytest.mark.parametrize("block", [pytest.param(b, id=b.id, marks=[pytest.mark.real_model] if _needs_a_model_package(
    _substituted(b)) else []) for b in SHELL_BLOCKS])
def test_shell_block(block, in_workspace):
    rel = _rel(block)
    page = block.path.read_text(encoding="utf-8")
    need_checkpoints(in_workspace, block.code)
    for argv, rc_want, shown in _commands(_substituted(block), block.lang == "console"):
        assert argv[0] == "attnscope", (f"{block.id}: {shlex.join(argv)} is not an attnscope command: run it "
                                        "here, or mark the block <!-- not-run: why -->")
        rc, printed = run_cli(argv[1:])
        if rel in GENERATED and argv[1] == "check" and "first goes wrong" in printed:
            rc_want = 1  # a written page's check report with a slip in it: exit 1 by design
        assert rc == rc_want, f"{block.id}: {shlex.join(argv)} exited {rc} (the page expects {rc_want})"
        if rel in GENERATED:
            body = re.sub(r"^(#+) ", lambda m: "##" + m.group(1) + " ", printed.rstrip(), flags=re.M)
            assert body.replace("docs/examples/", "examples/") in page, \
                f"{block.id}: the page is not what {shlex.join(argv)} prints"
        elif shown and block.marker("output") == ["excerpt"]:
            assert excerpt_matches(shown, printed), f"{block.id}: {shlex.join(argv)} printed\n{printed}"
        elif shown:
            assert printed.rstrip("\n").split("\n") == [s for s in shown], f"{block.id}: {shlex.join(argv)} printed\n{printed}"


def test_a_comment_that_states_a_wrong_value_or_shape_fails():
    """The checker of the pages' comments can fail: a right value and shape pass, a wrong one does not."""
    ns: dict = {}
    run_python("import torch\nx = torch.zeros(2, 3)  # (2, 3)\n1 + 1  # 2\n", ns, "right")
    with pytest.raises(AssertionError, match="the page says 3"):
        run_python("1 + 1  # 3\n", {}, "wrong value")
    with pytest.raises(AssertionError, match="has shape"):
        run_python("import torch\nx = torch.zeros(2, 3)  # (3, 2)\n", {}, "wrong shape")
