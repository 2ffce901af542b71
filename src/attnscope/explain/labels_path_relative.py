"""The labels of the whole path through DeBERTa and the encoder–decoder families
(:mod:`.path_relative`), in English and Chinese, merged into :data:`.i18n.LABELS` (the same key and
placeholder rules as :mod:`.labels_en`)."""

EN = {
    "path.position_row_bart": "Position row: row {p} of the learned position table ({P} rows): BART reads position "
                              "{j} at row {j} + 2 (fairseq's numbering left the first two rows unused).",
    "path.embed_scale_bart": "This checkpoint scales the token row by $\\sqrt{d}$ = √{d} = {s} before adding the "
                             "position row (scale_embedding).",
    "path.step_q_cross": "the cross-attention query of head {h}: $q = x W_Q + b$",
    "path.step_resid1_cross": "the residual connection after cross-attention",
    "path.step_cross_in_ln": "the LayerNorm before cross-attention",
    "path.step_cross_in_rms": "the RMSNorm before cross-attention",
    "path.cross_in_pre": "Pre-norm: cross-attention reads the normalised sum; the residual stream keeps the sum.",
    "path.cross_in_post": "Post-norm: the sum is normalised; cross-attention reads it and its residual starts from it.",
    "path.step_source_tokens": "the source, read by the encoder",
    "path.source_tokens": "The encoder reads the source ({S} tokens: {tokens}) through all its layers; its output "
                          "gives the cross-attention's keys and values.",
    "path.step_source": "the encoder's output: the keys and values of cross-attention",
    "path.source_why": "Cross-attention's keys and values come from the encoder's output ({name}, {S} source tokens, "
                       "recomputed in float64 like everything here), its query from {tok}: each target token looks "
                       "at every source token, none is masked.",
    "path.step_relative": "the relative positions: the shared table and this head's projections",
    "path.relative_why": "DeBERTa keeps one table of {rows} relative-position rows of width {d}, shared by every "
                         "layer (r = i − j from −{k} to {k} − 1 after the log buckets; row r + {k}); {shared} Shown: "
                         "row {idx}, the one for r = 0 (the token itself).",
    "path.rel_row": "row {idx} of the relative table",
    "path.pos_k_why": "c2p reads the keys of the relative rows: pos_k = rel · W_K′ of head {h} (row {idx}):",
    "path.pos_q_why": "p2c reads their queries: pos_q = rel · W_Q′ of head {h} (row {idx}):",
    "path.step_row_result_cross": "the cross-attention row of head {h}: where the token looks in the source",
    "path.title_encoder": "The whole path of source token {tok} through encoder layer {layer} (head {head} worked out)",
    "path.title_decoder": "The whole path of target token {tok} through decoder layer {layer} (head {head} worked out)",
    "path.intro_encoder": "Model {model} ({family}). The source token {tok} of a source of {L} tokens goes from its "
                          "vocabulary id through {route} of the encoder to the output of encoder layer {layer}; head "
                          "{head} is worked out in full. Every number is recomputed in float64 from the model's "
                          "weights (every earlier layer too), so the digits are the formula's.",
    "path.intro_decoder": "Model {model} ({family}). The target token {tok} (of {L} decoder tokens: the start token, "
                          "then the target) goes from its vocabulary id through {route} of the decoder to the output "
                          "of decoder layer {layer}: causal self-attention over the target, cross-attention over the "
                          "encoder's output, the feed-forward; head {head} of both attentions is worked out in full. "
                          "Every number is recomputed in float64 from the model's weights (the whole encoder and every "
                          "earlier decoder layer too), so the digits are the formula's.",
    "path.what.attn.scores_c2c": "c2c term of the row",
    "path.what.attn.scores_c2p": "c2p term of the row",
    "path.what.attn.scores_p2c": "p2c term of the row",
    "path.what.attn.bias": "position bias of the row",
    "path.what.attn.pos_k": "relative keys of the head",
    "path.what.attn.pos_q": "relative queries of the head",
    "path.what.encoder.final_norm": "the encoder's output",
    "path.what.source": "the encoder's output",
}

ZH = {
    "path.position_row_bart": "位置向量：可学习的位置表（{P} 行）的第 {p} 行：BART 把位置 {j} 读在第 {j} + 2 行"
                              "（fairseq 的编号留下了前两行不用）。",
    "path.embed_scale_bart": "这个检查点先把词向量乘以 $\\sqrt{d}$ = √{d} = {s}，再加位置向量（scale_embedding）。",
    "path.step_q_cross": "第 {h} 个头的交叉注意力查询：$q = x W_Q + b$",
    "path.step_resid1_cross": "交叉注意力之后的残差连接",
    "path.step_cross_in_ln": "交叉注意力之前的 LayerNorm",
    "path.step_cross_in_rms": "交叉注意力之前的 RMSNorm",
    "path.cross_in_pre": "Pre-norm：交叉注意力读归一化后的和；残差流保留这个和。",
    "path.cross_in_post": "Post-norm：和被归一化；交叉注意力读它，它的残差也从它开始。",
    "path.step_source_tokens": "源文本，由编码器读入",
    "path.source_tokens": "编码器用它的所有层读源文本（{S} 个 token：{tokens}）；它的输出给出交叉注意力的键和值。",
    "path.step_source": "编码器的输出：交叉注意力的键和值",
    "path.source_why": "交叉注意力的键和值来自编码器的输出（{name}，{S} 个源 token，和这里的一切一样用 float64 重新计算），"
                       "查询来自 {tok}：每个目标 token 看每个源 token，没有遮挡。",
    "path.step_relative": "相对位置：共享的表和这个头的投影",
    "path.relative_why": "DeBERTa 有一张 {rows} 行、宽 {d} 的相对位置表，所有层共享（经过对数分桶后 r = i − j 从 −{k} 到 "
                         "{k} − 1，读第 r + {k} 行）；{shared}这里显示第 {idx} 行，即 r = 0（token 自己）的那一行。",
    "path.rel_row": "相对位置表的第 {idx} 行",
    "path.pos_k_why": "c2p 读相对位置行的键：第 {h} 个头的 pos_k = rel · W_K′（第 {idx} 行）：",
    "path.pos_q_why": "p2c 读它们的查询：第 {h} 个头的 pos_q = rel · W_Q′（第 {idx} 行）：",
    "path.step_row_result_cross": "第 {h} 个头的交叉注意力行：token 在源文本中看向哪里",
    "path.title_encoder": "源 token {tok} 穿过编码器第 {layer} 层的完整路径（详细计算第 {head} 个头）",
    "path.title_decoder": "目标 token {tok} 穿过解码器第 {layer} 层的完整路径（详细计算第 {head} 个头）",
    "path.intro_encoder": "模型 {model}（{family}）。{L} 个 token 的源文本中的 {tok} 从它的词表 id 出发，经过编码器的{route}，"
                          "到编码器第 {layer} 层的输出；第 {head} 个头完整算出。每个数都用 float64 从模型权重重新计算"
                          "（之前的每一层也是），所以每一位都是公式的结果。",
    "path.intro_decoder": "模型 {model}（{family}）。目标 token {tok}（共 {L} 个解码器 token：起始 token，然后是目标文本）"
                          "从它的词表 id 出发，经过解码器的{route}，到解码器第 {layer} 层的输出：对目标文本的因果自注意力、"
                          "对编码器输出的交叉注意力、前馈网络；两个注意力的第 {head} 个头都完整算出。每个数都用 float64 "
                          "从模型权重重新计算（整个编码器和之前的每一个解码器层也是），所以每一位都是公式的结果。",
    "path.what.attn.scores_c2c": "这一行的 c2c 项",
    "path.what.attn.scores_c2p": "这一行的 c2p 项",
    "path.what.attn.scores_p2c": "这一行的 p2c 项",
    "path.what.attn.bias": "这一行的位置偏置",
    "path.what.attn.pos_k": "这个头的相对位置键",
    "path.what.attn.pos_q": "这个头的相对位置查询",
    "path.what.encoder.final_norm": "编码器的输出",
    "path.what.source": "编码器的输出",
}
