"""The labels of one token's whole path (:mod:`.path`) and of real rows recomputed from the
weights (:mod:`.row`), in English and Chinese, merged into :data:`.i18n.LABELS` (the same key and
placeholder rules as :mod:`.labels_en`)."""

EN = {
    # a real row from the weights
    "row.intro_model_weights": "Model {model}, layer {layer}, head {head}; the text has {L} tokens: {tokens}. "
                               "The query is {tok}; each head works with $d_k = {dk}$ dimensions. Every number is "
                               "recomputed here in float64 from the model's weights (the embeddings and every "
                               "earlier layer too), so the digits are the formula's; the model's own float32 "
                               "numbers are compared at the end.",
    "row.intro_decoder_weights": "Model {model}, layer {layer}, query head {head} of {H}; the text has {L} tokens: "
                                 "{tokens}. The query is {tok}; each head works with $d_k = {dk}$ dimensions. Every "
                                 "number is recomputed here in float64 from the model's weights (the embeddings and "
                                 "every earlier layer too), so the digits are the formula's; the model's own float32 "
                                 "numbers are compared at the end.",
    "row.trace_check_weights": "Compared with the model's own float32 numbers (its trace): largest difference "
                               "{dq} in q, {dk} in the keys, {dv} in the values, {ds} in the raw scores, {dw} in the "
                               "probabilities, {dz} in the output vector: float32 rounding through the layers below, "
                               "not a mistake.",
    "rms.why_all": "QK-norm over all heads: each token's $q$ — all heads side by side, {d} features (its $k$: {dk}) — "
                   "is divided by its root mean square over those features and multiplied by the learned scale $w$, "
                   "then cut into heads; the table shows head {h}'s part ({dh} features).",
    "rms.caption_all": "first {n} of the {dh} features of head {h} in $\\hat{x}$",
    "rms.weight_all": "This head's part of the learned scale $w$ of {x}: features {first}–{last} of its {d} (the first "
                      "{n} shown): {w}.",
    # the whole path
    "path.title": "The whole path of {tok} through layer {layer} (head {head} worked out)",
    "path.intro": "Model {model} ({family}). The token {tok} of a text of {L} tokens goes from its vocabulary id "
                  "through {route} to the output of layer {layer}; head {head} of layer "
                  "{layer} is worked out in full. Every number is recomputed in float64 from the model's weights "
                  "(every earlier layer too), so the digits are the formula's.",
    "path.intro_trace": "Each step names its trace name: what model.trace(text, names=…) records and the viewer "
                        "shows. The last step sets the model's own float32 numbers beside each one.",
    "path.route0": "the embeddings",
    "path.route1": "the embeddings and layer 0",
    "path.route": "the embeddings and layers 0 … {last}",
    "path.trace": "Trace name: {names}.",
    "path.first_features": "the first {n} of {d} features (counted from 0)",
    "col.feature": "feature",
    "col.head": "head",
    "col.merged_features": "features of merged",
    "path.step_tokens": "tokenization: pieces and vocabulary ids",
    "path.tokens_why": "The tokenizer cuts the text into {L} pieces and looks each one up in the vocabulary of {V}: "
                       "the id is the row of the embedding table. {tok} has id {id}.",
    "path.byte_level": "Byte-level BPE: each piece spells bytes (Ġ is a space, Ċ a line break); the column "
                       "'reads' shows the characters they form. A character cut into several pieces (a Chinese "
                       "character is 3 bytes) is shown on the piece that completes it; the pieces before end with ….",
    "path.metaspace": "SentencePiece: ▁ marks where a word begins, the space before it; the column 'reads' shows "
                      "each piece with that space.",
    "path.col_piece": "piece",
    "path.col_reads": "reads",
    "path.col_id": "id",
    "path.col_segment": "segment",
    "path.step_embed": "the embedding rows and their sum",
    "path.step_embed_row": "the token's embedding row",
    "path.step_embed_row_scaled": "the token's embedding row × √d",
    "path.token_row": "Token row: row {id} of the token embedding table ({V} × {E}), for {tok}.",
    "path.segment_row": "Segment row: row {s} of the segment table ({n} rows; a single text is segment 0).",
    "path.position_row": "Position row: row {p} of the learned position table ({P} rows).",
    "path.position_row_offset": "Position row: row {p} of the learned position table ({P} rows): this family "
                                "numbers positions after the padding index, so position {j} reads row {p}.",
    "path.position_sinusoid": "Position row: the sinusoids of position {p}, computed in the next step (fixed, "
                              "not learned).",
    "path.position_rotary": "No position row: this model's positions are rotary, they turn q and k inside "
                            "attention (below).",
    "path.embed_scale": "Gemma multiplies the token row by $\\sqrt{d}$ = √{d}, stored in float32 as {s}.",
    "path.sum_row": "sum x",
    "path.step_sinusoid": "sinusoidal positions, each sinusoid computed",
    "path.sinusoid_why": "Feature $2i$ of position {p} is $\\sin(p / 10000^{2i/d})$ and feature $2i+1$ its cosine, "
                         "with $d$ = {d}: fast waves in the first features, slow ones in the last.",
    "path.col_fn": "function",
    "path.step_embed_norm": "LayerNorm of the embedding sum",
    "path.step_embed_norm_row": "LayerNorm of the token row",
    "path.step_embed_norm_projected": "LayerNorm of the projected row",
    "path.embed_norm_why_row": "The vector is normalised over its features: subtract the mean, divide by the standard "
                               "deviation, then scale by γ and shift by β (both learned).",
    "path.embed_norm_why": "The sum is normalised over its features: subtract the mean, divide by the standard "
                           "deviation, then scale by γ and shift by β (both learned).",
    "path.ln_stats": "Over the {d} features: mean $\\mu$ = {mu}, variance $\\sigma^2$ = {var}, "
                     "$\\varepsilon$ = {eps}, $\\sqrt{\\sigma^2 + \\varepsilon}$ = {root}.",
    "path.rms_stats": "Over the {d} features: mean of the squares {ms}, $\\varepsilon$ = {eps}, RMS = {rms}. Unlike "
                      "LayerNorm, RMSNorm does not subtract the mean and has no shift.",
    "path.rms_stats_gemma": "Over the {d} features: mean of the squares {ms}, $\\varepsilon$ = {eps}, RMS = {rms}. "
                            "Gemma stores the scale as $w$ around 0 and multiplies by $1 + w$.",
    "path.step_projected": "projection of the embeddings to the model width",
    "path.projected_why": "The embeddings are {E} wide; one linear map takes them to the model's width {d}.",
    "path.step_earlier": "layers {layers} below",
    "path.earlier_why": "Layers {layers} do all the steps below to every token (recomputed the same way, in "
                        "float64); the vector of {tok} that leaves layer {last} is the input $x$ of layer {i}.",
    "path.step_attn_in_ln": "LayerNorm before attention",
    "path.step_attn_in_rms": "RMSNorm before attention",
    "path.step_attn_in_post": "attention's input",
    "path.attn_in_pre": "This model normalises before attention (pre-norm): attention reads the normalised vector, "
                        "the residual stream keeps $x$ itself.",
    "path.attn_in_post": "This model normalises after attention (post-norm, as BERT): attention reads $x$ itself.",
    "path.step_q": "the query of head {h}: $q = x W_Q + b$",
    "path.step_q_proj": "the query of head {h}: $q = x W_Q$ (before the rotation)",
    "path.q_why": "Head {h} has its own $W_Q^{(h)}$ ({d} × {dh}): columns {first} … {last} of the fused projection "
                  "$W_{QKV}$ ({rows} outputs), not a slice of $x$. Each feature $c$ of $q$ is the dot product of "
                  "the {d} features of $x$ with column $c$, plus the bias.",
    "path.col_other": "the other {n} products",
    "path.col_result": "result",
    "path.product": "{a}·{b}",
    "path.proj_caption": "the first {n} of {m} outputs; each adds {d} products",
    "path.proj_caption_all": "each output adds {d} products",
    "path.q_rest": "The other features are computed the same way; $q$ starts {q} ({dh} features).",
    "path.kv_why": "The keys and values of every token come the same way from that token's own input: $W_K$ and "
                   "$W_V$ of k/v head {g} (outputs {k0} … and {v0} … of the fused projection, {dh} each).",
    "path.k_caption": "K: one row per token (first {n} of {d} features)",
    "path.v_caption": "V: one row per token (first {n} of {d} features)",
    "path.step_row_result": "the row of head {h}: where the token looks",
    "path.step_concat": "the heads side by side",
    "path.concat_why": "All {H} heads run the same steps with their own $W_Q$, $W_K$, $W_V$; their outputs for {tok} "
                       "({dh} features each) are laid side by side into one vector of {d}: re-indexing "
                       "(view/transpose), no arithmetic.",
    "path.concat_caption": "each head's z, first {n} of {dh} features",
    "path.step_wo": "mixing the heads: $W_O$",
    "path.wo_why": "The output matrix $W_O$ ({d} × {d}) mixes the heads: feature $c$ of the output adds, for every "
                   "head, its {dh} features of z times that head's block of rows of $W_O$. The table shows each "
                   "head's share.",
    "path.head_share": "head {h}",
    "path.head_share_this": "head {h} (above)",
    "path.step_post_norm": "the norm after attention",
    "path.post_norm_why": "This layer normalises what attention adds before adding it to the residual stream.",
    "path.step_post_norm_ffn": "the norm after the feed-forward",
    "path.post_norm_why_ffn": "This layer normalises what the feed-forward adds before adding it to the residual "
                              "stream.",
    "path.step_post_norm.sandwich": "Gemma's RMSNorm after attention",
    "path.post_norm_why.sandwich": "Gemma normalises what attention adds before adding it to the residual stream.",
    "path.step_post_norm_ffn.sandwich": "Gemma's RMSNorm after the feed-forward",
    "path.post_norm_why_ffn.sandwich": "Gemma normalises what the feed-forward adds before adding it to the residual "
                                       "stream.",
    "path.step_resid1": "the residual connection",
    "path.resid_why": "What attention computed for {tok} is added to the vector it started from: the residual stream "
                      "keeps the token's own information and adds its context.",
    "path.x_in": "x (the input)",
    "path.step_ffn_in_ln": "the second LayerNorm",
    "path.step_ffn_in_rms": "the second RMSNorm",
    "path.ffn_in_post": "Post-norm: the sum is normalised (BERT's attention-output LayerNorm); the feed-forward reads "
                        "it and its residual starts from it.",
    "path.ffn_in_pre": "Pre-norm: the feed-forward reads the normalised vector; the residual stream keeps the sum.",
    "path.step_ffn": "the feed-forward: $W_1$ and the activation",
    "path.ffn_why": "The feed-forward widens each token on its own to {dff} features with $W_1$ ({d} × {dff}) and "
                    "a bias, applies the activation {act} feature by feature, and narrows back with $W_2$.",
    "path.ffn_positive": "{k} of the {dff} features of $a$ are positive.",
    "path.step_ffn_gated": "the gated feed-forward: gate, up and the activation",
    "path.gated_why": "A gated MLP: two projections to {dff} features, the gate through the activation {act}, "
                      "multiplied feature by feature with the other (up), then $W_{down}$ back to the model width.",
    "path.gate_proj": "The gate $x W_{gate}$:",
    "path.up_proj": "The up projection $x W_{up}$:",
    "path.step_ffn_out": "the feed-forward's output: $W_2$",
    "path.step_resid2": "the second residual connection",
    "path.resid2_post": "The feed-forward's output is added to its input ({base}).",
    "path.resid2_pre": "The feed-forward's output is added to the residual stream ({base}).",
    "path.step_out_ln": "the last LayerNorm: the layer's output",
    "path.out_post": "Post-norm: the sum is normalised once more; that is the layer's output, the next layer's input.",
    "path.step_out": "the layer's output",
    "path.out_pre.post_block": "No norm after the sum: the residual stream {s} is the layer's output, the next "
                               "layer's input.",
    "path.step_out_rms": "the last RMSNorm: the layer's output",
    "path.step_norm_ln": "the LayerNorm {module}",
    "path.step_norm_rms": "the RMSNorm {module}",
    "path.norm_why": "The layer's step {name} normalises {s} with its norm {module}.",
    "path.step_ffn_in_same": "the feed-forward's input",
    "path.ffn_in_same": "No norm before the feed-forward: it reads {s} itself.",
    "path.step_same": "{name}",
    "path.same_why": "{name} is {s}: the same vector under a second name.",
    "path.attn_in_post.post_block": "This layer has no norm before attention: attention reads $x$ itself; the norm "
                                    "comes after it, on what it adds.",
    "path.post_norm_why.post_block": "This layer normalises what attention adds before adding it to the residual "
                                     "stream (and has no norm before attention).",
    "path.post_norm_why_ffn.post_block": "This layer normalises what the feed-forward adds before adding it to the "
                                         "residual stream (and has no norm before the feed-forward).",
    "path.what.step": "{name}",
    "path.out_pre": "Pre-norm: the residual stream {s} is the layer's output, the next layer's input.",
    "path.step_summary": "every step beside the model's own float32 numbers",
    "path.col_trace": "trace name",
    "path.col_what": "what",
    "path.col_diff": "largest |float32 − float64|",
    "path.summary_diff": "The model's float32 forward pass differs from these float64 numbers by at most {worst} "
                         "along the whole path: float32 rounding, not a different computation.",
    "path.context": "Context: {tok} entered layer {i} as a vector of length {a} and leaves it with length {b}; the "
                    "cosine between the two (the same residual stream) is {cos}. The difference is what the layer "
                    "took from the other tokens and computed.",
    "path.what.embed.tokens": "the token's row",
    "path.what.embed.segments": "the segment row",
    "path.what.embed.positions": "the position row",
    "path.what.embed.out": "the embedding",
    "path.what.embed.projected": "embeddings projected to the model width",
    "path.what.earlier": "output of the layer below",
    "path.what.attn_in": "attention's input",
    "path.what.attn.q": "q of the head",
    "path.what.attn.q_proj": "q of the head, before the rotation",
    "path.what.attn.k": "the keys (rotated)",
    "path.what.attn.v": "the values",
    "path.what.attn.k_proj": "the keys, before the rotation",
    "path.what.attn.scores": "raw scores of the row",
    "path.what.attn.weights": "attention weights of the row",
    "path.what.attn.z": "the head's output z",
    "path.what.attn.merged": "heads concatenated",
    "path.what.attn.out": "after $W_O$",
    "path.what.attn_post_norm": "RMSNorm of the attention output",
    "path.what.attn_resid": "residual + attention",
    "path.what.ffn_in": "feed-forward input",
    "path.what.ffn.gate": "the gate, act(x W_gate)",
    "path.what.ffn.hidden": "feed-forward hidden",
    "path.what.ffn.out": "feed-forward output",
    "path.what.ffn_post_norm": "RMSNorm of the feed-forward output",
    "path.what.ffn_resid": "residual + feed-forward",
    "path.what.out": "the layer's output",
}

ZH = {
    "row.intro_model_weights": "模型 {model}，第 {layer} 层，第 {head} 个头；文本共 {L} 个 token：{tokens}。查询是 {tok}；"
                               "每个头的维度 $d_k = {dk}$。这里的每个数都用 float64 从模型权重重新计算（词向量和之前的每一层"
                               "也是），所以每一位都是公式的结果；最后与模型自己的 float32 结果比较。",
    "row.intro_decoder_weights": "模型 {model}，第 {layer} 层，查询头 {head}（共 {H} 个）；文本有 {L} 个 token：{tokens}。"
                                 "查询是 {tok}；每个头的维度 $d_k = {dk}$。这里的每个数都用 float64 从模型权重重新计算"
                                 "（词向量和之前的每一层也是），所以每一位都是公式的结果；"
                                 "最后与模型自己的 float32 结果比较。",
    "row.trace_check_weights": "与模型自己的 float32 结果相比（追踪）：q 最大相差 {dq}，键 {dk}，值 {dv}，"
                               "原始分数 {ds}，概率 {dw}，输出向量 {dz}：这是 float32 经过下面各层的舍入误差，不是算错。",
    "rms.why_all": "对所有头做 QK 归一化：每个 token 的 $q$（所有头并排，{d} 个分量；它的 $k$：{dk} 个）除以它在这些分量上的"
                   "均方根，再乘以学到的缩放 $w$，然后切分成各个头；表中是第 {h} 个头的部分（{dh} 个分量）。",
    "rms.caption_all": "$\\hat{x}$ 中第 {h} 个头的 {dh} 个分量的前 {n} 个",
    "rms.weight_all": "{x} 的缩放 $w$ 中属于这个头的部分：{d} 个分量中的第 {first}–{last} 个（列出前 {n} 个）：{w}。",
    "path.title": "{tok} 穿过第 {layer} 层的完整路径（详细计算第 {head} 个头）",
    "path.intro": "模型 {model}（{family}）。{L} 个 token 的文本中的 {tok} 从它的词表 id 出发，经过{route}，"
                  "到第 {layer} 层的输出；第 {layer} 层的第 {head} 个头完整算出。每个数都用 float64 从模型权重重新计算"
                  "（之前的每一层也是），所以每一位都是公式的结果。",
    "path.intro_trace": "每一步都标出它的追踪名：model.trace(text, names=…) 记录、查看器显示的名字。最后一步把模型自己的 "
                        "float32 结果放在每一步旁边。",
    "path.route0": "词向量",
    "path.route1": "词向量和第 0 层",
    "path.route": "词向量和第 0 … {last} 层",
    "path.trace": "追踪名：{names}。",
    "path.first_features": "前 {n} 个特征（共 {d} 个，从 0 开始数）",
    "col.feature": "特征",
    "col.head": "头",
    "col.merged_features": "merged 中的特征",
    "path.step_tokens": "分词：片段和词表 id",
    "path.tokens_why": "分词器把文本切成 {L} 个片段，并在 {V} 个词的词表中查出每一个：id 就是词向量表的行号。"
                       "{tok} 的 id 是 {id}。",
    "path.byte_level": "字节级 BPE：每个片段表示若干字节（Ġ 是空格，Ċ 是换行）；“读作”一列是它们组成的字符。"
                       "被切成几个片段的字符（一个汉字占 3 个字节）标在补全它的片段上，之前的片段以 … 结尾。",
    "path.metaspace": "SentencePiece：▁ 标出一个词的开头，即它前面的空格；“读作”一列把它写成那个空格。",
    "path.col_piece": "片段",
    "path.col_reads": "读作",
    "path.col_id": "id",
    "path.col_segment": "段",
    "path.step_embed": "词向量各行及其和",
    "path.step_embed_row": "这个 token 的词向量行",
    "path.step_embed_row_scaled": "这个 token 的词向量行 × √d",
    "path.token_row": "词向量：{tok} 取词向量表（{V} × {E}）的第 {id} 行。",
    "path.segment_row": "段向量：段向量表（{n} 行）的第 {s} 行（单个文本是第 0 段）。",
    "path.position_row": "位置向量：可学习的位置表（{P} 行）的第 {p} 行。",
    "path.position_row_offset": "位置向量：可学习的位置表（{P} 行）的第 {p} 行：这一族从填充索引之后开始给位置编号，所以位置 "
                                "{j} 读第 {p} 行。",
    "path.position_sinusoid": "位置向量：位置 {p} 的正弦和余弦，在下一步算出（固定的，不是学来的）。",
    "path.position_rotary": "没有位置向量：这个模型用旋转位置编码，在注意力里转动 q 和 k（见下文）。",
    "path.embed_scale": "Gemma 把词向量乘以 $\\sqrt{d}$ = √{d}，以 float32 存为 {s}。",
    "path.sum_row": "和 x",
    "path.step_sinusoid": "正弦位置编码，逐个算出",
    "path.sinusoid_why": "位置 {p} 的第 $2i$ 个特征是 $\\sin(p / 10000^{2i/d})$，第 $2i+1$ 个是它的余弦，$d$ = {d}："
                         "前面的特征波动快，后面的慢。",
    "path.col_fn": "函数",
    "path.step_embed_norm": "词向量之和的 LayerNorm",
    "path.step_embed_norm_row": "词向量行的 LayerNorm",
    "path.step_embed_norm_projected": "投影后的行的 LayerNorm",
    "path.embed_norm_why_row": "对这个向量的各特征做归一化：减去均值，除以标准差，再乘以 γ、加上 β（都是学来的）。",
    "path.embed_norm_why": "对和的各特征做归一化：减去均值，除以标准差，再乘以 γ、加上 β（都是学来的）。",
    "path.ln_stats": "在 {d} 个特征上：均值 $\\mu$ = {mu}，方差 $\\sigma^2$ = {var}，$\\varepsilon$ = {eps}，"
                     "$\\sqrt{\\sigma^2 + \\varepsilon}$ = {root}。",
    "path.rms_stats": "在 {d} 个特征上：平方的均值 {ms}，$\\varepsilon$ = {eps}，RMS = {rms}。与 LayerNorm 不同，"
                      "RMSNorm 不减均值，也没有平移。",
    "path.rms_stats_gemma": "在 {d} 个特征上：平方的均值 {ms}，$\\varepsilon$ = {eps}，RMS = {rms}。Gemma 把缩放存成 "
                            "0 附近的 $w$，乘的是 $1 + w$。",
    "path.step_projected": "把词向量投影到模型宽度",
    "path.projected_why": "词向量宽 {E}；一个线性映射把它们变到模型的宽度 {d}。",
    "path.step_earlier": "下面的第 {layers} 层",
    "path.earlier_why": "第 {layers} 层对每个 token 做下面的所有步骤（同样用 float64 重新计算）；{tok} 离开第 {last} 层时的"
                        "向量就是第 {i} 层的输入 $x$。",
    "path.step_attn_in_ln": "注意力之前的 LayerNorm",
    "path.step_attn_in_rms": "注意力之前的 RMSNorm",
    "path.step_attn_in_post": "注意力的输入",
    "path.attn_in_pre": "这个模型在注意力之前归一化（pre-norm）：注意力读归一化后的向量，残差流保留 $x$ 本身。",
    "path.attn_in_post": "这个模型在注意力之后归一化（post-norm，和 BERT 一样）：注意力直接读 $x$。",
    "path.step_q": "第 {h} 个头的查询：$q = x W_Q + b$",
    "path.step_q_proj": "第 {h} 个头的查询：$q = x W_Q$（旋转之前）",
    "path.q_why": "第 {h} 个头有自己的 $W_Q^{(h)}$（{d} × {dh}）：融合投影 $W_{QKV}$（{rows} 个输出）的第 {first} … {last} "
                  "列，而不是 $x$ 的一段。$q$ 的每个特征 $c$ 是 $x$ 的 {d} 个特征与第 $c$ 列的点积，再加偏置。",
    "path.col_other": "其余 {n} 个乘积",
    "path.col_result": "结果",
    "path.product": "{a}·{b}",
    "path.proj_caption": "{m} 个输出中的前 {n} 个；每个是 {d} 个乘积之和",
    "path.proj_caption_all": "每个输出是 {d} 个乘积之和",
    "path.q_rest": "其余特征同样算出；$q$ 的开头是 {q}（共 {dh} 个特征）。",
    "path.kv_why": "每个 token 的键和值同样由该 token 自己的输入算出：键/值头 {g} 的 $W_K$ 和 $W_V$（融合投影的第 {k0} … "
                   "和第 {v0} … 个输出，各 {dh} 个）。",
    "path.k_caption": "K：每个 token 一行（前 {n} 个特征，共 {d} 个）",
    "path.v_caption": "V：每个 token 一行（前 {n} 个特征，共 {d} 个）",
    "path.step_row_result": "第 {h} 个头的这一行：token 看向哪里",
    "path.step_concat": "各头并排",
    "path.concat_why": "全部 {H} 个头用各自的 $W_Q$、$W_K$、$W_V$ 走同样的步骤；它们对 {tok} 的输出（每个 {dh} 个特征）"
                       "并排成一个 {d} 维的向量：只是重新索引（view/transpose），没有运算。",
    "path.concat_caption": "每个头的 z，前 {n} 个特征（共 {dh} 个）",
    "path.step_wo": "混合各头：$W_O$",
    "path.wo_why": "输出矩阵 $W_O$（{d} × {d}）混合各头：输出的特征 $c$ 把每个头的 {dh} 个 z 特征乘以该头在 $W_O$ 中的那一块"
                   "行，再全部加起来。表中是每个头的份额。",
    "path.head_share": "头 {h}",
    "path.head_share_this": "头 {h}（上面）",
    "path.step_post_norm": "注意力之后的归一化",
    "path.post_norm_why": "这一层先把注意力的输出归一化，再加到残差流上。",
    "path.step_post_norm_ffn": "前馈网络之后的归一化",
    "path.post_norm_why_ffn": "这一层先把前馈网络的输出归一化，再加到残差流上。",
    "path.step_post_norm.sandwich": "Gemma 在注意力之后的 RMSNorm",
    "path.post_norm_why.sandwich": "Gemma 先把注意力的输出归一化，再加到残差流上。",
    "path.step_post_norm_ffn.sandwich": "Gemma 在前馈网络之后的 RMSNorm",
    "path.post_norm_why_ffn.sandwich": "Gemma 先把前馈网络的输出归一化，再加到残差流上。",
    "path.step_resid1": "残差连接",
    "path.resid_why": "注意力为 {tok} 算出的结果加到它原来的向量上：残差流保留 token 自己的信息，再加上上下文。",
    "path.x_in": "x（输入）",
    "path.step_ffn_in_ln": "第二个 LayerNorm",
    "path.step_ffn_in_rms": "第二个 RMSNorm",
    "path.ffn_in_post": "Post-norm：和被归一化（BERT 的注意力输出 LayerNorm）；前馈网络读它，它的残差也从它开始。",
    "path.ffn_in_pre": "Pre-norm：前馈网络读归一化后的向量；残差流保留这个和。",
    "path.step_ffn": "前馈网络：$W_1$ 和激活函数",
    "path.ffn_why": "前馈网络对每个 token 单独处理：用 $W_1$（{d} × {dff}）和偏置扩展到 {dff} 个特征，逐个特征施加激活函数 "
                    "{act}，再用 $W_2$ 变回来。",
    "path.ffn_positive": "$a$ 的 {dff} 个特征中有 {k} 个是正的。",
    "path.step_ffn_gated": "门控前馈网络：门、上投影和激活函数",
    "path.gated_why": "门控 MLP：两个投影到 {dff} 个特征，门经过激活函数 {act}，再与另一个（上投影）逐特征相乘，然后用 "
                      "$W_{down}$ 变回模型宽度。",
    "path.gate_proj": "门 $x W_{gate}$：",
    "path.up_proj": "上投影 $x W_{up}$：",
    "path.step_ffn_out": "前馈网络的输出：$W_2$",
    "path.step_resid2": "第二个残差连接",
    "path.resid2_post": "前馈网络的输出加到它的输入（{base}）上。",
    "path.resid2_pre": "前馈网络的输出加到残差流（{base}）上。",
    "path.step_out_ln": "最后的 LayerNorm：这一层的输出",
    "path.out_post": "Post-norm：和再归一化一次，就是这一层的输出，也是下一层的输入。",
    "path.step_out": "这一层的输出",
    "path.out_pre.post_block": "和之后没有归一化：残差流 {s} 就是这一层的输出，也是下一层的输入。",
    "path.step_out_rms": "最后的 RMSNorm：这一层的输出",
    "path.step_norm_ln": "LayerNorm {module}",
    "path.step_norm_rms": "RMSNorm {module}",
    "path.norm_why": "这一层的步骤 {name} 用它的归一化 {module} 对 {s} 做归一化。",
    "path.step_ffn_in_same": "前馈网络的输入",
    "path.ffn_in_same": "前馈网络之前没有归一化：它直接读 {s}。",
    "path.step_same": "{name}",
    "path.same_why": "{name} 就是 {s}：同一个向量的第二个名字。",
    "path.attn_in_post.post_block": "这一层在注意力之前没有归一化：注意力直接读 $x$；归一化在它之后，作用在它加上的东西上。",
    "path.post_norm_why.post_block": "这一层先把注意力的输出归一化，再加到残差流上（注意力之前没有归一化）。",
    "path.post_norm_why_ffn.post_block": "这一层先把前馈网络的输出归一化，再加到残差流上（前馈网络之前没有归一化）。",
    "path.what.step": "{name}",
    "path.out_pre": "Pre-norm：残差流 {s} 就是这一层的输出，也是下一层的输入。",
    "path.step_summary": "每一步与模型自己的 float32 结果对照",
    "path.col_trace": "追踪名",
    "path.col_what": "内容",
    "path.col_diff": "最大 |float32 − float64|",
    "path.summary_diff": "模型的 float32 前向计算与这些 float64 数在整条路径上最多相差 {worst}：这是 float32 的舍入，"
                         "不是另一种算法。",
    "path.context": "上下文：{tok} 进入第 {i} 层时的向量长度是 {a}，离开时是 {b}；两者（同一个残差流）的余弦是 {cos}。"
                    "差别就是这一层从其他 token 取来并算出的东西。",
    "path.what.embed.tokens": "token 的词向量行",
    "path.what.embed.segments": "段向量行",
    "path.what.embed.positions": "位置向量行",
    "path.what.embed.out": "词向量",
    "path.what.embed.projected": "投影到模型宽度的词向量",
    "path.what.earlier": "下面一层的输出",
    "path.what.attn_in": "注意力的输入",
    "path.what.attn.q": "这个头的 q",
    "path.what.attn.q_proj": "这个头旋转前的 q",
    "path.what.attn.k": "键（旋转后）",
    "path.what.attn.v": "值",
    "path.what.attn.k_proj": "旋转前的键",
    "path.what.attn.scores": "这一行的原始分数",
    "path.what.attn.weights": "这一行的注意力权重",
    "path.what.attn.z": "这个头的输出 z",
    "path.what.attn.merged": "各头拼接",
    "path.what.attn.out": "乘 $W_O$ 之后",
    "path.what.attn_post_norm": "注意力输出的 RMSNorm",
    "path.what.attn_resid": "残差 + 注意力",
    "path.what.ffn_in": "前馈网络的输入",
    "path.what.ffn.gate": "门 act(x W_gate)",
    "path.what.ffn.hidden": "前馈网络的隐藏层",
    "path.what.ffn.out": "前馈网络的输出",
    "path.what.ffn_post_norm": "前馈网络输出的 RMSNorm",
    "path.what.ffn_resid": "残差 + 前馈网络",
    "path.what.out": "这一层的输出",
}
