"""A development check (not a test): attnscope's composition and copying scores beside
TransformerLens' on the same tiny GPT-2 checkpoint the tests write (docs/guide/qk-ov-circuits.md
records a run).

Two interpreters, so that TransformerLens never enters attnscope's environment:

  .venv/bin/python tools/circuits_tl_check.py attnscope DIR     writes DIR/gpt2 and DIR/attnscope.json
  /tmp/tlvenv/bin/python tools/circuits_tl_check.py tl DIR      writes DIR/tl.json and prints the comparison

TransformerLens reads the checkpoint through transformers (its GPT-2 weight conversion) into a
HookedTransformer made from a config (no hub), twice: unprocessed (``fold_ln=False``: attnscope's
``fold_norm=False``) and with LayerNorm folded but the weights not centred (``fold_ln=True``,
``center_writing_weights=False``, ``center_unembed=False``: attnscope's ``fold_norm=True``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def with_attnscope(out: Path) -> None:
    import attnscope
    from attnscope.circuits import composition_scores, copying_scores
    from attnscope.testing.tiny import tiny_gpt2

    folder = tiny_gpt2(out / "gpt2")
    m = attnscope.load(folder)
    res: dict = {"versions": {"attnscope": getattr(attnscope, "__version__", "?")}}
    for fold in (False, True):
        key = "folded" if fold else "unprocessed"
        res[key] = {f"comp_{k}": composition_scores(m, k, fold_norm=fold).tolist() for k in "qkv"}
        cop = copying_scores(m, fold_norm=fold)
        res[key]["copying"] = [[cop[l, h] for h in range(m.config.n_heads)] for l in range(m.config.n_layers)]
    (out / "attnscope.json").write_text(json.dumps(res), encoding="utf-8")
    print("wrote", out / "attnscope.json")


def with_tl(out: Path) -> None:
    import numpy as np
    import torch
    import transformer_lens
    import transformers
    from transformer_lens import HookedTransformer, HookedTransformerConfig
    from transformer_lens.pretrained.weight_conversions import convert_gpt2_weights

    hf = transformers.GPT2LMHeadModel.from_pretrained(str(out / "gpt2"), dtype=torch.float64).eval()
    c = hf.config
    res: dict = {"versions": {"transformer_lens": getattr(transformer_lens, "__version__", "?"),
                              "torch": torch.__version__, "transformers": transformers.__version__}}
    for fold in (False, True):
        cfg = HookedTransformerConfig(n_layers=c.n_layer, d_model=c.n_embd, n_ctx=c.n_positions,
                                      d_head=c.n_embd // c.n_head, n_heads=c.n_head, d_mlp=4 * c.n_embd,
                                      d_vocab=c.vocab_size, act_fn="gelu_new", normalization_type="LN",
                                      eps=c.layer_norm_epsilon, positional_embedding_type="standard",
                                      original_architecture="GPT2LMHeadModel", dtype=torch.float64,
                                      default_prepend_bos=False)
        tl = HookedTransformer(cfg)
        tl.load_and_process_state_dict(convert_gpt2_weights(hf, cfg), fold_ln=fold, center_writing_weights=False,
                                       center_unembed=False, fold_value_biases=False,
                                       refactor_factored_attn_matrices=False)
        key = "folded" if fold else "unprocessed"
        res[key] = {f"comp_{k}": tl.all_composition_scores(k.upper()).double().tolist() for k in "qkv"}
        full = tl.W_E @ tl.OV @ tl.W_U  # FactoredMatrix (L, H, V, V), never formed
        lam = full.eigenvalues  # (L, H, d_head)
        res[key]["copying"] = (lam.sum(-1) / lam.abs().sum(-1)).real.double().tolist()
    (out / "tl.json").write_text(json.dumps(res), encoding="utf-8")
    ours = json.loads((out / "attnscope.json").read_text(encoding="utf-8"))
    print("versions:", res["versions"], ours["versions"])
    for key in ("unprocessed", "folded"):
        for name in ("comp_q", "comp_k", "comp_v", "copying"):
            a, b = np.array(ours[key][name], dtype=float), np.array(res[key][name], dtype=float)
            if name.startswith("comp"):  # TransformerLens masks l2 ≤ l1 with 0, attnscope with NaN
                keep = ~np.isnan(a)
                a, b = a[keep], b[keep]
            print(f"{key:12s} {name:8s} n={a.size:3d} max |attnscope − TL| = {np.abs(a - b).max():.3e}  "
                  f"max rel = {(np.abs(a - b) / np.abs(b)).max():.3e}  e.g. {a.ravel()[:3].round(6).tolist()}")


if __name__ == "__main__":
    mode, folder = sys.argv[1], Path(sys.argv[2])
    folder.mkdir(parents=True, exist_ok=True)
    if mode == "attnscope":
        with_attnscope(folder)
    else:
        with_tl(folder)
