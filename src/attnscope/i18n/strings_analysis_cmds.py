"""What ``attnscope analyze`` says of an encoder–decoder model (T5, BART: analysis/seq2seq.py), what
``attnscope patch`` prints and draws and what ``attnscope generate`` says, in English and Chinese.
Part of the ``analysis`` table (:mod:`attnscope.i18n.strings_analysis` merges it).
"""

EN = {
    # encoder–decoder analyses (seq2seq.py)
    "analysis.s2s_title": "# Attention of {model} over {corpus}",
    "analysis.s2s_intro": "{pairs} (source, target) pairs: {source} source tokens, {target} target tokens (the decoder's "
                          "start token included), {batches} batches, {seconds:.1f} s. Three attentions, each per layer "
                          "and head: the encoder's self-attention over the source, the decoder's causal self-attention "
                          "over the target, and the cross-attention of every target token over the source. (Head labels "
                          "and importance by ablation are measured for one-text models only.)",
    "analysis.s2s_stack_encoder": "encoder self-attention",
    "analysis.s2s_stack_self": "decoder self-attention (causal)",
    "analysis.s2s_stack_cross": "cross-attention (target → source)",
    "analysis.s2s_means": "Means over the heads of each layer:",
    "analysis.s2s_doc": "- `{stat}`: {doc}",
    "analysis.s2s_sec_alignment": "## Alignment",
    "analysis.s2s_alignment": "Target token t of a pair with T target and S source tokens is compared with the source "
                              "token at the same relative position, a(t) = round(t·(S − 1)/(T − 1)). A head that aligns "
                              "the two texts monotonically puts its largest weight within ±{window} of a(t) "
                              "(`argmax_diagonal` near 1), moves forward with the target (`monotonic` near 1) and stays "
                              "close to the diagonal (`diagonal_offset` near 0); a head that spreads evenly has "
                              "`entropy_norm` near 1. The cross-attention heads most often at a(t):",
    "analysis.s2s_end": "Every head of every stack is in heads.csv; the per-layer means in layers.csv.",
    "analysis.s2s_out_head": "{model}: {pairs} pairs ({source} source, {target} target tokens) from {corpus} in "
                             "{seconds:.1f} s",
    "analysis.s2s_out_stack": "{stack}:",
    "analysis.s2s_out_best": "most diagonal cross-attention heads: {heads}",
    "analysis.s2s_out_best_head": "{head} (argmax at a(t) ±{window}: {value:.2f})",
    "analysis.cross_doc_entropy": "entropy -Σ w ln w of a target token's row over the source, in nats",
    "analysis.cross_doc_entropy_norm": "entropy / ln(source length): 1 = spread evenly, 0 = one source token",
    "analysis.cross_doc_to_diagonal": "weight on the source token at the same relative position, "
                                      "a(t) = round(t·(S−1)/(T−1))",
    "analysis.cross_doc_diagonal_band": "weight within ±window source tokens of a(t)",
    "analysis.cross_doc_argmax_diagonal": "fraction of target tokens whose most attended source token is within "
                                          "±window of a(t)",
    "analysis.cross_doc_diagonal_offset": "mean |j/(S−1) − t/(T−1)| under the weights: distance from the diagonal, "
                                          "as a fraction",
    "analysis.cross_doc_to_source_end": "weight on the source's last token (</s>)",
    "analysis.cross_doc_monotonic": "fraction of target tokens whose most attended source position is not before the "
                                    "previous one's",
    # attnscope patch
    "analysis.patch_head": "{model}: {n} tokens per prompt; metric {metric} at the last position",
    "analysis.patch_differ_1": "  the prompts differ at position {where}",
    "analysis.patch_differ_n": "  the prompts differ at positions {where}",
    "analysis.patch_same": "  the prompts are the same tokens",
    "analysis.patch_clean": "  clean {clean:+.4f}, corrupted {corrupted:+.4f}",
    "analysis.patch_evals": "  {n} layer evaluations (prompt copy × layer), {share:.0%} of rerunning every layer "
                            "({full})",
    "analysis.patch_note": "  note: {note}",
    "analysis.patch_undefined": "the clean and corrupted prompts give the same {metric} ({clean:.4g}), so the "
                                "normalised score is undefined and the raw metric is shown; choose a corruption that "
                                "changes the answer",
    "analysis.patch_fig_x_heads": "head",
    "analysis.patch_fig_x_positions": "position (clean token)",
    "analysis.patch_fig_heads": "head outputs z (each head, all positions)",
    "analysis.patch_fig_residual": "residual stream at {site} (one position)",
    "analysis.patch_fig_title": "{model} · activation patching of {what}\nclean: {clean!r}\ncorrupted: {corrupted!r}",
    "analysis.patch_fig_normalised": "({metric}: patched − corrupted) / (clean − corrupted)",
    "analysis.patch_fig_raw": "{metric} after the patch",
    "analysis.patch_fig_foot": "{metric}: clean {clean:.3f}, corrupted {corrupted:.3f}",
    "analysis.patch_fig_note": " · {note}",
    "analysis.patch_heads": "heads (layer.head)",
    "analysis.patch_positions": "positions at {site} (layer@position)",
    "analysis.patch_normalised": "normalised",
    "analysis.patch_raw": "raw metric",
    "analysis.patch_strongest": "strongest {what}, {scale}:",
    "analysis.wrote": "wrote {path}",
    # attnscope generate
    "analysis.gen_partial": "(the generation stopped inside a character: the first bytes of that character are not "
                            "shown)",
    "analysis.gen_wrote": "wrote {path} ({kb:.0f} KB); open it in a browser",
}

ZH = {
    "analysis.s2s_title": "# {model} 在 {corpus} 上的注意力",
    "analysis.s2s_intro": "{pairs} 个（源，目标）文本对：{source} 个源 token，{target} 个目标 token（含解码器的起始 token），"
                          "{batches} 批，{seconds:.1f} 秒。三种注意力，每一层每个头都测：编码器在源文本上的自注意力，"
                          "解码器在目标文本上的因果自注意力，以及每个目标 token 对源文本的交叉注意力。（头的标签和逐个消融"
                          "得到的重要性只对单文本模型测量。）",
    "analysis.s2s_stack_encoder": "编码器自注意力",
    "analysis.s2s_stack_self": "解码器自注意力（因果）",
    "analysis.s2s_stack_cross": "交叉注意力（目标 → 源）",
    "analysis.s2s_means": "每一层各头的平均：",
    "analysis.s2s_doc": "- `{stat}`：{doc}",
    "analysis.s2s_sec_alignment": "## 对齐",
    "analysis.s2s_alignment": "一个文本对有 T 个目标 token 和 S 个源 token，它的目标 token t 与相对位置相同的源 token 比较："
                              "a(t) = round(t·(S − 1)/(T − 1))。单调地对齐两段文本的头，把最大的权重放在 a(t) 的 "
                              "±{window} 以内（`argmax_diagonal` 接近 1），随目标向前移动（`monotonic` 接近 1），"
                              "并贴近对角线（`diagonal_offset` 接近 0）；平均分配注意力的头 `entropy_norm` 接近 1。"
                              "最常落在 a(t) 的交叉注意力头：",
    "analysis.s2s_end": "每个注意力每个头的数都在 heads.csv 里；逐层平均在 layers.csv 里。",
    "analysis.s2s_out_head": "{model}：{pairs} 个文本对（{source} 个源 token、{target} 个目标 token），来自 {corpus}，"
                             "用时 {seconds:.1f} 秒",
    "analysis.s2s_out_stack": "{stack}：",
    "analysis.s2s_out_best": "最贴近对角线的交叉注意力头：{heads}",
    "analysis.s2s_out_best_head": "{head}（最受关注的源 token 在 a(t) ±{window} 以内的比例：{value:.2f}）",
    "analysis.cross_doc_entropy": "熵 -Σ w ln w（一个目标 token 在源文本上的那一行），单位奈特",
    "analysis.cross_doc_entropy_norm": "熵 / ln(源文本长度)：1 = 平均分配，0 = 只看一个源 token",
    "analysis.cross_doc_to_diagonal": "相对位置相同的源 token 上的权重，a(t) = round(t·(S−1)/(T−1))",
    "analysis.cross_doc_diagonal_band": "a(t) 前后 ±W 个源 token 以内的权重（W 即窗口）",
    "analysis.cross_doc_argmax_diagonal": "最受关注的源 token 在 a(t) ±W 以内的目标 token 所占比例",
    "analysis.cross_doc_diagonal_offset": "按权重平均的 |j/(S−1) − t/(T−1)|：离对角线的距离，以比例计",
    "analysis.cross_doc_to_source_end": "源文本最后一个 token（</s>）上的权重",
    "analysis.cross_doc_monotonic": "最受关注的源位置不在前一个目标 token 的之前的目标 token 所占比例",
    "analysis.patch_head": "{model}：每个提示 {n} 个 token；度量为最后一个位置的 {metric}",
    "analysis.patch_differ_1": "  两个提示在位置 {where} 不同",
    "analysis.patch_differ_n": "  两个提示在位置 {where} 不同",
    "analysis.patch_same": "  两个提示的 token 完全相同",
    "analysis.patch_clean": "  干净提示 {clean:+.4f}，损坏提示 {corrupted:+.4f}",
    "analysis.patch_evals": "  {n} 次层计算（提示副本 × 层），是每层全部重跑（{full}）的 {share:.0%}",
    "analysis.patch_note": "  注意：{note}",
    "analysis.patch_undefined": "干净提示和损坏提示的 {metric} 相同（{clean:.4g}），归一化分数没有定义，所以显示原始"
                                "度量；请换一个会改变答案的损坏提示",
    "analysis.patch_fig_x_heads": "头",
    "analysis.patch_fig_x_positions": "位置（干净提示的 token）",
    "analysis.patch_fig_heads": "头的输出 z（每个头，所有位置）",
    "analysis.patch_fig_residual": "{site} 处的残差流（一个位置）",
    "analysis.patch_fig_title": "{model} · 激活修补：{what}\n干净提示：{clean!r}\n损坏提示：{corrupted!r}",
    "analysis.patch_fig_normalised": "（{metric}：修补后 − 损坏）/（干净 − 损坏）",
    "analysis.patch_fig_raw": "修补后的 {metric}",
    "analysis.patch_fig_foot": "{metric}：干净 {clean:.3f}，损坏 {corrupted:.3f}",
    "analysis.patch_fig_note": " · {note}",
    "analysis.patch_heads": "头（层.头）",
    "analysis.patch_positions": "{site} 处的位置（层@位置）",
    "analysis.patch_normalised": "归一化",
    "analysis.patch_raw": "原始度量",
    "analysis.patch_strongest": "最强的{what}，{scale}：",
    "analysis.wrote": "已写入 {path}",
    "analysis.gen_partial": "（生成停在一个字符中间：这个字符的前几个字节没有显示）",
    "analysis.gen_wrote": "已写入 {path}（{kb:.0f} KB）；请在浏览器中打开",
}
