"""The encoder–decoder viewer's words (T5, BART: viewer_seq2seq.js, viewer_seq2seq_views.js), in
English and Chinese. Part of the ``viewer`` table (:mod:`attnscope.i18n.strings_viewer` merges it).
"""

EN = {
    "viewer.s2s_att_note": "{title}: {what}.{bias}",
    "viewer.s2s_encoder": "Encoder",
    "viewer.s2s_decoder": "Decoder",
    "viewer.s2s_cross": "Cross",
    "viewer.s2s_what_encoder": "encoder self-attention: source tokens attend to source tokens",
    "viewer.s2s_what_self": "decoder self-attention (causal): each target token attends to itself and the target "
                            "tokens before it",
    "viewer.s2s_what_cross": "cross-attention: target tokens (queries, from the decoder) attend to source tokens (keys "
                             "and values, from the encoder's output)",
    "viewer.s2s_title": "{model} · encoder {enc} layers, decoder {dec} layers × {heads} heads",
    "viewer.s2s_pair": "pair ",
    "viewer.s2s_intro": "An encoder–decoder model reads a source text with its encoder and writes a target text with "
                        "its decoder. Type both to see the encoder's self-attention, the decoder's causal "
                        "self-attention and the cross-attention from every target token to the source, with every "
                        "number of one row in the step view.",
    "viewer.s2s_source": "source: what the encoder reads",
    "viewer.s2s_target": "target: what the decoder writes",
    "viewer.s2s_source_ph": "translate English to German: The house is wonderful.",
    "viewer.s2s_target_ph": "Das Haus ist wunderbar.",
    "viewer.s2s_head_tip": "head {head} (click: toggle, double-click: only this head)",
    "viewer.s2s_bias_t5": " Scores are q·k plus T5's learned relative position bias ({buckets} buckets up to distance "
                          "{distance}, {direction}, shared by every layer of the stack), not divided by √d_k.",
    "viewer.s2s_bidirectional": "bidirectional",
    "viewer.s2s_causal": "causal",
    "viewer.s2s_unscaled": " Scores are q·k, not divided by √d_k (cross-attention has no position bias).",
    "viewer.s2s_scaled": " Scores are q·k ÷ √{d}.",
    "viewer.s2s_src_q": "source (queries)",
    "viewer.s2s_src_k": "source (keys)",
    "viewer.s2s_tgt_q": "target (queries)",
    "viewer.s2s_tgt_k": "target (keys)",
    "viewer.s2s_src_kv": "source (keys, values)",
    "viewer.s2s_head_note": "Left: {left}; right: {right}. Line opacity = attention weight{below}. Hover a query for "
                            "its row; click to select it, double-click for its step-by-step calculation.",
    "viewer.s2s_tip_query": "query {i}: {token}  ({attention} layer {layer})",
    "viewer.s2s_piece": "piece {piece}",
    "viewer.s2s_paint_head": "{model} · {attention} attention · layer {layer} · {heads}",
    "viewer.s2s_model_note": "Every layer × head of the {attention} attention: rows = {rows}, columns = {cols} (colours "
                             "scaled to each head's largest weight). Click one to open it in the head view.",
    "viewer.s2s_paint_model": "{model} · {attention} attention · every layer × head",
    "viewer.s2s_delta": "δ = j − i",
    "viewer.s2s_bucket": "bucket",
    "viewer.s2s_bias": "bias b",
    "viewer.s2s_raw": "raw q·k",
    "viewer.s2s_scaled_bias": "scaled s = q·k + b",
    "viewer.s2s_scaled_one": "scaled s = q·k × 1",
    "viewer.s2s_scaled_root": "scaled s = q·k ÷ √{d}",
    "viewer.s2s_pick": "Pick a query token ({side}), or double-click one in the head view.",
    "viewer.s2s_where_cross": "q from the decoder's state of target token {q} “{token}”, k and v from the encoder's "
                              "output of every source token",
    "viewer.s2s_where_self": "q, k and v from the decoder's states of the target tokens; keys after the query are "
                             "hidden (causal)",
    "viewer.s2s_where_encoder": "q, k and v from the encoder's states of the source tokens",
    "viewer.s2s_step_caption": "{attention} attention, layer {layer}, head {head}, query {q} “{token}”: {where}; d_k = "
                               "{d}.",
    "viewer.s2s_step_bias": " b is head {head}'s learned bias for the bucket of the distance δ = j − i (T5 does not "
                            "divide by √d_k).",
    "viewer.s2s_step_shift": " The largest score exceeds {limit}, so it is subtracted before exp (the weights are "
                             "unchanged).",
    "viewer.s2s_step_hover": " Hover a number for its exact value.",
    "viewer.s2s_sum": "weighted sum z = Σ_j weight_j · v_j ({n} numbers, head {head}'s slice of the new vector of "
                      "“{token}”{source}):",
    "viewer.s2s_sum_source": "; the v_j are the source's values",
    "viewer.s2s_paint_step": "{model} · {attention} · layer {layer} · head {head} · query {q} “{token}”",
}

ZH = {
    "viewer.s2s_att_note": "{title}：{what}。{bias}",
    "viewer.s2s_encoder": "编码器",
    "viewer.s2s_decoder": "解码器",
    "viewer.s2s_cross": "交叉",
    "viewer.s2s_what_encoder": "编码器自注意力：源文本的 token 关注源文本的 token",
    "viewer.s2s_what_self": "解码器自注意力（因果）：每个目标 token 关注它自己和它之前的目标 token",
    "viewer.s2s_what_cross": "交叉注意力：目标 token（查询，来自解码器）关注源文本的 token（键和值，来自编码器的输出）",
    "viewer.s2s_title": "{model} · 编码器 {enc} 层，解码器 {dec} 层 × {heads} 个头",
    "viewer.s2s_pair": "文本对 ",
    "viewer.s2s_intro": "编码器–解码器模型用编码器读源文本，用解码器写目标文本。把两段都输入，就能看到编码器的自注意力、"
                        "解码器的因果自注意力，以及每个目标 token 对源文本的交叉注意力；分步视图给出一行里的每个数。",
    "viewer.s2s_source": "源文本：编码器读的内容",
    "viewer.s2s_target": "目标文本：解码器写的内容",
    "viewer.s2s_source_ph": "translate English to German: The house is wonderful.",
    "viewer.s2s_target_ph": "Das Haus ist wunderbar.",
    "viewer.s2s_head_tip": "头 {head}（单击：显示或隐藏；双击：只看这个头）",
    "viewer.s2s_bias_t5": "分数是 q·k 加上 T5 学到的相对位置偏置（{buckets} 个桶，最远距离 {distance}，{direction}，"
                          "同一栈的每一层共用），不除以 √d_k。",
    "viewer.s2s_bidirectional": "双向",
    "viewer.s2s_causal": "因果",
    "viewer.s2s_unscaled": "分数是 q·k，不除以 √d_k（交叉注意力没有位置偏置）。",
    "viewer.s2s_scaled": "分数是 q·k ÷ √{d}。",
    "viewer.s2s_src_q": "源文本（查询）",
    "viewer.s2s_src_k": "源文本（键）",
    "viewer.s2s_tgt_q": "目标文本（查询）",
    "viewer.s2s_tgt_k": "目标文本（键）",
    "viewer.s2s_src_kv": "源文本（键、值）",
    "viewer.s2s_head_note": "左边：{left}；右边：{right}。线的不透明度 = 注意力权重{below}。"
                            "悬停在查询上看它的一行；单击选中，双击看它的逐步计算。",
    "viewer.s2s_tip_query": "查询 {i}：{token}（{attention}第 {layer} 层）",
    "viewer.s2s_piece": "片段 {piece}",
    "viewer.s2s_paint_head": "{model} · {attention}注意力 · 第 {layer} 层 · {heads}",
    "viewer.s2s_model_note": "{attention}注意力的每一层 × 每个头：行 = {rows}，列 = {cols}（颜色按各个头自己的最大权重缩放）。"
                             "单击一个，在注意力头视图中打开它。",
    "viewer.s2s_paint_model": "{model} · {attention}注意力 · 每一层 × 每个头",
    "viewer.s2s_delta": "δ = j − i",
    "viewer.s2s_bucket": "桶",
    "viewer.s2s_bias": "偏置 b",
    "viewer.s2s_raw": "原始分数 q·k",
    "viewer.s2s_scaled_bias": "缩放后 s = q·k + b",
    "viewer.s2s_scaled_one": "缩放后 s = q·k × 1",
    "viewer.s2s_scaled_root": "缩放后 s = q·k ÷ √{d}",
    "viewer.s2s_pick": "选一个查询 token（{side}），或在注意力头视图中双击一个。",
    "viewer.s2s_where_cross": "q 来自解码器对目标 token {q}“{token}”的状态，k 和 v 来自编码器对每个源文本 token 的输出",
    "viewer.s2s_where_self": "q、k、v 来自解码器对目标 token 的状态；查询之后的键被遮住（因果）",
    "viewer.s2s_where_encoder": "q、k、v 来自编码器对源文本 token 的状态",
    "viewer.s2s_step_caption": "{attention}注意力，第 {layer} 层，头 {head}，查询 {q}“{token}”：{where}；d_k = {d}。",
    "viewer.s2s_step_bias": " b 是头 {head} 为距离 δ = j − i 所在的桶学到的偏置（T5 不除以 √d_k）。",
    "viewer.s2s_step_shift": "最大的分数超过 {limit}，所以先减去它再取 exp（权重不变）。",
    "viewer.s2s_step_hover": "鼠标悬停在数字上看它的精确值。",
    "viewer.s2s_sum": "加权和 z = Σ_j weight_j · v_j（{n} 个数，头 {head} 在“{token}”的新向量中的那一段{source}）：",
    "viewer.s2s_sum_source": "；v_j 是源文本的值",
    "viewer.s2s_paint_step": "{model} · {attention} · 第 {layer} 层 · 头 {head} · 查询 {q}“{token}”",
}
