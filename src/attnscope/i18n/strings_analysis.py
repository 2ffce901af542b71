"""``attnscope analyze``'s report (report.md, the heatmaps' titles, what the command prints),
``attnscope patch``'s and ``attnscope generate``'s printed lines, in English and Chinese.

Numbers are formatted by the templates themselves (the same format spec in both languages), so a
report says the same numbers in either. Statistic, label and role names (``distance``, ``cls``,
``induction`` …) are the names of heads.csv's columns and of ``--threshold``: they stay as they are
in every language. ``analysis.unit_*`` are counted nouns: English ``singular|plural``, Chinese the
measure word and noun written after the number.
"""

EN = {
    # counted nouns
    "analysis.unit_text": "text|texts",
    "analysis.unit_token": "token|tokens",
    "analysis.unit_batch": "batch|batches",
    "analysis.unit_layer": "layer|layers",
    "analysis.unit_head": "head|heads",
    "analysis.unit_process": "process|processes",
    "analysis.unit_line": "line|lines",
    "analysis.unit_empty": "empty text|empty texts",
    "analysis.unit_undecodable": "undecodable line|undecodable lines",
    "analysis.unit_sequence": "sequence|sequences",
    "analysis.sep": "; ",
    "analysis.list_sep": ", ",
    # report.md: the corpus
    "analysis.title": "# Head analysis: {model}\n",
    "analysis.per_line": "line",
    "analysis.per_paragraph": "paragraph",
    "analysis.per_file": "file",
    "analysis.per_builtin": "paragraph (built-in corpus)",
    "analysis.corpus": "Corpus `{corpus}` (one text per {unit}): **{texts}, {tokens}** in {batches} of ≤ {batch_size}; "
                       "{layers} × {heads}; {processes}, {seconds:.1f} s.\n",
    "analysis.pass_stats": "statistics pass: {texts}",
    "analysis.pass_time": " in {seconds:.1f} s",
    "analysis.pass_no_importance": "importance pass: not run (--importance-texts 0)",
    "analysis.pass_importance": "importance pass: {texts} (the first ones) × {heads} ablated",
    "analysis.passes": "Texts used: {stats}; {importance}.",
    "analysis.note_truncated_1": "{texts} longer than {max_length} tokens was truncated ({tokens} cut)",
    "analysis.note_truncated_n": "{texts} longer than {max_length} tokens were truncated ({tokens} cut)",
    "analysis.note_decode_1": "{lines} was not valid UTF-8 and skipped (listed at the end)",
    "analysis.note_decode_n": "{lines} were not valid UTF-8 and skipped (listed at the end)",
    "analysis.note_empty_1": "{texts} was skipped",
    "analysis.note_empty_n": "{texts} were skipped",
    "analysis.nothing_left_out": "Nothing else was left out.",
    "analysis.left_out": "Left out: {notes}.",
    "analysis.queries_incl": " including [CLS]/[SEP]",
    "analysis.queries_excl": " except [CLS]/[SEP]",
    "analysis.queries": "Queries are real tokens{which}; padding never counts. Each head's value is the mean over all "
                        "counted queries of the corpus (`to_local`: window ±{window}). Entropy in nats, distances in "
                        "tokens. A head that spread every query's attention evenly over the keys it sees would have "
                        "distance **{baseline}** on this corpus: the scale against which to read `distance`.\n",
    # report.md: per layer and the trend tests
    "analysis.sec_layers": "## Per layer (means over heads)\n",
    "analysis.col_layer": "layer",
    "analysis.col_head": "head",
    "analysis.col_importance": "importance",
    "analysis.col_labels": "labels",
    "analysis.col_label": "label",
    "analysis.sec_trends": "## Local in low layers, global in high layers?\n",
    "analysis.trends_intro": "Spearman ρ of each head's statistic against its layer index (over all heads; permutation "
                             "p-value), and over the per-layer means:\n",
    "analysis.trends_head": "| statistic | claim predicts | ρ (heads) | p | ρ (layer means) | p | reading |",
    "analysis.rises": "rises",
    "analysis.falls": "falls",
    "analysis.verdict_line": "\n**Verdict: {claim}.**\n",
    # summary.py: the verdicts and the claim
    "analysis.verdict_none": "no trend can be computed",
    "analysis.verdict_flat": "no significant trend with depth (ρ = {rho:+.2f}, p = {p:.3g})",
    "analysis.verdict_supports": "supports the claim",
    "analysis.verdict_contradicts": "contradicts the claim",
    "analysis.verdict_stat": "{stat}: {reading}",
    "analysis.verdict_trend": "{stat} {direction} with depth (ρ = {rho:+.2f}, p = {p:.3g}): {reading}",
    "analysis.claim_supported": "supported: attention distance grows with depth, also without the jumps to special "
                                "tokens",
    "analysis.claim_partly_overall": "partly supported: attention distance grows with depth, but not significantly "
                                     "once the attention on special tokens ([CLS]/[SEP]) is left out",
    "analysis.claim_partly_content": "partly supported: the distance of attention on content tokens grows with "
                                     "depth, but the overall distance (dominated by special tokens) does not",
    "analysis.claim_contradicted": "contradicted: attention gets more local with depth",
    "analysis.claim_none": "not supported: no significant trend of attention distance with depth",
    "analysis.claim_bottom": "; but not from the very bottom: the most local layer is layer {layer} (content distance "
                             "{content:.1f} tokens against {content_0:.1f} in layer 0, whose normalised entropy is "
                             "{entropy_0:.2f})",
    # report.md: head types, importance, heatmaps
    "analysis.sec_types": "## Head types\n",
    "analysis.rule": "{label}: {stat} ≥ {value:g}",
    "analysis.rules": "Rules (settable with `--threshold NAME=VALUE`): {rules}. The dominant-key rule with the "
                      "largest fraction wins, then local, then broad; otherwise other.\n",
    "analysis.types_head": "| label | family | heads | which (layer.head) |",
    "analysis.family_positional": "positional",
    "analysis.family_diagonal": "diagonal",
    "analysis.family_vertical": "vertical",
    "analysis.family_block_local": "block/local",
    "analysis.family_broad": "broad",
    "analysis.family_other": "other",
    "analysis.metric_cosine": "1 − cosine similarity of the pooled sentence embedding",
    "analysis.metric_loss": "change of the next-token loss (nats/token)",
    "analysis.sec_importance": "## Head importance\n\nAblating one head (z = 0) on the first {texts}; measure: "
                               "{metric}. Most important heads:\n",
    "analysis.sec_heatmaps": "## Heatmaps\n",
    "analysis.sec_skipped": "## Lines skipped (not UTF-8)\n",
    "analysis.skipped_more": "- … and {n} more",
    "analysis.decode_line": "{where}: {bytes} at byte {pos} is not valid {encoding}",
    "analysis.byte": "byte {hex}",
    "analysis.bytes": "bytes {hex}",
    # heatmaps
    "analysis.map_title": "{name}: {doc}",
    "analysis.map_importance": "importance ({metric})",
    "analysis.map_labels": "head labels ({legend})",
    "analysis.doc_entropy": "attention entropy -Σ w ln w of a query's row, in nats",
    "analysis.doc_entropy_norm": "entropy / ln(number of visible keys): 1 = uniform, 0 = one key",
    "analysis.doc_distance": "mean attention distance Σ w |i-j|, in tokens",
    "analysis.doc_distance_content": "mean distance of the attention on non-special keys, in tokens",
    "analysis.doc_to_cls": "fraction of attention on [CLS] (the leading special token)",
    "analysis.doc_to_sep": "fraction of attention on [SEP] (the trailing special token)",
    "analysis.doc_to_punct": "fraction of attention on punctuation tokens",
    "analysis.doc_to_self": "fraction of attention on the query token itself",
    "analysis.doc_to_prev": "fraction of attention on the previous token",
    "analysis.doc_to_next": "fraction of attention on the next token",
    "analysis.doc_argmax_prev": "fraction of queries whose unique most-attended token is the previous one",
    "analysis.doc_argmax_next": "fraction of queries whose unique most-attended token is the next one",
    "analysis.doc_to_local": "fraction of attention within ±window tokens (the query included)",
    # decoder heads (decoder_report.py)
    "analysis.dec_doc_sink": "attention sink: fraction of attention on the first token (corpus, queries i ≥ 1)",
    "analysis.dec_title_sink": "sink: weight on the first token",
    "analysis.dec_title_prev_token": "prev_token: on the previous token",
    "analysis.dec_title_duplicate": "duplicate: on the earlier same token",
    "analysis.dec_title_induction": "induction: on the token after it",
    "analysis.dec_sec": "## Decoder heads\n",
    "analysis.dec_sink": "- `sink`: {doc}.",
    "analysis.dec_no_prefix": "nothing (the tokenizer adds no special token)",
    "analysis.dec_repeat": "- `prev_token`, `duplicate`, `induction`: on {sequences} of {length} distinct random tokens "
                           "written twice (Olsson et al. 2022), after {prefix}; drawn with seed {seed} from the "
                           "{candidates:,} ordinary tokens of the vocabulary (special tokens excluded){capped}. "
                           "`duplicate` is the attention from each token of the second copy to its earlier "
                           "occurrence, `induction` to the token after it.",
    "analysis.dec_capped": "; the length is {length} rather than 50 to fit {max_length} positions",
    "analysis.dec_not_measured": "- `prev_token`, `duplicate`, `induction`: not measured (--induction-seqs 0).",
    "analysis.dec_roles": "\nRoles (settable with `--threshold NAME=VALUE`): {rules}. A head may have several.\n",
    "analysis.dec_found": "**{role} heads ({n}):** {heads}{more}\n",
    "analysis.dec_more": ", … and {more} more (every head's scores are in heads.csv)",
    "analysis.dec_none": "**{role} heads:** none at {stat} ≥ {value:g}; the strongest is {head} ({score}).\n",
    "analysis.dec_per_layer": "Per layer (sink: mean over heads, its strongest head, and heads at or above the "
                              "threshold; the strongest head of each other score):\n",
    "analysis.dec_table_head": "| layer | sink | sink max | sink heads | prev_token max | duplicate max | "
                               "induction max | induction heads |",
    # what `attnscope analyze` prints
    "analysis.out_sink": "attention sink (mean weight on the first token, per layer): {layers}",
    "analysis.out_role": "{role} heads ({stat} ≥ {value:g}): {n}",
    "analysis.out_role_list": ": {heads}",
    "analysis.out_not_measured": "previous-token, duplicate and induction scores: not measured (--induction-seqs 0)",
    "analysis.out_head": "{model}: {texts}, {tokens} from {corpus} in {seconds:.1f} s{processes} ({texts_per_s:,.1f} "
                         "texts/s, {tokens_per_s:,.0f} tokens/s in the statistics pass)",
    "analysis.out_processes": " on {n} processes",
    "analysis.out_truncated": "{texts} truncated ({tokens} cut)",
    "analysis.out_skipped": "{lines} skipped",
    "analysis.out_left_out": "left out: {items} (see report.md)",
    "analysis.out_col_layer": "layer",
    "analysis.out_col_distance": "distance",
    "analysis.out_col_content": "content",
    "analysis.out_col_entropy": "entropy",
    "analysis.out_col_entropy_norm": "ent/ln n",
    "analysis.out_col_local": "local",
    "analysis.out_col_labels": "labels",
    "analysis.out_even": "(attention spread evenly would have distance {distance:.2f} on these texts)",
    "analysis.out_claim": "local in low layers, global in high? {claim} (distance vs layer: Spearman ρ = {rho:+.2f}, "
                          "p = {p:.3g})",
    "analysis.out_wrote": "wrote {n} files to {out}/ (report.md, heads.csv, layers.csv, analysis.json, heatmaps/)",
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
    "analysis.patch_note": "  note: the clean and corrupted prompts give the same {metric} ({clean:.4g}), so the "
                           "normalised score is undefined and the raw metric is shown; choose a corruption that "
                           "changes the answer",
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
    "analysis.unit_text": "个文本",
    "analysis.unit_token": "个词元",
    "analysis.unit_batch": "批",
    "analysis.unit_layer": "层",
    "analysis.unit_head": "个头",
    "analysis.unit_process": "个进程",
    "analysis.unit_line": "行",
    "analysis.unit_empty": "个空文本",
    "analysis.unit_undecodable": "行无法解码",
    "analysis.unit_sequence": "个序列",
    "analysis.sep": "；",
    "analysis.list_sep": "，",
    "analysis.title": "# 注意力头分析：{model}\n",
    "analysis.per_line": "行",
    "analysis.per_paragraph": "段",
    "analysis.per_file": "个文件",
    "analysis.per_builtin": "段（内置语料）",
    "analysis.corpus": "语料 `{corpus}`（每{unit}一个文本）：**{texts}，{tokens}**，分为 {batches}，每批 ≤ {batch_size}；"
                       "{layers} × {heads}；{processes}，{seconds:.1f} 秒。\n",
    "analysis.pass_stats": "统计这一遍：{texts}",
    "analysis.pass_time": "，用时 {seconds:.1f} 秒",
    "analysis.pass_no_importance": "重要性这一遍：未运行（--importance-texts 0）",
    "analysis.pass_importance": "重要性这一遍：{texts}（最前面的那些）× 逐个消融 {heads}",
    "analysis.passes": "所用文本：{stats}；{importance}。",
    "analysis.note_truncated_1": "{texts}长于 {max_length} 个词元，已截断（截去 {tokens}）",
    "analysis.note_truncated_n": "{texts}长于 {max_length} 个词元，已截断（截去 {tokens}）",
    "analysis.note_decode_1": "{lines}不是有效的 UTF-8，已跳过（列在文末）",
    "analysis.note_decode_n": "{lines}不是有效的 UTF-8，已跳过（列在文末）",
    "analysis.note_empty_1": "{texts}已跳过",
    "analysis.note_empty_n": "{texts}已跳过",
    "analysis.nothing_left_out": "没有略去其他内容。",
    "analysis.left_out": "略去：{notes}。",
    "analysis.queries_incl": "，包括 [CLS]/[SEP]",
    "analysis.queries_excl": "，不包括 [CLS]/[SEP]",
    "analysis.queries": "查询是真实的词元{which}；填充从不计入。每个头的值是语料中所有计入的查询的平均值"
                        "（`to_local`：窗口 ±{window}）。熵的单位是奈特，距离的单位是词元。如果一个头把每个查询的"
                        "注意力平均分给它能看到的所有键，它在这个语料上的距离会是 **{baseline}**：读 `distance` "
                        "时以此为标尺。\n",
    "analysis.sec_layers": "## 逐层（各头的平均）\n",
    "analysis.col_layer": "层",
    "analysis.col_head": "头",
    "analysis.col_importance": "重要性",
    "analysis.col_labels": "标签",
    "analysis.col_label": "标签",
    "analysis.sec_trends": "## 低层局部、高层全局？\n",
    "analysis.trends_intro": "每个头的统计量与其层号之间的 Spearman ρ（在所有头上计算；置换检验的 p 值），以及在逐层"
                             "平均值上计算的 ρ：\n",
    "analysis.trends_head": "| 统计量 | 这一说法预测 | ρ（各头） | p | ρ（逐层平均） | p | 解读 |",
    "analysis.rises": "上升",
    "analysis.falls": "下降",
    "analysis.verdict_line": "\n**结论：{claim}。**\n",
    "analysis.verdict_none": "无法计算趋势",
    "analysis.verdict_flat": "随深度没有显著趋势（ρ = {rho:+.2f}，p = {p:.3g}）",
    "analysis.verdict_supports": "支持这一说法",
    "analysis.verdict_contradicts": "与这一说法相反",
    "analysis.verdict_stat": "{stat}：{reading}",
    "analysis.verdict_trend": "{stat} 随深度{direction}（ρ = {rho:+.2f}，p = {p:.3g}）：{reading}",
    "analysis.claim_supported": "得到支持：注意力距离随深度增大，去掉跳向特殊词元的注意力后也是如此",
    "analysis.claim_partly_overall": "部分得到支持：注意力距离随深度增大，但去掉特殊词元（[CLS]/[SEP]）上的注意力后，"
                                     "增大就不再显著",
    "analysis.claim_partly_content": "部分得到支持：内容词元上的注意力距离随深度增大，但总体距离（由特殊词元主导）"
                                     "没有增大",
    "analysis.claim_contradicted": "与之相反：注意力随深度变得更局部",
    "analysis.claim_none": "没有得到支持：注意力距离随深度没有显著趋势",
    "analysis.claim_bottom": "；但不是从最底层开始：最局部的是第 {layer} 层（内容距离 {content:.1f} 个词元，而第 0 层"
                             "为 {content_0:.1f}，其归一化熵为 {entropy_0:.2f}）",
    "analysis.sec_types": "## 头的类型\n",
    "analysis.rule": "{label}：{stat} ≥ {value:g}",
    "analysis.rules": "规则（可用 `--threshold NAME=VALUE` 设置）：{rules}。主导键规则中占比最大的一条胜出，其次是 "
                      "local，再次是 broad；都不满足则为 other。\n",
    "analysis.types_head": "| 标签 | 类别 | 头数 | 哪些头（层.头） |",
    "analysis.family_positional": "位置型",
    "analysis.family_diagonal": "对角型",
    "analysis.family_vertical": "竖线型",
    "analysis.family_block_local": "块状/局部型",
    "analysis.family_broad": "宽泛型",
    "analysis.family_other": "其他",
    "analysis.metric_cosine": "1 − 池化句向量的余弦相似度",
    "analysis.metric_loss": "下一个词元损失的变化（奈特/词元）",
    "analysis.sec_importance": "## 头的重要性\n\n在最前面的 {texts}上逐个消融一个头（z = 0）；度量：{metric}。"
                               "最重要的头：\n",
    "analysis.sec_heatmaps": "## 热图\n",
    "analysis.sec_skipped": "## 跳过的行（不是 UTF-8）\n",
    "analysis.skipped_more": "- ……另有 {n} 行",
    "analysis.decode_line": "{where}：{bytes}（第 {pos} 个字节处）不是有效的 {encoding}",
    "analysis.byte": "字节 {hex}",
    "analysis.bytes": "字节 {hex}",
    "analysis.map_title": "{name}：{doc}",
    "analysis.map_importance": "重要性（{metric}）",
    "analysis.map_labels": "头的标签（{legend}）",
    "analysis.doc_entropy": "注意力熵 -Σ w ln w（一个查询的那一行），单位奈特",
    "analysis.doc_entropy_norm": "熵 / ln(可见键的个数)：1 = 均匀，0 = 只看一个键",
    "analysis.doc_distance": "平均注意力距离 Σ w |i-j|，单位词元",
    "analysis.doc_distance_content": "非特殊键上注意力的平均距离，单位词元",
    "analysis.doc_to_cls": "[CLS]（开头的特殊词元）上的注意力占比",
    "analysis.doc_to_sep": "[SEP]（结尾的特殊词元）上的注意力占比",
    "analysis.doc_to_punct": "标点词元上的注意力占比",
    "analysis.doc_to_self": "查询词元自身上的注意力占比",
    "analysis.doc_to_prev": "前一个词元上的注意力占比",
    "analysis.doc_to_next": "后一个词元上的注意力占比",
    "analysis.doc_argmax_prev": "唯一最受关注的词元是前一个词元的查询所占比例",
    "analysis.doc_argmax_next": "唯一最受关注的词元是后一个词元的查询所占比例",
    "analysis.doc_to_local": "窗口 ±W 个词元以内（含查询自身）的注意力占比",
    "analysis.dec_doc_sink": "注意力汇聚（sink）：第一个词元上的注意力占比（语料，查询 i ≥ 1）",
    "analysis.dec_title_sink": "sink：第一个词元上的权重",
    "analysis.dec_title_prev_token": "prev_token：前一个词元上的权重",
    "analysis.dec_title_duplicate": "duplicate：前面同一个词元上的权重",
    "analysis.dec_title_induction": "induction：它后面那个词元上的权重",
    "analysis.dec_sec": "## 解码器的头\n",
    "analysis.dec_sink": "- `sink`：{doc}。",
    "analysis.dec_no_prefix": "空（分词器不加特殊词元）",
    "analysis.dec_repeat": "- `prev_token`、`duplicate`、`induction`：在 {sequences}上测得，每个序列是 {length} 个互不相同的"
                           "随机词元写两遍（Olsson et al. 2022），前面是{prefix}；用种子 {seed} 从词表的 "
                           "{candidates:,} 个普通词元中抽取（不含特殊词元）{capped}。`duplicate` 是第二遍中每个词元对它"
                           "前一次出现的注意力，`induction` 是对前一次出现之后那个词元的注意力。",
    "analysis.dec_capped": "；长度是 {length} 而不是 50，以便放进 {max_length} 个位置",
    "analysis.dec_not_measured": "- `prev_token`、`duplicate`、`induction`：未测量（--induction-seqs 0）。",
    "analysis.dec_roles": "\n角色（可用 `--threshold NAME=VALUE` 设置）：{rules}。一个头可以有多个角色。\n",
    "analysis.dec_found": "**{role} 头（{n} 个）：** {heads}{more}\n",
    "analysis.dec_more": "，……另有 {more} 个（每个头的分数都在 heads.csv 里）",
    "analysis.dec_none": "**{role} 头：** 在 {stat} ≥ {value:g} 下没有；最强的是 {head}（{score}）。\n",
    "analysis.dec_per_layer": "逐层（sink：各头的平均、最强的头、达到或超过阈值的头数；其他分数：最强的头）：\n",
    "analysis.dec_table_head": "| 层 | sink | sink 最大 | sink 头数 | prev_token 最大 | duplicate 最大 | "
                               "induction 最大 | induction 头数 |",
    "analysis.out_sink": "注意力汇聚（sink，逐层：第一个词元上的平均权重）：{layers}",
    "analysis.out_role": "{role} 头（{stat} ≥ {value:g}）：{n} 个",
    "analysis.out_role_list": "：{heads}",
    "analysis.out_not_measured": "previous-token、duplicate 和 induction 的分数：未测量（--induction-seqs 0）",
    "analysis.out_head": "{model}：{texts}，{tokens}，来自 {corpus}，用时 {seconds:.1f} 秒{processes}（统计这一遍每秒 "
                         "{texts_per_s:,.1f} 个文本、{tokens_per_s:,.0f} 个词元）",
    "analysis.out_processes": "，{n} 个进程",
    "analysis.out_truncated": "{texts}被截断（截去 {tokens}）",
    "analysis.out_skipped": "{lines}，已跳过",
    "analysis.out_left_out": "略去：{items}（见 report.md）",
    "analysis.out_col_layer": "层",
    "analysis.out_col_distance": "距离",
    "analysis.out_col_content": "内容距离",
    "analysis.out_col_entropy": "熵",
    "analysis.out_col_entropy_norm": "熵/ln n",
    "analysis.out_col_local": "局部",
    "analysis.out_col_labels": "标签",
    "analysis.out_even": "（注意力若平均分配，在这些文本上的距离会是 {distance:.2f}）",
    "analysis.out_claim": "低层局部、高层全局？{claim}（distance 对层号：Spearman ρ = {rho:+.2f}，p = {p:.3g}）",
    "analysis.out_wrote": "已把 {n} 个文件写入 {out}/（report.md、heads.csv、layers.csv、analysis.json、heatmaps/）",
    "analysis.s2s_title": "# {model} 在 {corpus} 上的注意力",
    "analysis.s2s_intro": "{pairs} 个（源，目标）文本对：{source} 个源词元，{target} 个目标词元（含解码器的起始词元），"
                          "{batches} 批，{seconds:.1f} 秒。三种注意力，每一层每个头都测：编码器在源文本上的自注意力，"
                          "解码器在目标文本上的因果自注意力，以及每个目标词元对源文本的交叉注意力。（头的标签和逐个消融"
                          "得到的重要性只对单文本模型测量。）",
    "analysis.s2s_stack_encoder": "编码器自注意力",
    "analysis.s2s_stack_self": "解码器自注意力（因果）",
    "analysis.s2s_stack_cross": "交叉注意力（目标 → 源）",
    "analysis.s2s_means": "每一层各头的平均：",
    "analysis.s2s_doc": "- `{stat}`：{doc}",
    "analysis.s2s_sec_alignment": "## 对齐",
    "analysis.s2s_alignment": "一个文本对有 T 个目标词元和 S 个源词元，它的目标词元 t 与相对位置相同的源词元比较："
                              "a(t) = round(t·(S − 1)/(T − 1))。单调地对齐两段文本的头，把最大的权重放在 a(t) 的 "
                              "±{window} 以内（`argmax_diagonal` 接近 1），随目标向前移动（`monotonic` 接近 1），"
                              "并贴近对角线（`diagonal_offset` 接近 0）；平均分配注意力的头 `entropy_norm` 接近 1。"
                              "最常落在 a(t) 的交叉注意力头：",
    "analysis.s2s_end": "每个注意力每个头的数都在 heads.csv 里；逐层平均在 layers.csv 里。",
    "analysis.s2s_out_head": "{model}：{pairs} 个文本对（{source} 个源词元、{target} 个目标词元），来自 {corpus}，"
                             "用时 {seconds:.1f} 秒",
    "analysis.s2s_out_stack": "{stack}：",
    "analysis.s2s_out_best": "最贴近对角线的交叉注意力头：{heads}",
    "analysis.s2s_out_best_head": "{head}（最受关注的源词元在 a(t) ±{window} 以内的比例：{value:.2f}）",
    "analysis.cross_doc_entropy": "熵 -Σ w ln w（一个目标词元在源文本上的那一行），单位奈特",
    "analysis.cross_doc_entropy_norm": "熵 / ln(源文本长度)：1 = 平均分配，0 = 只看一个源词元",
    "analysis.cross_doc_to_diagonal": "相对位置相同的源词元上的权重，a(t) = round(t·(S−1)/(T−1))",
    "analysis.cross_doc_diagonal_band": "a(t) 前后 ±W 个源词元以内的权重（W 即窗口）",
    "analysis.cross_doc_argmax_diagonal": "最受关注的源词元在 a(t) ±W 以内的目标词元所占比例",
    "analysis.cross_doc_diagonal_offset": "按权重平均的 |j/(S−1) − t/(T−1)|：离对角线的距离，以比例计",
    "analysis.cross_doc_to_source_end": "源文本最后一个词元（</s>）上的权重",
    "analysis.cross_doc_monotonic": "最受关注的源位置不在前一个目标词元的之前的目标词元所占比例",
    "analysis.patch_head": "{model}：每个提示 {n} 个词元；度量为最后一个位置的 {metric}",
    "analysis.patch_differ_1": "  两个提示在位置 {where} 不同",
    "analysis.patch_differ_n": "  两个提示在位置 {where} 不同",
    "analysis.patch_same": "  两个提示的词元完全相同",
    "analysis.patch_clean": "  干净提示 {clean:+.4f}，损坏提示 {corrupted:+.4f}",
    "analysis.patch_evals": "  {n} 次层计算（提示副本 × 层），是每层全部重跑（{full}）的 {share:.0%}",
    "analysis.patch_note": "  注意：干净提示和损坏提示的 {metric} 相同（{clean:.4g}），归一化分数没有定义，所以显示原始"
                           "度量；请换一个会改变答案的损坏提示",
    "analysis.patch_heads": "头（层.头）",
    "analysis.patch_positions": "{site} 处的位置（层@位置）",
    "analysis.patch_normalised": "归一化",
    "analysis.patch_raw": "原始度量",
    "analysis.patch_strongest": "最强的{what}，{scale}：",
    "analysis.wrote": "已写入 {path}",
    "analysis.gen_partial": "（生成停在一个字符中间：这个字符的前几个字节没有显示）",
    "analysis.gen_wrote": "已写入 {path}（{kb:.0f} KB）；请在浏览器中打开",
}
