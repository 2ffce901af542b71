"""The labels of today's decoder steps (:mod:`.modern`) in English and Chinese, merged into
:data:`.i18n.LABELS` (the same key and placeholder rules as :mod:`.labels_en`)."""

EN = {
    # shared k/v heads
    "step.heads": "shared key/value heads",
    "heads.gqa": "Grouped-query attention: {H} query heads share {Hkv} key/value heads, {group} query heads each. "
                 "Each query head has its own $W_Q$; the key/value cache is {group} times smaller.",
    "heads.mqa": "Multi-query attention: all {H} query heads share one key/value head; the key/value cache is "
                 "{H} times smaller.",
    "heads.mha": "Each of the {H} query heads has its own key/value head.",
    "heads.this": "Query head {h} reads key/value head {g} ({h} ÷ {group}, rounded down), which query heads {heads} "
                  "share: their scores use the same keys, and their outputs mix the same values.",
    "col.kv_head": "k/v head",
    "col.q_heads": "query heads",
    # QK-norm
    "step.qk_norm": "QK-norm: RMSNorm of $q$ and $k$",
    "rms.why": "Each head's $q$ and $k$ are divided by their root mean square over the {d} features ($\\varepsilon$ = "
               "{eps} inside the root keeps it from 0) and multiplied by the learned scale $w$: the scores no longer "
               "grow with the size of the activations.",
    "rms.why_gemma": "Each head's $q$ and $k$ are divided by their root mean square over the {d} features "
                     "($\\varepsilon$ = {eps} inside the root keeps it from 0) and multiplied by $(1 + w)$: Gemma "
                     "stores the learned scale as $w$ around 0. The scores no longer grow with the size of the "
                     "activations.",
    "rms.weight": "The learned scale $w$ of {x} (first {n}): {w}.",
    "rms.weight_gemma": "The learned $w$ of {x} (first {n}; the scale is $1 + w$): {w}.",
    "rms.caption": "first {n} of {d} features of $\\hat{x}$",
    "rms.trace_check": "The model's own normalised vectors (float32) differ from these by at most {diff}.",
    "col.vector": "vector",
    # rotary positions
    "step.rotation": "rotary positions: turning $q$ and $k$",
    "step.scores_rot": "raw scores of the turned vectors $S = Q' K'^{\\top}$",
    "rope.diagonal": "On the diagonal a query and a key sit at the same position, so their turns cancel "
                     "($R(p\\theta)^{\\top} R(p\\theta) = I$): {s} = {v} is the dot product of {q} and {k} before the "
                     "turn, exactly. Every score here is computed from the offset between query and key, so a score "
                     "exactly half-way between two shown values is known to be one (and rounded half-up).",
    "rope.pairs_half_model": "This model pairs feature $i$ with feature $i + d/2$: pair 0 is features 0 and {half}, "
                             "the last pair {last}. That is Hugging Face's rotate_half, the layout of the Llama, "
                             "Qwen2, Mistral and Gemma checkpoints (llama.cpp's GGUF files store the rows of "
                             "$W_Q$, $W_K$ permuted so that its adjacent pairs are these same pairs).",
    "rope.pairs_half": "Pairs: feature $i$ with feature $i + d/2$ (pair 0 is features 0 and {half}): Hugging "
                       "Face's rotate_half, the layout of the Llama, Qwen2, Mistral and Gemma checkpoints.",
    "rope.pairs_adjacent": "Pairs: features $2i$ and $2i + 1$, as in the RoFormer paper (Hugging Face checkpoints "
                           "pair $i$ with $i + d/2$ instead: pairing: half).",
    "rope.freq": "Pair $i$ turns by $\\theta_i$ = {base}$^{-2i/d}$ radians per position ($d$ = {d}): pair 0 by 1 "
                 "radian, the last of the {n} pairs by only {last}. Fast pairs tell near positions apart, slow "
                 "pairs far ones.",
    "rope.scaled": "The frequencies are the base {base}$^{-2i/d}$ bent by the model's {kind} scaling (rope_scaling), "
                   "for long contexts; these are the model's own, computed in float64.",
    "rope.pairs_caption": "the first {n} of {m} pairs; the others turn the same way",
    "rope.row_caption": "{x} at position {p}: each pair turned by $\\varphi = {p} \\cdot \\theta_i$",
    "rope.norm": "The rotation keeps lengths: $|${x}$|$ = {before} before and {after} after.",
    "rope.all_keys": "Every key is turned the same way at its own position; the tables show the query and key {k}, "
                     "the key it attends to most.",
    "rope.trace_check": "The model's own rotated $q$ and $k$ (float32) differ from these float64 ones by at most "
                        "{dq} and {dk}.",
    "col.pair": "pair $i$",
    "col.features": "features $a, b$",
    # the distance proof
    "step.distance": "why the rotation encodes distance",
    "dist.intro": "Take {q} and {k} as they are before the rotation and put them at other positions $m$ (query) "
                  "and $n$ (key). The score after turning both depends only on $m - n$:",
    "dist.result": "At (3, 1) and at (7, 5), two positions apart both times, the score is {a} and {b} (a difference "
                   "of {diff}: float64 rounding); at (3, 0), three apart, it is {c}. The rotations are absolute, "
                   "their effect on the score is relative.",
    "col.score_rotated": "$q'_m \\cdot k'_n$ (turned, then multiplied)",
    "col.score_formula": "the formula",
    # scale
    "scale.gemma": "Gemma 3 multiplies by query_pre_attn_scalar$^{-1/2}$ = {s}$^{-1/2}$ = {c} instead of dividing by "
                   "$\\sqrt{d_k}$ ($1/\\sqrt{{d}}$ = {root}).",
    "scale.gemma_same": "Gemma 3 multiplies by query_pre_attn_scalar$^{-1/2}$ = {s}$^{-1/2}$ = {c}; in this model "
                        "that equals $1/\\sqrt{d_k}$ = $1/\\sqrt{{d}}$, but the factor is the config's, not the head "
                        "width's.",
    # windows and the causal mask
    "window.row": "{tok}: keys {keys} come before it but are {w} or more positions back, outside the sliding "
                  "window of {w}.",
    "window.none": "The sliding window is {w}; with {n} tokens no key is far enough back to be hidden.",
    "row.window_reach": "This layer's sliding window is {w}; every key before {tok} lies within it.",
    "window.why": "Why a window: a query then reads at most {w} keys, so memory and time grow with the window, not "
                  "with the text (Mistral; Gemma 3's local layers). What lies farther back still arrives, indirectly, "
                  "through earlier layers and the layers without a window.",
    "row.masked_causal": "Keys {keys} come after {tok}: a causal model lets no token see the future ($-\\infty$, "
                         "weight 0).",
    "row.masked_window": "Keys {keys} come before {tok} but lie {w} or more positions back, outside this layer's "
                         "sliding window of {w} ($-\\infty$, weight 0).",
    "row.intro_decoder": "Model {model}, layer {layer}, query head {head} of {H}; the text has {L} tokens: {tokens}. "
                         "The query is {tok}; each head works with $d_k = {dk}$ dimensions. {operands} come from "
                         "the model's trace; everything after them is recomputed here in float64.",
    "row.operands": "$q$ and $k$ before the rotation, and $v$,",
    "row.operands_normed": "$q$ and $k$ after the model's QK-norm (its RMS step is worked out below from the "
                           "projections) but before the rotation, and $v$,",
    "row.trace_check_decoder": "Compared with the model's own float32 numbers: largest difference {dq} in the rotated "
                               "query, {dk} in the rotated keys, {ds} in the raw scores, {dw} in the probabilities, "
                               "{dz} in the output vector.",
}

ZH = {
    "step.heads": "共享的键/值头",
    "heads.gqa": "分组查询注意力（GQA）：{H} 个查询头共享 {Hkv} 个键/值头，每个键/值头服务 {group} 个查询头。"
                 "每个查询头仍有自己的 $W_Q$；键/值缓存小了 {group} 倍。",
    "heads.mqa": "多查询注意力（MQA）：全部 {H} 个查询头共享一个键/值头；键/值缓存小了 {H} 倍。",
    "heads.mha": "{H} 个查询头各有自己的键/值头。",
    "heads.this": "查询头 {h} 读取键/值头 {g}（{h} ÷ {group}，向下取整），与查询头 {heads} 共享："
                  "它们的分数用同一组键，输出混合同一组值。",
    "col.kv_head": "键/值头",
    "col.q_heads": "查询头",
    "step.qk_norm": "QK-norm：对 $q$ 和 $k$ 做 RMSNorm",
    "rms.why": "每个头的 $q$ 和 $k$ 除以它们在 {d} 个分量上的均方根（根号里的 $\\varepsilon$ = {eps} 防止为 0），"
               "再乘以学到的缩放 $w$：分数不再随激活值的大小增长。",
    "rms.why_gemma": "每个头的 $q$ 和 $k$ 除以它们在 {d} 个分量上的均方根（根号里的 $\\varepsilon$ = {eps} 防止为 0），"
                     "再乘以 $(1 + w)$：Gemma 把学到的缩放存成 0 附近的 $w$。分数不再随激活值的大小增长。",
    "rms.weight": "{x} 的缩放 $w$（前 {n} 个）：{w}。",
    "rms.weight_gemma": "{x} 的 $w$（前 {n} 个；缩放是 $1 + w$）：{w}。",
    "rms.caption": "$\\hat{x}$ 的前 {n} 个分量（共 {d} 个）",
    "rms.trace_check": "模型自己（float32）归一化后的向量与这里最多相差 {diff}。",
    "col.vector": "向量",
    "step.rotation": "旋转位置编码：转动 $q$ 和 $k$",
    "step.scores_rot": "转动后向量的原始分数 $S = Q' K'^{\\top}$",
    "rope.diagonal": "对角线上查询和键位于同一位置，两次转动相互抵消（$R(p\\theta)^{\\top} R(p\\theta) = I$）：{s} = {v} "
                     "正是转动前 {q} 与 {k} 的点积，分毫不差。这里每个分数都由查询与键的位置差算出，所以恰好落在两个显示值"
                     "正中间的分数会被认出（并四舍五入）。",
    "rope.pairs_half_model": "这个模型把分量 $i$ 与分量 $i + d/2$ 配成一对：第 0 对是分量 0 和 {half}，最后一对是 {last}。"
                             "这是 Hugging Face 的 rotate_half，即 Llama、Qwen2、Mistral 和 Gemma 检查点的排列"
                             "（llama.cpp 的 GGUF 文件把 $W_Q$、$W_K$ 的行重新排列，使它的相邻配对正是这些对）。",
    "rope.pairs_half": "配对：分量 $i$ 与分量 $i + d/2$（第 0 对是分量 0 和 {half}）：Hugging Face 的 rotate_half，"
                       "即 Llama、Qwen2、Mistral 和 Gemma 检查点的排列。",
    "rope.pairs_adjacent": "配对：分量 $2i$ 与 $2i + 1$，如 RoFormer 论文（Hugging Face 检查点改为 $i$ 与 $i + d/2$ "
                           "配对：pairing: half）。",
    "rope.freq": "第 $i$ 对每个位置转 $\\theta_i$ = {base}$^{-2i/d}$ 弧度（$d$ = {d}）：第 0 对转 1 弧度，{n} 对中的最后一对"
                 "只转 {last}。转得快的对区分相近的位置，转得慢的对区分远的位置。",
    "rope.scaled": "频率是底数 {base}$^{-2i/d}$ 经模型的 {kind} 缩放（rope_scaling）弯折后的值，用于长上下文；"
                   "这里用的是模型自己的频率，以 float64 计算。",
    "rope.pairs_caption": "{m} 对中的前 {n} 对；其余各对同样转动",
    "rope.row_caption": "位置 {p} 上的 {x}：每一对转过 $\\varphi = {p} \\cdot \\theta_i$",
    "rope.norm": "旋转不改变长度：转前 $|${x}$|$ = {before}，转后 {after}。",
    "rope.all_keys": "每个键都在自己的位置上同样转动；表中是查询和键 {k}，即查询最关注的键。",
    "rope.trace_check": "模型自己（float32）转动后的 $q$ 和 $k$ 与这里的 float64 结果最多相差 {dq} 和 {dk}。",
    "col.pair": "第 $i$ 对",
    "col.features": "分量 $a, b$",
    "step.distance": "为什么旋转编码的是距离",
    "dist.intro": "取旋转前的 {q} 和 {k}，放到别的位置 $m$（查询）和 $n$（键）上。两者都转动后的分数只取决于 $m - n$：",
    "dist.result": "在 (3, 1) 和 (7, 5)（两次都相距 2）分数分别是 {a} 和 {b}（相差 {diff}：float64 舍入）；"
                   "在 (3, 0)（相距 3）是 {c}。旋转是绝对的，它对分数的影响是相对的。",
    "col.score_rotated": "$q'_m \\cdot k'_n$（先转动再相乘）",
    "col.score_formula": "公式",
    "scale.gemma": "Gemma 3 乘以 query_pre_attn_scalar$^{-1/2}$ = {s}$^{-1/2}$ = {c}，而不是除以 $\\sqrt{d_k}$"
                   "（$1/\\sqrt{{d}}$ = {root}）。",
    "scale.gemma_same": "Gemma 3 乘以 query_pre_attn_scalar$^{-1/2}$ = {s}$^{-1/2}$ = {c}；在这个模型里它恰好等于 "
                        "$1/\\sqrt{d_k}$ = $1/\\sqrt{{d}}$，但这个系数来自配置，而不是头的宽度。",
    "window.row": "{tok}：键 {keys} 在它之前，但相距 {w} 个或更多位置，在 {w} 的滑动窗口之外。",
    "window.none": "滑动窗口是 {w}；只有 {n} 个 token，没有键远到被遮住。",
    "row.window_reach": "这一层的滑动窗口是 {w}；{tok} 之前的每个键都在窗口之内。",
    "window.why": "为什么要窗口：每个查询最多读 {w} 个键，内存和时间随窗口而不是随文本增长（Mistral；Gemma 3 的局部层）。"
                  "更远处的信息仍会间接到达：经过前面的层和没有窗口的层。",
    "row.masked_causal": "键 {keys} 在 {tok} 之后：因果模型不让任何 token 看到未来（$-\\infty$，权重 0）。",
    "row.masked_window": "键 {keys} 在 {tok} 之前，但相距 {w} 个或更多位置，在这一层 {w} 的滑动窗口之外"
                         "（$-\\infty$，权重 0）。",
    "row.intro_decoder": "模型 {model}，第 {layer} 层，查询头 {head}（共 {H} 个）；文本有 {L} 个 token：{tokens}。"
                         "查询是 {tok}；每个头的维度 $d_k = {dk}$。{operands}取自模型的追踪；之后的一切都在这里用 "
                         "float64 重新计算。",
    "row.operands": "旋转前的 $q$ 和 $k$ 以及 $v$ ",
    "row.operands_normed": "经过模型 QK-norm（下面从投影开始算出它的 RMS 步骤）、但尚未旋转的 $q$ 和 $k$，以及 $v$，",
    "row.trace_check_decoder": "与模型自己的 float32 结果相比：转动后的查询最大相差 {dq}，转动后的键 {dk}，原始分数 {ds}，"
                               "概率 {dw}，输出向量 {dz}。",
}
