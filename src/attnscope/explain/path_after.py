"""The steps of one token's whole path after an attention row (:mod:`.path`): the heads side by
side, ``W_O``, the residual, the norm before the feed-forward, the feed-forward with its activation
(gated where the model is), the second residual, the layer's output, and the summary that sets the
model's own float32 trace beside every step. A mixin of :class:`.path_steps.PathSteps`, which holds the pass
``f``, the trace and the names (``self.lp``: ``layers.{i}``, or ``encoder.`` / ``decoder.layers.{i}``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from .blocks import Formula, Para, Step, Table, t
from .path_blocks import (
    activation_blocks,
    concat_step,
    norm_blocks,
    norm_kind,
    output_step,
    projection_table,
    trace_para,
    vector_table,
)


class After:
    """Mixin: the steps after the row (see the module docstring)."""

    # set by PathSteps.__init__ (the pass, the trace, the query and the layer's names)
    m: Any
    f: dict
    d: dict
    c: Any
    layer: Any
    i: int
    h: int
    p: int
    dims: int
    tok: str
    lp: str
    pfx: str
    att: str
    pre: bool
    gated: bool
    values: dict
    meta: list
    diffs: dict

    if TYPE_CHECKING:
        def x(self, name: str, head: Optional[int] = None) -> np.ndarray: ...
        def note(self, step: str, name: str, head: Optional[int] = None) -> str: ...
        def layer_in(self) -> np.ndarray: ...

    def norm_step(self, key: str, title: str, why: str, x_in: str, norm, out: str) -> Step:
        """One norm on the path: ``why``, then ``norm`` of the token's vector at ``x_in`` written out
        (:func:`.path_blocks.norm_blocks`) into ``out``, which is noted against the trace."""
        k = self.note(key, out)
        return Step(key, t(title), [Para(t(why))] + norm_blocks(self.x(x_in), norm, self.x(k), self.dims) + [trace_para(k)])

    # -- after attention ----------------------------------------------------------------------
    def after(self) -> list:
        p = self.lp
        steps = self.heads_steps(self.att, f"{p}.{self.att}_resid", self.layer_in()[self.p])
        r = f"{p}.{self.att}_resid"
        ln = self.layer.ln2 if self.pre else self.layer.ln1
        why = "path.ffn_in_post" if not self.pre else "path.ffn_in_pre"
        steps.append(self.norm_step("ffn_in", f"path.step_ffn_in_{norm_kind(ln)}", why, r, ln, f"{p}.ffn_in"))
        steps += self.ffn_steps(f"{p}.ffn_in", r, self.layer.ln2)
        return steps

    def heads_steps(self, att: str, resid: str, x_in) -> list:
        """After one attention's row: the heads side by side, W_O, (Gemma's norm), the residual."""
        p = self.lp
        z = self.f[f"{p}.{att}.z"][:, self.p]  # (H, d_head)
        for h in range(z.shape[0]):
            self.note("z", f"{p}.{att}.z", h)
        sfx = "" if att != "cross_attn" else "_cross"
        steps = [concat_step(z, self.h, self.dims, self.tok, [f"{p}.{att}.z", self.note("concat", f"{p}.{att}.merged")])]
        steps[-1].key += sfx
        attn = getattr(self.layer, att)
        out = self.note("attn_out", f"{p}.{att}.out")
        steps.append(output_step(z, attn.W_O.weight, attn.W_O.bias, self.x(out), self.dims, self.h, [out]))
        steps[-1].key += sfx
        added = out
        if getattr(self.layer, "sandwich", False):
            added = f"{p}.attn_post_norm"
            steps.append(self.norm_step("attn_post_norm", "path.step_post_norm", "path.post_norm_why", out,
                                        self.layer.ln_attn_post, added))
        r = self.note("attn_resid", resid)
        steps.append(Step("attn_resid" + sfx, t("path.step_resid1" + sfx),
                          [Formula("x + attention(x)", r"x+\mathrm{attention}(x)"), Para(t("path.resid_why", tok=self.tok)),
                           vector_table([(t("path.x_in"), x_in), (added, self.x(added)), (r, self.x(r))], self.dims),
                           trace_para(r)]))
        return steps

    def ffn_steps(self, fin: str, resid: str, out_norm) -> list:
        """The feed-forward on ``fin``, its residual (onto ``resid`` in pre-norm) and the layer's output
        (post-norm: ``out_norm`` of the sum)."""
        p, ffn, c = self.lp, self.layer.ffn, self.c
        x = self.x(fin)
        steps = []
        d_ff = ffn.W_2.weight.shape[1]
        hidden = self.note("ffn", f"{p}.ffn.hidden")
        if self.gated:
            gate = self.note("ffn", f"{p}.ffn.gate")
            g_tab = projection_table(x, ffn.W_1.weight, range(d_ff), ffn.W_1.bias, self.x(f"{p}.ffn.gate_pre"),
                                     dims=self.dims, wname="W_g")
            u_tab = projection_table(x, ffn.W_1.weight, range(d_ff, 2 * d_ff), ffn.W_1.bias, self.x(f"{p}.ffn.up"),
                                     dims=self.dims, wname="W_u")
            self.values[f"{p}.ffn.gate_pre"], self.values[f"{p}.ffn.up"] = self.x(f"{p}.ffn.gate_pre"), self.x(f"{p}.ffn.up")
            act = activation_blocks(c.activation, self.x(f"{p}.ffn.gate_pre"), self.x(gate), self.dims,
                                    up=self.x(f"{p}.ffn.up"), hidden=self.x(hidden))
            blocks = [Formula("hidden = act(x W_gate) ⊙ (x W_up)", r"\mathrm{hidden}=\mathrm{act}(x W_{gate})\odot(x W_{up})"),
                      Para(t("path.gated_why", dff=d_ff, act=c.activation)), Para(t("path.gate_proj")), g_tab,
                      Para(t("path.up_proj")), u_tab] + act + [trace_para(gate, hidden)]
            steps.append(Step("ffn", t("path.step_ffn_gated"), blocks))
        else:
            self.values[f"{p}.ffn.pre"] = self.x(f"{p}.ffn.pre")
            tab = projection_table(x, ffn.W_1.weight, range(d_ff), ffn.W_1.bias, self.x(f"{p}.ffn.pre"),
                                   dims=self.dims, wname="W_1")
            act = activation_blocks(c.activation, self.x(f"{p}.ffn.pre"), self.x(hidden), self.dims)
            pos = int((self.x(f"{p}.ffn.pre") > 0).sum())
            blocks = [Formula("hidden = act(x W_1 + b_1)", r"\mathrm{hidden}=\mathrm{act}(x W_1+b_1)"),
                      Para(t("path.ffn_why", dff=d_ff, d=len(x), act=c.activation)), tab] + act + \
                     [Para(t("path.ffn_positive", k=pos, dff=d_ff)), trace_para(hidden)]
            steps.append(Step("ffn", t("path.step_ffn"), blocks))
        fout = self.note("ffn_out", f"{p}.ffn.out")
        tab = projection_table(self.x(hidden), ffn.W_2.weight, range(ffn.W_2.weight.shape[0]), ffn.W_2.bias,
                               self.x(fout), dims=self.dims, xname="h", wname="W_2")
        steps.append(Step("ffn_out", t("path.step_ffn_out"),
                          [Formula("ffn.out = hidden W_2 + b_2", r"\mathrm{ffn.out}=\mathrm{hidden}\,W_2+b_2"), tab,
                           trace_para(fout)]))
        added = fout
        if getattr(self.layer, "sandwich", False):
            added = f"{p}.ffn_post_norm"
            steps.append(self.norm_step("ffn_post_norm", "path.step_post_norm_ffn", "path.post_norm_why_ffn", fout,
                                        self.layer.ln_ffn_post, added))
        post = not self.pre
        base = fin if post else resid
        s = self.note("ffn_resid", f"{p}.ffn_resid")
        steps.append(Step("ffn_resid", t("path.step_resid2"),
                          [Para(t("path.resid2_post" if post else "path.resid2_pre", base=base)),
                           vector_table([(base, self.x(base)), (added, self.x(added)), (s, self.x(s))], self.dims),
                           trace_para(s)]))
        out = self.note("out", f"{p}.out")
        if post:
            steps.append(Step("out", t("path.step_out_ln"),
                              [Para(t("path.out_post"))] + norm_blocks(self.x(s), out_norm, self.x(out), self.dims)
                              + [trace_para(out)]))
        else:
            steps.append(Step("out", t("path.step_out"), [Para(t("path.out_pre", s=s)),
                                                          vector_table([(out, self.x(out))], self.dims), trace_para(out)]))
        return steps

    # -- the end ------------------------------------------------------------------------------
    def mark_row(self, steps: list, att: Optional[str] = None, diffs: Optional[dict] = None, cross: bool = False) -> None:
        """Add the trace names to the attention row's steps (built by :func:`.row.build_row`);
        ``cross``: the decoder's second row (its step keys get ``cross_``)."""
        p, h = f"{self.lp}.{att or self.att}", self.h
        names = {"scores": [f"{p}.scores[{h}]"], "scaled": [f"{p}.scaled[{h}]"], "exp": [f"{p}.masked[{h}]"],
                 "weights": [f"{p}.weights[{h}]"], "output": [f"{p}.z[{h}]"],
                 "qk_norm": [f"{p}.q_normed[{h}]", f"{p}.k_normed[{h}]"], "rotation": [f"{p}.q[{h}]", f"{p}.k[{h}]"]}
        names.update({k: [f"{p}.{x}[{h}]" for x in v] for k, v in getattr(self, "row_names", {}).items()})
        for s in steps:
            if s.key in names:
                s.blocks.append(trace_para(*names[s.key]))
            if s.key == "result":
                s.title = t("path.step_row_result_cross" if cross else "path.step_row_result", h=h)
            if cross:
                s.key = "cross_" + s.key
        for key, diff in (self.d["row_diffs"] if diffs is None else diffs).items():
            self.meta.append({"step": "row", "trace": f"{p}.{key}[{h}]", "max_abs_diff": diff})

    def summary(self) -> Step:
        rows = []
        for m in self.meta:
            if m["step"] == "z" and not m["trace"].endswith(f"[{self.h}]"):
                continue  # the other heads' z: in JSON, not in the table
            what = "source" if m["step"] == "source" else _what(m["trace"], self.i, self.pfx)
            rows.append([m["trace"], t(f"path.what.{what}"),
                         f"{m['max_abs_diff']:.1e}" if m["max_abs_diff"] is not None else "—"])
        x_in = self.layer_in()[self.p]
        out = self.x(f"{self.lp}.out")
        cos = float(x_in @ out / (np.linalg.norm(x_in) * np.linalg.norm(out)))
        worst = max((m["max_abs_diff"] for m in self.meta if m["max_abs_diff"] is not None), default=0.0)
        blocks = [Table([t("path.col_trace"), t("path.col_what"), t("path.col_diff")], rows),
                  Para(t("path.summary_diff", worst=f"{worst:.1e}")),
                  Para(t("path.context", tok=self.tok, i=self.i, a=float(np.linalg.norm(x_in)),
                         b=float(np.linalg.norm(out)), cos=cos))]
        return Step("summary", t("path.step_summary"), blocks)


def _what(name: str, layer: int, pfx: str = "") -> str:
    """The label suffix that says what a trace name holds (``layers.3.attn.q[2]`` → ``attn.q``;
    ``decoder.layers.0.cross_attn.q[1]`` → ``cross_attn.q``)."""
    if name == f"{pfx}layers.{layer - 1}.out":
        return "earlier"
    base = name.split("[")[0]
    base = base[len(pfx):] if pfx and base.startswith(pfx) else base
    base = base.split(f"layers.{layer}.", 1)[1] if base.startswith(f"layers.{layer}.") else base
    for own in ("self_attn", "cross_attn"):  # the decoder's two attentions: the labels of every attention
        if base.startswith(own):
            return "attn" + base[len(own):]
    return base
