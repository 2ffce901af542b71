"""The labels of relative positions in real rows (T5's bias buckets, encoder–decoder rows,
DeBERTa's terms) and of ``explain positions``, in English and Chinese (merged into :mod:`.i18n`)."""

EN = {
    # relative positions in real rows: T5's bias buckets, encoder–decoder rows, DeBERTa's terms (helper D,
    # explain/row_relative.py) ---------------------------------------------------------------------------
    "rel.what_encoder": "encoder self-attention (source tokens attend to source tokens)",
    "rel.what_self": "decoder self-attention (causal: each target token attends to itself and the target tokens before it)",
    "rel.what_cross": "cross-attention (target tokens attend to the source: q from the decoder, k and v from the encoder's output)",
    "rel.title_seq2seq": "The row of {tok}: {what}, layer {layer}, head {head}, worked out",
    "rel.intro_seq2seq": "Model {model} ({family}): {what}. Layer {layer}, head {head} of {H}. Queries: {qtokens}. "
                         "Keys and values: {ktokens}. The query is {tok}; each head works with $d_k = {dk}$ dimensions. "
                         "q, k and v come from the model's trace (float32); everything after them is float64.",
    "rel.weights_check": "Recomputed in float64 from the model's weights ($W_Q$, $W_K$, $W_V$ applied to the traced "
                         "input of this attention), q, k and v differ from the traced ones by at most {dq}, {dk} and {dv}.",
    "rel.step_bias": "T5's relative position bias: distance → bucket → learned bias",
    "rel.bias_rule_bi": "The encoder's bias is bidirectional: of its {nb} buckets, {n} are for keys at or before "
                        "the query and {n} for keys after it (offset {n} when $\\delta > 0$). On each side, a distance "
                        "$d = |\\delta|$ below $e = {e}$ has a bucket of its own; farther ones share logarithmic "
                        "buckets up to $D = {D}$: bucket $= e + \\lfloor \\mathrm{ln}(d/e) / \\mathrm{ln}(D/e) \\cdot {rest} \\rfloor$, "
                        "at most {last}. The query is {tok}.",
    "rel.bias_rule_causal": "The decoder's bias is causal: keys after the query are hidden anyway, so all {nb} buckets "
                            "are for distances $d = \\max(-\\delta, 0)$ back. A distance below $e = {e}$ has a bucket of "
                            "its own; farther ones share logarithmic buckets up to $D = {D}$: bucket $= e + \\lfloor "
                            "\\mathrm{ln}(d/e) / \\mathrm{ln}(D/e) \\cdot {rest} \\rfloor$, at most {last}. The query is {tok}.",
    "rel.bias_float32": "The model computes these logarithms in float32, and so does this table, so that a distance "
                        "on a bucket edge lands in the model's bucket.",
    "rel.bias_table": "Head {head}'s learned bias, one number per bucket: the stack's table, learned in its first "
                      "layer and added by every layer (layer {layer} adds the same numbers as layer 0). "
                      "$\\mathrm{ln}(D/e) = \\mathrm{ln}({D}/{e})$ = {span}.",
    "rel.bias_check": "The model's own bias (float32) differs from this lookup by {diff}.",
    "rel.col_delta": "$\\delta = j - i$",
    "rel.col_offset": "offset",
    "rel.col_distance": "distance $d$",
    "rel.col_log_ratio": "ln(d / e)",
    "rel.col_log_scaled": "÷ ln(D / e) × (n − e)",
    "rel.col_bucket": "bucket",
    "rel.col_bias": "bias $b$",
    "rel.col_qk": "$q \\cdot k$",
    "rel.step_scores": "raw scores $s_j$",
    "rel.raw_encoder": "The query vector of {tok} against the key vector of every source token (T5 adds each key's bias).",
    "rel.raw_self": "The query vector of {tok} against the key vector of every target token (T5 adds each key's bias).",
    "rel.raw_cross": "The query vector of the target token {tok} (from the decoder) against the key vector of every "
                     "source token (from the encoder's output); cross-attention adds no position bias.",
    "rel.scale_t5": "T5 does not divide by $\\sqrt{d_k} = \\sqrt{{dk}}$ = {root}: its factor is 1. The scaling is "
                    "folded into the initialisation of $W_Q$ (standard deviation $(d_{model} d_k)^{-1/2}$ where $W_K$ "
                    "gets $d_{model}^{-1/2}$): the second article's T5-style alternative, in a real model.",
    "rel.trace_check": "Compared with the model's own float32 numbers: largest difference {ds} in $q \\cdot k$, {dw} "
                       "in the probabilities, {dz} in the output vector.",
    "rel.title_deberta": "The row of {tok}: DeBERTa's three score terms, layer {layer}, head {head}, worked out",
    "rel.intro_deberta": "Model {model} (DeBERTa), layer {layer}, head {head} of {H}; the text has {L} tokens: {tokens}. "
                         "The query is {tok}; each head works with $d_k = {dk}$ dimensions. DeBERTa scores a pair of "
                         "tokens with three terms: content to content, content to position and position to content. "
                         "q, k and v come from the model's trace; the relative embeddings and their projections are "
                         "computed from the model's weights; everything is float64.",
    "rel.step_positions": "relative positions and their buckets",
    "rel.pos_rule_log": "$r = i - j$. Distances up to {mid} keep their value; farther ones go on a log scale: "
                        "$\\delta = \\mathrm{sign}(r) \\cdot (\\mathrm{ceil}(\\mathrm{ln}(|r|/{mid}) / \\mathrm{ln}({maxp}/{mid}) \\cdot {mid1} "
                        ") + {mid})$. The content-to-position term reads row clip($\\delta(i, j)$ + {span}, 0, {last}) "
                        "of pos_k; the position-to-content term reads row clip($-\\delta(j, i)$ + {span}, 0, {last}) of "
                        "pos_q.",
    "rel.pos_rule_plain": "$r = i - j$, without buckets. The content-to-position term reads row clip($r$ + {span}, 0, "
                          "{last}) of pos_k; the position-to-content term reads row clip($-r(j, i)$ + {span}, 0, {last}) "
                          "of pos_q: distances beyond ±{span} share the last rows.",
    "rel.pos_embed": "The relative embeddings ({rows} rows of {d} numbers) belong to the stack and are shared by "
                     "every layer; pos_k and pos_q are those rows projected by {proj}. {normed}",
    "rel.proj_shared": "the layer's own $W_K$ and $W_Q$ (share_att_key)",
    "rel.proj_separate": "the layer's pos_key_proj and pos_query_proj",
    "rel.normed": "The rows are LayerNorm'ed first (norm_rel_ebd).",
    "rel.col_dlog_ratio": "ln(|r| / mid)",
    "rel.col_dlog_scaled": "÷ ln(max / mid) × (mid − 1)",
    "rel.not_normed": "",
    "rel.col_r": "$r = i - j$",
    "rel.col_rel_bucket": "bucket $\\delta$",
    "rel.col_idx_c2p": "c2p row",
    "rel.col_idx_p2c": "p2c row",
    "rel.col_c2c": "c2c = $q \\cdot k_j$",
    "rel.col_c2p": "c2p = $q \\cdot$ pos_k",
    "rel.col_p2c": "p2c = $k_j \\cdot$ pos_q",
    "rel.scores_deberta": "For {tok}: c2c = q·k_j (content to content), c2p = q · pos_k[row] (the query's content "
                          "against where the key is relative to it), p2c = k_j · pos_q[row] (the key's content against "
                          "where the query is relative to it). The raw score is their sum.",
    "rel.scale_deberta": "DeBERTa divides the sum of its {m} terms by $\\sqrt{{m} \\cdot d_k} = \\sqrt{{md}}$ = {root} "
                         "instead of $\\sqrt{d_k}$: each term has a variance of about $d_k$, their sum about {m} times "
                         "that. Factor $c$ = {c}.",
    "rel.terms_check": "The model's own float32 terms differ from these by at most {d1} (c2c), {d2} (c2p) and {d3} "
                       "(p2c); its probabilities by {dw}, its output vector by {dz}.",
    # explain positions (explain/positions_worked.py, positions_relative.py) ----------------------
    "pos.title_sin": "Sinusoidal positions worked out: position {p}, dimension {dim}",
    "pos.sin_intro": "The sinusoidal encoding (Vaswani et al. 2017) of position {p} in $d_{model} = {d}$ dimensions, "
                     "and why the encoding of position {pk} = {p} + {k} is a rotation of it. The encoding is added to "
                     "the token's embedding; nothing in it is learned.",
    "pos.sin_why": "Dimensions $2i$ and $2i + 1$ are the sine and cosine of the same angle $p \\cdot \\omega_i$. The "
                   "frequencies fall geometrically from $\\omega_0 = 1$ (one turn every $2\\pi \\approx 6.28$ positions) "
                   "to {slow} for the last pair, $i = {n}$ (one turn every {longest} positions), so near and far "
                   "positions both differ somewhere.",
    "pos.q_pair": "pair",
    "pos.q_exponent": "exponent",
    "pos.q_power": "base to that power",
    "pos.q_freq": "frequency $\\omega_i$ (radians per position)",
    "pos.q_angle": "angle (radians)",
    "pos.q_value": "the encoding",
    "pos.q_theta": "speed $\\theta_i$ (radians per position)",
    "pos.step_dim": "dimension {dim} of position {p}, every number",
    "pos.dim_why_sin": "Dimension {dim} is even: the sine of pair $i = {i}$.",
    "pos.dim_why_cos": "Dimension {dim} is odd: the cosine of pair $i = {i}$.",
    "pos.col_quantity": "quantity",
    "pos.col_formula": "formula",
    "pos.col_value": "value",
    "pos.wavelength": "Pair {i} repeats every $2\\pi / \\omega_i = {w}$ positions.",
    "pos.col_pair": "pair $i$",
    "pos.col_dims": "dimensions",
    "pos.pairs_caption": "{n} of the {m} pairs (the first, the chosen one, the last)",
    "pos.step_vector": "the whole vector PE({p})",
    "pos.step_rotation": "PE({pk}) is PE({p}) turned: a rotation per pair that depends on $k = {k}$ only",
    "pos.rot_why": "By the angle-sum formulas, $\\sin((p+k)\\omega) = \\sin p\\omega \\cos k\\omega + \\cos p\\omega "
                   "\\sin k\\omega$ and $\\cos((p+k)\\omega) = \\cos p\\omega \\cos k\\omega - \\sin p\\omega \\sin k"
                   "\\omega$: each (sin, cos) pair of PE(p) is multiplied by a 2×2 rotation matrix whose entries "
                   "contain $k$ and $\\omega$, never $p$.",
    "pos.rot_caption": "the matrix of pair {i} for k = {k} (angle $k\\,\\omega = {a}$)",
    "pos.rot_direct": "Computed directly, PE({pk}) has the same pair: [{a}, {b}].",
    "pos.col_rot_sin": "M·PE(p): sin",
    "pos.col_rot_cos": "M·PE(p): cos",
    "pos.rot_result": "Over every pair the turned PE(p) and PE(p + {k}) differ by at most {diff} (float64 rounding).",
    "pos.col_from": "from $p$",
    "pos.col_to": "to $p + k$",
    "pos.col_same_matrix": "largest difference of the matrices",
    "pos.col_rot_diff": "largest |M·PE(p) − PE(p+k)|",
    "pos.same_caption": "the same matrices (k = {k}) from other positions",
    "pos.dot_why": "So the dot product of two encodings depends on the distance only: $PE(p) \\cdot PE(p+k) = "
                   "\\sum_i \\cos(k\\,\\omega_i) = {s}$ for every $p$ (k = {k}):",
    "pos.step_meaning": "what this means",
    "pos.sin_meaning": "A shift by {k} positions is one fixed linear map of the encoding, the same everywhere in the "
                       "text. A layer that multiplies by learned matrices ($W_Q$, $W_K$) can therefore learn to "
                       "attend to \"the token {k} places back\" wherever the tokens stand.",
    "pos.sin_meaning_ahead": "A shift by {k} positions is one fixed linear map of the encoding, the same everywhere in "
                             "the text. A layer that multiplies by learned matrices ($W_Q$, $W_K$) can therefore learn "
                             "to attend to \"the token {n} places ahead\" wherever the tokens stand.",
    "pos.sin_meaning_zero": "A shift by 0 positions is the identity: PE(p + 0) = PE(p). Give --offset a number other "
                            "than 0 to see a rotation.",
    "pos.title_rope": "Rotary positions worked out: position {p}, pair {i}",
    "pos.rope_intro": "Rotary positions (RoFormer, Su et al. 2021) turn each head's q and k, $d_k = {d}$ features in "
                      "pairs, by an angle proportional to the position (base {base}); nothing is added to the "
                      "embeddings. Below: position {p}, then position {pk} = {p} + {k}.",
    "pos.rope_intro_model": "The rotation of model {model}, layer {layer}: each head's q and k ($d_k = {d}$ features) "
                            "turned in pairs, by an angle proportional to the position. Below: position {p}, then "
                            "position {pk} = {p} + {k}.",
    "pos.rope_why": "Where sinusoidal positions add a vector to the embedding, rotary ones rotate q and k, so that "
                    "the score $q'_m \\cdot k'_n$ depends on $m - n$ only.",
    "pos.step_rope_pair": "pair {i} at position {p}, every number",
    "pos.rope_pair": "Feature {dim} belongs to pair {i}: features {fa} and {fb}, turned together.",
    "pos.rope_default_x": "The vector turned here has (1, 0) in every pair, so that the turned vector reads "
                          "(cos φ, sin φ) pair by pair: the rotary counterpart of PE(p). Give your own q with --vector.",
    "pos.step_rope_compose": "turning to {pk} is turning to {p} and then by {k}",
    "pos.rope_compose": "Rotations add their angles: $R((p+k)\\theta_i) = R(k\\theta_i)\\,R(p\\theta_i)$. For pair {i}, "
                        "p = {p}, k = {k}:",
    "pos.col_features": "features",
    "pos.col_compose_diff": "largest |R(kθ)R(pθ) − R((p+k)θ)|",
    "pos.rope_compose_result": "Every pair agrees to {diff} (float64 rounding): the turn by {k} is the same matrix "
                               "at every position.",
    "pos.rope_meaning": "In $q'_m \\cdot k'_n = q^\\top R(m\\theta)^\\top R(n\\theta)\\,k = q^\\top R((n-m)\\theta)\\,k$ "
                        "the absolute positions cancel: a head sees how far apart two tokens are, not where they are.",
    "pos.title_t5": "T5 relative positions worked out: distance {d}",
    "pos.t5_intro": "T5's relative position bias (Raffel et al. 2020): no vector per position; the distance "
                    "$\\delta$ = key position − query position goes into a bucket, and each head adds a learned "
                    "number per bucket to its raw scores (T5 does not divide by $\\sqrt{d_k}$).",
    "pos.t5_intro_model": "The relative position bias of model {model}: the distance $\\delta$ = key position − query "
                          "position goes into a bucket, and each head adds a learned number per bucket to its raw scores.",
    "pos.t5_rule_bi": "Bidirectional (the encoder): of the {nb} buckets, {n} are for keys before the query (and the "
                      "query itself), {n} for keys after it. In each half, distances below {exact} have a bucket "
                      "each; farther ones share buckets on a log scale up to {md}, beyond which all land in the "
                      "last one.",
    "pos.t5_rule_causal": "Causal (decoder self-attention): only keys before the query count; all {n} of the {nb} "
                          "buckets are for them. Distances below {exact} have a bucket each; farther ones share "
                          "buckets on a log scale up to {md}, beyond which all land in the last one.",
    "pos.step_t5_bucket": "the bucket of $\\delta = {d}$, every number",
    "pos.t5_float32": "The logs are float32, as T5 computes them, so that a distance on a bucket edge lands where "
                      "the model puts it.",
    "pos.q_delta": "distance",
    "pos.q_side": "offset (keys after the query)",
    "pos.q_distance": "distance counted",
    "pos.q_exact": "exact buckets",
    "pos.q_small": "below that: its own bucket",
    "pos.q_log_ratio": "log of the distance",
    "pos.q_log_span": "log of the span",
    "pos.q_scaled": "position on the log scale",
    "pos.q_large": "log bucket",
    "pos.q_bucket": "bucket",
    "pos.t5_result": "Query {i}, key {j}: $\\delta = {d}$ is bucket {b}.",
    "pos.t5_future": "A key after the query ($\\delta = {d} > 0$) counts as distance 0 here; in decoder "
                      "self-attention the causal mask hides it anyway.",
    "pos.step_t5_bias": "the learned bias of bucket {b}, every head",
    "pos.t5_bias": "What {model} adds to the raw score of such a pair: row {b} of the {stack}'s learned table, one "
                   "number per head ({H} heads); every layer of the stack adds the same numbers.",
    "pos.stack_encoder": "encoder",
    "pos.stack_decoder": "decoder",
    "pos.col_head": "head",
    "pos.col_bias": "bias",
    "pos.step_t5_table": "every distance and its bucket",
    "pos.t5_table_why": "Each bucket with the distances it holds (the table runs from −2·{md} to 2·{md}): near "
                        "distances are told apart exactly, far ones only roughly.",
    "pos.col_bucket": "bucket",
    "pos.col_delta_from": "$\\delta$ from",
    "pos.col_delta_to": "$\\delta$ to",
    "pos.col_count": "distances",
    "pos.step_t5_relative": "relative: the same distance, the same bucket",
    "pos.t5_relative": "Wherever the two tokens stand, $\\delta = {d}$ gives bucket {b}, and every head adds the same "
                       "learned bias to that score:",
    "pos.col_query": "query",
    "pos.col_key": "key",
    "pos.t5_meaning": "The bias depends on the distance only, never on the absolute positions; each layer of a stack "
                      "adds the same bias matrix (computed once in its first layer).",
}

ZH = {
    # 真实行中的相对位置：T5 的偏置桶、编码器–解码器的行、DeBERTa 的三项（helper D，explain/row_relative.py）
    "rel.what_encoder": "编码器自注意力（源 token 关注源 token）",
    "rel.what_self": "解码器自注意力（因果：每个目标 token 关注自己和它之前的目标 token）",
    "rel.what_cross": "交叉注意力（目标 token 关注源：q 来自解码器，k 和 v 来自编码器的输出）",
    "rel.title_seq2seq": "{tok} 这一行：{what}，第 {layer} 层，第 {head} 个头，逐步计算",
    "rel.intro_seq2seq": "模型 {model}（{family}）：{what}。第 {layer} 层，第 {head} 个头（共 {H} 个）。查询：{qtokens}。"
                         "键和值：{ktokens}。查询是 {tok}；每个头的维度 $d_k = {dk}$。q、k、v 取自模型的追踪（float32）；"
                         "之后的一切都用 float64 计算。",
    "rel.weights_check": "用模型的权重（把 $W_Q$、$W_K$、$W_V$ 作用在追踪到的这一注意力的输入上）以 float64 重新计算，"
                         "q、k、v 与追踪值最多相差 {dq}、{dk} 和 {dv}。",
    "rel.step_bias": "T5 的相对位置偏置：距离 → 桶 → 学到的偏置",
    "rel.bias_rule_bi": "编码器的偏置是双向的：{nb} 个桶中，{n} 个给查询处及之前的键，{n} 个给之后的键"
                        "（$\\delta > 0$ 时偏移 {n}）。在每一侧，距离 $d = |\\delta|$ 小于 $e = {e}$ 时各占一个桶；"
                        "更远的距离共用对数桶，直到 $D = {D}$：桶 $= e + \\lfloor \\mathrm{ln}(d/e) / \\mathrm{ln}(D/e) \\cdot {rest} \\rfloor$，"
                        "最多为 {last}。查询是 {tok}。",
    "rel.bias_rule_causal": "解码器的偏置是因果的：查询之后的键本来就被遮住，所以全部 {nb} 个桶都给向后的距离 "
                            "$d = \\max(-\\delta, 0)$。距离小于 $e = {e}$ 时各占一个桶；更远的共用对数桶，直到 $D = {D}$："
                            "桶 $= e + \\lfloor \\mathrm{ln}(d/e) / \\mathrm{ln}(D/e) \\cdot {rest} \\rfloor$，最多为 {last}。查询是 {tok}。",
    "rel.bias_float32": "模型用 float32 计算这些对数，这张表也一样，所以恰好落在桶边界上的距离会进入模型所用的桶。",
    "rel.bias_table": "第 {head} 个头学到的偏置，每个桶一个数：这是整个栈的表，在第一层学到，每一层都加上它"
                      "（第 {layer} 层加的数与第 0 层相同）。$\\mathrm{ln}(D/e) = \\mathrm{ln}({D}/{e})$ = {span}。",
    "rel.bias_check": "模型自己的偏置（float32）与这里查表的结果相差 {diff}。",
    "rel.col_delta": "$\\delta = j - i$",
    "rel.col_offset": "偏移",
    "rel.col_distance": "距离 $d$",
    "rel.col_log_ratio": "ln(d / e)",
    "rel.col_log_scaled": "÷ ln(D / e) × (n − e)",
    "rel.col_bucket": "桶",
    "rel.col_bias": "偏置 $b$",
    "rel.col_qk": "$q \\cdot k$",
    "rel.step_scores": "原始分数 $s_j$",
    "rel.raw_encoder": "{tok} 的查询向量与每个源 token 的键向量相乘（T5 再加上每个键的偏置）。",
    "rel.raw_self": "{tok} 的查询向量与每个目标 token 的键向量相乘（T5 再加上每个键的偏置）。",
    "rel.raw_cross": "目标 token {tok} 的查询向量（来自解码器）与每个源 token 的键向量（来自编码器的输出）相乘；"
                     "交叉注意力不加位置偏置。",
    "rel.scale_t5": "T5 不除以 $\\sqrt{d_k} = \\sqrt{{dk}}$ = {root}：它的系数是 1。缩放被并入了 $W_Q$ 的初始化"
                    "（标准差 $(d_{model} d_k)^{-1/2}$，而 $W_K$ 是 $d_{model}^{-1/2}$）：这是第二篇文章里"
                    "T5 式的另一种做法，用在真实模型中。",
    "rel.trace_check": "与模型自己的 float32 结果相比：$q \\cdot k$ 最大相差 {ds}，概率 {dw}，输出向量 {dz}。",
    "rel.title_deberta": "{tok} 这一行：DeBERTa 的三项分数，第 {layer} 层，第 {head} 个头，逐步计算",
    "rel.intro_deberta": "模型 {model}（DeBERTa），第 {layer} 层，第 {head} 个头（共 {H} 个）；文本有 {L} 个 token：{tokens}。"
                         "查询是 {tok}；每个头的维度 $d_k = {dk}$。DeBERTa 用三项给一对 token 打分：内容对内容、内容对位置、"
                         "位置对内容。q、k、v 取自模型的追踪；相对位置嵌入及其投影由模型的权重计算；全部用 float64。",
    "rel.step_positions": "相对位置和它们的桶",
    "rel.pos_rule_log": "$r = i - j$。距离不超过 {mid} 时保持原值；更远的用对数刻度："
                        "$\\delta = \\mathrm{sign}(r) \\cdot (\\mathrm{ceil}(\\mathrm{ln}(|r|/{mid}) / \\mathrm{ln}({maxp}/{mid}) \\cdot {mid1} "
                        ") + {mid})$。内容对位置项读 pos_k 的第 clip($\\delta(i, j)$ + {span}, 0, {last}) 行；"
                        "位置对内容项读 pos_q 的第 clip($-\\delta(j, i)$ + {span}, 0, {last}) 行。",
    "rel.pos_rule_plain": "$r = i - j$，不分桶。内容对位置项读 pos_k 的第 clip($r$ + {span}, 0, {last}) 行；"
                          "位置对内容项读 pos_q 的第 clip($-r(j, i)$ + {span}, 0, {last}) 行：超过 ±{span} 的距离共用最后几行。",
    "rel.pos_embed": "相对位置嵌入（{rows} 行，每行 {d} 个数）属于整个栈，被每一层共用；pos_k 和 pos_q "
                     "是这些行经 {proj} 投影的结果。{normed}",
    "rel.proj_shared": "该层自己的 $W_K$ 和 $W_Q$（share_att_key）",
    "rel.proj_separate": "该层的 pos_key_proj 和 pos_query_proj",
    "rel.normed": "这些行先经过 LayerNorm（norm_rel_ebd）。",
    "rel.col_dlog_ratio": "ln(|r| / mid)",
    "rel.col_dlog_scaled": "÷ ln(max / mid) × (mid − 1)",
    "rel.not_normed": "",
    "rel.col_r": "$r = i - j$",
    "rel.col_rel_bucket": "桶 $\\delta$",
    "rel.col_idx_c2p": "c2p 行",
    "rel.col_idx_p2c": "p2c 行",
    "rel.col_c2c": "c2c = $q \\cdot k_j$",
    "rel.col_c2p": "c2p = $q \\cdot$ pos_k",
    "rel.col_p2c": "p2c = $k_j \\cdot$ pos_q",
    "rel.scores_deberta": "对 {tok}：c2c = q·k_j（内容对内容），c2p = q · pos_k[行]（查询的内容对键相对于它的位置），"
                          "p2c = k_j · pos_q[行]（键的内容对查询相对于它的位置）。原始分数是三者之和。",
    "rel.scale_deberta": "DeBERTa 把 {m} 项之和除以 $\\sqrt{{m} \\cdot d_k} = \\sqrt{{md}}$ = {root}，而不是 $\\sqrt{d_k}$："
                         "每一项的方差约为 $d_k$，它们的和约为它的 {m} 倍。系数 $c$ = {c}。",
    "rel.terms_check": "模型自己的 float32 各项与这里最多相差 {d1}（c2c）、{d2}（c2p）和 {d3}（p2c）；"
                       "概率相差 {dw}，输出向量相差 {dz}。",
    # explain positions (explain/positions_worked.py, positions_relative.py) ----------------------
    "pos.title_sin": "手算正弦位置编码：位置 {p}，维度 {dim}",
    "pos.sin_intro": "位置 {p} 在 $d_{model} = {d}$ 维中的正弦位置编码（Vaswani 等，2017），以及为什么位置 "
                     "{pk} = {p} + {k} 的编码是它的旋转。编码加到 token 的词向量上；其中没有可学习的参数。",
    "pos.sin_why": "第 $2i$ 维和第 $2i + 1$ 维是同一个角 $p \\cdot \\omega_i$ 的正弦和余弦。频率按几何级数下降："
                   "从 $\\omega_0 = 1$（每 $2\\pi \\approx 6.28$ 个位置转一圈）到最后一对（第 {n} 对）的 {slow}"
                   "（每 {longest} 个位置转一圈），所以远近不同的位置总会在某些维度上不同。",
    "pos.q_pair": "维度对",
    "pos.q_exponent": "指数",
    "pos.q_power": "base 的该次幂",
    "pos.q_freq": "频率 $\\omega_i$（每个位置的弧度）",
    "pos.q_angle": "角度（弧度）",
    "pos.q_value": "编码值",
    "pos.q_theta": "转速 $\\theta_i$（每个位置的弧度）",
    "pos.step_dim": "位置 {p} 的第 {dim} 维，每个数",
    "pos.dim_why_sin": "第 {dim} 维是偶数：维度对 $i = {i}$ 的正弦。",
    "pos.dim_why_cos": "第 {dim} 维是奇数：维度对 $i = {i}$ 的余弦。",
    "pos.col_quantity": "量",
    "pos.col_formula": "公式",
    "pos.col_value": "值",
    "pos.wavelength": "维度对 {i} 每 $2\\pi / \\omega_i = {w}$ 个位置重复一次。",
    "pos.col_pair": "维度对 $i$",
    "pos.col_dims": "维度",
    "pos.pairs_caption": "{m} 个维度对中的 {n} 个（前几个、所选的、最后一个）",
    "pos.step_vector": "整个向量 PE({p})",
    "pos.step_rotation": "PE({pk}) 是 PE({p}) 的旋转：每个维度对一个只取决于 $k = {k}$ 的旋转",
    "pos.rot_why": "由和角公式，$\\sin((p+k)\\omega) = \\sin p\\omega \\cos k\\omega + \\cos p\\omega \\sin k\\omega$，"
                   "$\\cos((p+k)\\omega) = \\cos p\\omega \\cos k\\omega - \\sin p\\omega \\sin k\\omega$：PE(p) 的每个 "
                   "(sin, cos) 对乘以一个 2×2 旋转矩阵，矩阵的元素只含 $k$ 和 $\\omega$，从不含 $p$。",
    "pos.rot_caption": "维度对 {i} 在 k = {k} 时的矩阵（角度 $k\\,\\omega = {a}$）",
    "pos.rot_direct": "直接计算，PE({pk}) 的这一对也是：[{a}, {b}]。",
    "pos.col_rot_sin": "M·PE(p)：sin",
    "pos.col_rot_cos": "M·PE(p)：cos",
    "pos.rot_result": "所有维度对上，旋转后的 PE(p) 与 PE(p + {k}) 最多相差 {diff}（float64 舍入）。",
    "pos.col_from": "从 $p$",
    "pos.col_to": "到 $p + k$",
    "pos.col_same_matrix": "矩阵的最大差",
    "pos.col_rot_diff": "最大 |M·PE(p) − PE(p+k)|",
    "pos.same_caption": "其他位置出发，同样的矩阵（k = {k}）",
    "pos.dot_why": "所以两个编码的点积只取决于距离：$PE(p) \\cdot PE(p+k) = \\sum_i \\cos(k\\,\\omega_i) = {s}$，"
                   "对每个 $p$ 都一样（k = {k}）：",
    "pos.step_meaning": "这意味着什么",
    "pos.sin_meaning": "平移 {k} 个位置是编码的一个固定线性变换，在文本中任何地方都一样。用学到的矩阵"
                       "（$W_Q$、$W_K$）相乘的层，因此可以学会关注“往前 {k} 个位置的 token”，无论 token 在哪里。",
    "pos.sin_meaning_ahead": "平移 {k} 个位置是编码的一个固定线性变换，在文本中任何地方都一样。用学到的矩阵"
                             "（$W_Q$、$W_K$）相乘的层，因此可以学会关注“往后 {n} 个位置的 token”，无论 token 在哪里。",
    "pos.sin_meaning_zero": "平移 0 个位置就是恒等变换：PE(p + 0) = PE(p)。给 --offset 一个非 0 的数，才能看到旋转。",
    "pos.title_rope": "手算旋转位置编码：位置 {p}，维度对 {i}",
    "pos.rope_intro": "旋转位置编码（RoFormer，Su 等，2021）把每个头的 q 和 k（$d_k = {d}$ 维）按维度对旋转，"
                      "角度与位置成正比（base {base}）；词向量上什么也不加。下面：位置 {p}，然后位置 {pk} = {p} + {k}。",
    "pos.rope_intro_model": "模型 {model} 第 {layer} 层的旋转：每个头的 q 和 k（$d_k = {d}$ 维）按维度对旋转，"
                            "角度与位置成正比。下面：位置 {p}，然后位置 {pk} = {p} + {k}。",
    "pos.rope_why": "正弦位置编码把一个向量加到词向量上，旋转位置编码则旋转 q 和 k，使分数 $q'_m \\cdot k'_n$ "
                    "只取决于 $m - n$。",
    "pos.step_rope_pair": "位置 {p} 的维度对 {i}，每个数",
    "pos.rope_pair": "第 {dim} 个特征属于维度对 {i}：特征 {fa} 和 {fb} 一起旋转。",
    "pos.rope_default_x": "这里旋转的向量每一对都是 (1, 0)，所以旋转后逐对读出的是 (cos φ, sin φ)：PE(p) 的旋转版本。"
                          "用 --vector 给出你自己的 q。",
    "pos.step_rope_compose": "转到 {pk} 就是先转到 {p} 再转 {k}",
    "pos.rope_compose": "旋转的角度相加：$R((p+k)\\theta_i) = R(k\\theta_i)\\,R(p\\theta_i)$。维度对 {i}，p = {p}，k = {k}：",
    "pos.col_features": "特征",
    "pos.col_compose_diff": "最大 |R(kθ)R(pθ) − R((p+k)θ)|",
    "pos.rope_compose_result": "每个维度对都吻合到 {diff}（float64 舍入）：转 {k} 在每个位置都是同一个矩阵。",
    "pos.rope_meaning": "在 $q'_m \\cdot k'_n = q^\\top R(m\\theta)^\\top R(n\\theta)\\,k = q^\\top R((n-m)\\theta)\\,k$ "
                        "中绝对位置相互抵消：头看到的是两个 token 相距多远，而不是它们在哪里。",
    "pos.title_t5": "手算 T5 相对位置：距离 {d}",
    "pos.t5_intro": "T5 的相对位置偏置（Raffel 等，2020）：没有每个位置的向量；距离 $\\delta$ = 键位置 − 查询位置"
                    "被放进一个桶，每个头按桶把一个学到的数加到原始分数上（T5 不除以 $\\sqrt{d_k}$）。",
    "pos.t5_intro_model": "模型 {model} 的相对位置偏置：距离 $\\delta$ = 键位置 − 查询位置被放进一个桶，"
                          "每个头按桶把一个学到的数加到原始分数上。",
    "pos.t5_rule_bi": "双向（编码器）：{nb} 个桶中，{n} 个给查询之前的键（和查询自身），{n} 个给之后的键。每一半里，"
                      "小于 {exact} 的距离各有一个桶；更远的按对数刻度共用桶，直到 {md}，更远的都落进最后一个桶。",
    "pos.t5_rule_causal": "因果（解码器自注意力）：只有查询之前的键算数；{nb} 个桶中的全部 {n} 个都给它们。"
                          "小于 {exact} 的距离各有一个桶；更远的按对数刻度共用桶，直到 {md}，更远的都落进最后一个桶。",
    "pos.step_t5_bucket": "$\\delta = {d}$ 的桶，每个数",
    "pos.t5_float32": "对数用 float32 计算，与 T5 相同，这样落在桶边界上的距离会进入模型放它的那个桶。",
    "pos.q_delta": "距离",
    "pos.q_side": "偏移（查询之后的键）",
    "pos.q_distance": "计入的距离",
    "pos.q_exact": "精确桶数",
    "pos.q_small": "小于它：自己一个桶",
    "pos.q_log_ratio": "距离的对数",
    "pos.q_log_span": "范围的对数",
    "pos.q_scaled": "在对数刻度上的位置",
    "pos.q_large": "对数桶",
    "pos.q_bucket": "桶",
    "pos.t5_result": "查询 {i}，键 {j}：$\\delta = {d}$ 在第 {b} 个桶。",
    "pos.t5_future": "查询之后的键（$\\delta = {d} > 0$）在这里算作距离 0；在解码器自注意力中，因果掩码反正会把它遮住。",
    "pos.step_t5_bias": "第 {b} 个桶学到的偏置，每个头",
    "pos.t5_bias": "{model} 给这样一对的原始分数加上的数：{stack}学到的表的第 {b} 行，每个头一个数（共 {H} 个头）；"
                   "该堆栈的每一层都加同样的数。",
    "pos.stack_encoder": "编码器",
    "pos.stack_decoder": "解码器",
    "pos.col_head": "头",
    "pos.col_bias": "偏置",
    "pos.step_t5_table": "每个距离和它的桶",
    "pos.t5_table_why": "每个桶及其包含的距离（表格范围从 −2·{md} 到 2·{md}）：近的距离被精确区分，远的只粗略区分。",
    "pos.col_bucket": "桶",
    "pos.col_delta_from": "$\\delta$ 从",
    "pos.col_delta_to": "$\\delta$ 到",
    "pos.col_count": "距离个数",
    "pos.step_t5_relative": "相对：同样的距离，同样的桶",
    "pos.t5_relative": "无论两个 token 在哪里，$\\delta = {d}$ 都是第 {b} 个桶，每个头给这个分数加上同样的学到的偏置：",
    "pos.col_query": "查询",
    "pos.col_key": "键",
    "pos.t5_meaning": "偏置只取决于距离，从不取决于绝对位置；一个堆栈的每一层都加同一个偏置矩阵（在第一层算一次）。",
}
