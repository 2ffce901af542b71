"""``attnscope example``: the three-token example of the second article, computed step by step.

A placeholder main job until ``attnscope explain`` exists; it prints float64 values.
"""

from __future__ import annotations

import argparse
import math

import torch

from ..examples import EXAMPLES
from ..functional import attention_steps


def register(sub) -> None:
    p = sub.add_parser("example", help="print a built-in worked example step by step",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", nargs="?", default="three-tokens", choices=sorted(EXAMPLES))
    p.add_argument("--decimals", type=int, default=4)
    p.set_defaults(func=run)


def run(args) -> int:
    ex = EXAMPLES[args.name]
    X = torch.tensor(ex["X"], dtype=torch.float64)  # (L, d)
    Q = X @ torch.tensor(ex["W_Q"], dtype=torch.float64)  # (L, d_k)
    K = X @ torch.tensor(ex["W_K"], dtype=torch.float64)  # (L, d_k)
    V = X @ torch.tensor(ex["W_V"], dtype=torch.float64)  # (L, d_v)
    steps = attention_steps(Q, K, V)
    fmt = lambda t: "\n".join("  [" + ", ".join(f"{x:.{args.decimals}f}" for x in row) + "]" for row in t.tolist())
    d_k = Q.shape[-1]
    print(f"tokens: {' '.join(ex['tokens'])}")
    for name, t in (("X", X), ("Q = X·W_Q", Q), ("K = X·W_K", K), ("V = X·W_V", V),
                    ("scores = Q·Kᵀ", steps["scores"]),
                    (f"scaled = scores / √d_k (√{d_k} = {math.sqrt(d_k):.{args.decimals}f})", steps["scaled"]),
                    ("weights = softmax(scaled) by row", steps["weights"]),
                    ("output = weights · V", steps["out"])):
        print(f"{name}:\n{fmt(t)}")
    return 0
