"""Write docs/multi-head.md and docs/positions.md: the full worked outputs of
``attnscope explain --example multi-head`` (and grouped-query, and the check report of
docs/examples/multi-head-answers.yaml) and of ``attnscope explain positions`` (sinusoidal, rotary,
T5), each with the command that prints it; and docs/results/paths/*.md: one token's whole path
(``explain --path``) through a DeBERTa layer and a T5 decoder layer, on the tests' tiny checkpoints.

    .venv/bin/python tools/make_worked_docs.py          # rewrite both pages
    tests/explain/test_worked_docs.py                   # fails when a page is stale

The outputs are pasted as Markdown with their headings two levels down, so that each page keeps
one title.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _down(md: str) -> str:
    """Headings two levels down (# → ###), so that the pasted output sits under the page's sections."""
    return re.sub(r"^(#+) ", lambda m: "##" + m.group(1) + " ", md.rstrip(), flags=re.M)


def _section(title: str, command: str, body: str) -> list[str]:
    return [f"## {title}", "", "```sh", command, "```", "", _down(body), ""]


def multi_head_page() -> str:
    from attnscope import check, explain
    mh = explain(example="multi-head")
    out = ["# Multi-head attention by hand", "",
           "The fourth article's computation in numbers: one fused projection `X·W_QKV` for every head, the "
           "`view`/`transpose` that separates the heads (a table of where each column goes: re-indexing, no "
           "arithmetic), each head on its own (`X·W_Q⁽ⁱ⁾` with the head's block of the learned `W_Q` gives its "
           "block, entry for entry — a projection of every feature, not a slice of the token), every head's "
           "attention worked out as in the single-head example, the concatenation and `× W_O` (also as the "
           "sum of each head's share `z⁽ⁱ⁾·W_O⁽ⁱ⁾`).", "",
           "A toy input is a multi-head problem when it has `W_QKV`, or `n_heads` with `W_O` (and no `head`), "
           "or `heads: all`; `n_kv_heads` makes grouped-query heads. The input of the first example is "
           "[examples/multi-head.yaml](examples/multi-head.yaml). The numbers are tested against "
           "`torch.nn.MultiheadAttention` and `F.scaled_dot_product_attention(enable_gqa=True)` "
           "(`tests/explain/test_multihead.py`).", ""]
    out += _section("Two heads, fused W_QKV", "attnscope explain --example multi-head --format markdown",
                    mh.render("markdown"))
    out += _section("同一例子（中文）", "attnscope explain --example multi-head --format markdown --lang zh",
                    mh.render("markdown", lang="zh"))
    out += _section("Grouped-query: four query heads on two key/value heads (causal)",
                    "attnscope explain --example grouped-query --format markdown",
                    explain(example="grouped-query").render("markdown"))
    report = check(str(ROOT / "docs" / "examples" / "multi-head-answers.yaml")).render("markdown")
    report = report.replace(str(ROOT / "docs") + "/", "")
    out += _section("Checking a multi-head calculation", "attnscope check docs/examples/multi-head-answers.yaml "
                    "--format markdown", report)
    return "\n".join(out).rstrip() + "\n"


def positions_page() -> str:
    from attnscope import explain
    out = ["# Positions worked out", "",
           "`attnscope explain positions` works out how a Transformer knows where a token is: the sinusoidal "
           "encoding of a position and dimension (each sinusoid computed) and why PE(p + k) is a rotation of "
           "PE(p) — a 2×2 matrix per pair that depends on k only; rotary positions (each pair of q and k turned, "
           "R((p + k)θ) = R(kθ)·R(pθ), so that q'·k' depends on the distance only; `--model FOLDER` uses a "
           "decoder's own head width, base and scaled frequencies); and T5's relative buckets (distance → "
           "bucket, with T5's float32 logs). The numbers are tested against mpmath at 50 digits, transformers' "
           "`apply_rotary_pos_emb`/`LlamaRotaryEmbedding` and `T5Attention._relative_position_bucket` "
           "(`tests/explain/test_positions.py`).", "",
           "Options: `--scheme sinusoidal|rotary|t5`, `--position P`, `--dim I`, `--offset K` (`-k`), "
           "`--d-model D` and `--base B` (sinusoidal), `--dk`, `--base`, `--pairing half|adjacent`, "
           "`--vector V`, `--model FOLDER`, `--layer L` (rotary), `--buckets N`, `--max-distance M`, "
           "`--causal`, `--model FOLDER` (t5). Positions, dimensions and pairs count from 0.", ""]
    out += _section("Sinusoidal: position 5, dimension 2, and PE(8) as a rotation of PE(5)",
                    "attnscope explain positions --position 5 --dim 2 --offset 3 --format markdown",
                    explain(lesson="positions", position=5, dim=2, offset=3).render("markdown"))
    out += _section("正弦位置编码（中文）", "attnscope explain positions --position 5 --dim 2 --offset 3 --format markdown "
                    "--lang zh", explain(lesson="positions", position=5, dim=2, offset=3).render("markdown", lang="zh"))
    out += _section("Rotary: position 5, pair 1, and the turn to position 8",
                    "attnscope explain positions --scheme rotary --position 5 --dim 1 --offset 3 --format markdown",
                    explain(lesson="positions", scheme="rotary", position=5, dim=1, offset=3).render("markdown"))
    out += _section("T5: the bucket of δ = −13", "attnscope explain positions --scheme t5 --position 20 --offset -13 "
                    "--format markdown", explain(lesson="positions", scheme="t5", position=20, offset=-13).render("markdown"))
    return "\n".join(out).rstrip() + "\n"


#: One token's whole path through a DeBERTa layer and a T5 decoder layer (self- and cross-attention):
#: (page, tiny checkpoint, the command's options). The checkpoints are the tests' tiny random ones
#: (tests/models/encoders/tiny.py, tests/models/seq2seq/tiny.py), written by transformers with a seed.
PATHS = {
    "docs/results/paths/deberta-v3.md": ("deberta_v3", "deberta-v3", {
        "text": "the cat sat on the mat", "position": 5, "layer": 1, "head": 1}),
    "docs/results/paths/t5-decoder.md": ("t5", "t5-small", {
        "text": "the cat sat on the mat", "target": "the cat sat", "position": 5, "layer": 1, "head": 2}),
}

_PATH_WHAT = {
    "deberta_v3": "a token's whole path through layer 1 of a DeBERTa-v3 encoder: the projection before the "
                  "embedding LayerNorm, the shared relative table and its LayerNorm, this head's pos_k/pos_q rows, the "
                  "log buckets of the relative positions, the three score terms c2c, c2p, p2c and the one factor "
                  "1/√(d·(1 + terms)), then BERT's layer (W_O, residual, LayerNorm, feed-forward)",
    "t5": "a target token's whole path through layer 1 of a T5 decoder: RMS pre-norm, causal self-attention with "
          "its bias buckets, the encoder's output as keys and values, cross-attention (a target token over the "
          "source), the feed-forward and the layer's output",
}


def path_command(rel: str, folder: str | None = None) -> str:
    """The command line that prints the page ``rel`` of :data:`PATHS` (``--model FOLDER``)."""
    import shlex
    _, name, o = PATHS[rel]
    argv = ["attnscope", "explain", "--model", folder or f"./{name}", "--text", o["text"]]
    if "target" in o:
        argv += ["--target", o["target"]]
    argv += ["--position", str(o["position"]), "--layer", str(o["layer"]), "--head", str(o["head"]), "--path",
             "--format", "markdown"]
    return shlex.join(argv)


def tiny_checkpoint(family: str, folder: Path) -> Path:
    """The tests' tiny random checkpoint of ``family`` written to ``folder`` (imports transformers)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    if family == "t5":
        from tests.models.seq2seq.tiny import t5
        return t5(folder)
    from tests.models.encoders.tiny import build
    return build(family, folder)


def path_page(rel: str, folder: Path | None = None) -> str:
    """The page ``rel`` of :data:`PATHS`: a note on what it is, then the whole output. ``folder``: an
    already written tiny checkpoint (else one is written to a temporary folder)."""
    import tempfile

    from attnscope import explain, load
    family, name, o = PATHS[rel]
    with tempfile.TemporaryDirectory() as tmp:
        path = folder or tiny_checkpoint(family, Path(tmp) / name)
        md = explain(model=load(path), path=True, **o).render("markdown")
    head = [f"<!-- Generated by tools/make_worked_docs.py: {path_command(rel)}",
            "     on the tests' tiny random checkpoint (tests/explain/test_worked_docs.py checks that it is current; "
            "the float32 differences depend on the thread count) -->", "",
            f"> The output of `{path_command(rel)}`: {_PATH_WHAT[family]}. `./{name}` here is the tests' tiny "
            f"random {family.replace('_', '-')} checkpoint (written by transformers with a fixed seed; its small "
            "vocabulary cuts words into pieces), so the numbers show the steps, not a trained model's attention; a "
            "real checkpoint folder takes the same command. Every value is tested against transformers' eager model "
            "run in float64 (`tests/explain/test_path_relative.py`).", ""]
    return "\n".join(head) + "\n" + md


PAGES = {"docs/multi-head.md": multi_head_page, "docs/positions.md": positions_page,
         **{rel: (lambda rel=rel: path_page(rel)) for rel in PATHS}}


def main() -> int:
    for rel, make in PAGES.items():
        (ROOT / rel).parent.mkdir(parents=True, exist_ok=True)
        (ROOT / rel).write_text(make(), encoding="utf-8")
        print(f"wrote {rel}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
