"""The labels of the multi-head worked example (explain/multihead.py), in English and Chinese
(merged into :mod:`.i18n` with the others)."""

EN = {
    # multi-head by hand (explain/multihead.py) ---------------------------------------------------
    "mh.title": "Multi-head attention worked out by hand",
    "mh.title_named": "Multi-head attention worked out by hand: {name}",
    "mh.intro": "{L} tokens ({tokens}) of $d_{model} = {d}$ numbers each; {H} query heads, each with "
                "$d_{head} = {dh}$ query/key features and $d_v = {dv}$ value features. Every number below is "
                "computed exactly from the given numbers (the products) or to many more digits than shown, and "
                "only rounded for display.",
    "mh.intro_mha": "Each query head has its own key/value head ($n_{kv} = {Hkv}$: ordinary multi-head attention).",
    "mh.intro_gqa": "{Hkv} key/value heads, each shared by {group} query heads (grouped-query attention).",
    "mh.intro_why": "Each head is an attention of its own, with its own learned projections $W_Q^{(i)}$, "
                    "$W_K^{(i)}$, $W_V^{(i)}$ ($d_{model} \\times d_{head}$ each): the heads look at the same tokens "
                    "in different ways, and $W_O$ mixes what they found. In code the heads are not computed one "
                    "by one: one large product computes all of them, a re-indexing (view, transpose) separates "
                    "them, attention runs for all heads at once, and the heads are put side by side again.",
    "mh.conventions": "Column Q1.0 of a matrix is feature 0 of query head 1.",
    "mh.wqkv_caption": "W_QKV (learned): [W_Q | W_K | W_V] side by side, {cq} + {ck} + {cv} columns",
    "mh.step_fused": "one fused projection $[Q \\mid K \\mid V] = X W_{QKV}$",
    "mh.step_separate": "the projections $Q = X W_Q$, $K = X W_K$, $V = X W_V$, every head at once",
    "mh.fused_why": "All heads' queries, keys and values come out of one matrix product: the {n} columns of "
                    "$W_{QKV}$ are the {m} blocks $W_Q^{(i)}$, $W_K^{(g)}$, $W_V^{(g)}$ side by side. One large "
                    "product does exactly the multiplications of {m} small ones, in one call.",
    "mh.separate_why": "$W_Q$ holds the {H} heads' own projections side by side ({H} blocks of {dh} columns); "
                       "likewise $W_K$ and $W_V$. One product per matrix computes every head.",
    "mh.cols_caption": "columns: Qh.f = feature f of query head h (Kg.f, Vg.f: of key/value head g)",
    "mh.step_split": "into heads: view and transpose (no arithmetic)",
    "mh.split_why": "Column block $i$ of $Q$ becomes head $i$'s own matrix $Q^{(i)}$ ({L} × {dh}). view(L, H, "
                    "$d_{head}$) cuts each row into H pieces of $d_{head}$ numbers; transpose(0, 1) puts the head "
                    "index first, so that the attention of every head runs as one batched product.",
    "mh.no_arithmetic": "Nothing is computed here: every number keeps its value, only its place changes.",
    "mh.col_column": "column of {m}",
    "mh.col_part": "part",
    "mh.col_head": "head",
    "mh.col_feature": "feature",
    "mh.col_to": "goes to",
    "mh.split_caption": "where each column of {m} goes",
    "mh.kv_sharing": "K and V have fewer heads than Q: several query heads read the same key/value head (next step).",
    "mh.step_own": "each head on its own: $Q^{(i)} = X W_Q^{(i)}$",
    "mh.own_why": "$W_Q^{(i)}$ is head $i$'s block of columns of the learned $W_Q$. Head {h} computed alone, "
                  "with its own {wq} (columns {cols} of $W_Q$), reading all {d} features of every token:",
    "mh.col_wcols": "columns of W",
    "mh.col_diff": "largest |X·W⁽ⁱ⁾ − block|",
    "mh.own_caption": "each head computed alone with its own block of W, against its block of the fused product",
    "mh.own_same": "Every block is identical, entry for entry: the fused product is nothing but the heads' own "
                   "products side by side.",
    "mh.own_differs": "The blocks differ: the fused product is not the heads' products side by side.",
    "mh.not_a_slice": "Not a slice of the input: features {cols} of {tok} are {x}, but its query in head {h} is "
                      "{q}. Every head projects all the features of a token, through weights it learned.",
    "mh.step_head_qkv": "head {h}: its $q$, $k$, $v$",
    "mh.step_head": "head {h}: {title}",
    "mh.head_qkv": "Query head {h} takes columns {qc} of $Q$ and reads key/value head {g}: columns {kc} of $K$ "
                   "and {vc} of $V$. From here on, head {h} is ordinary single-head attention.",
    "mh.step_concat": "concatenation of the heads (no arithmetic)",
    "mh.concat_why": "The heads' outputs are put side by side again: transpose(0, 1) and reshape(L, $H \\cdot d_v$), "
                     "the inverse of the split.",
    "mh.col_from": "head output",
    "mh.col_concat": "columns of Concat",
    "mh.step_wo": "output projection $Y = \\mathrm{Concat}\\,W_O$",
    "mh.wo_why": "$W_O$ ({r} × {c}, learned) mixes the heads: each output feature reads the numbers of every "
                 "head. Split by heads, $Y = \\sum_i z^{(i)} W_O^{(i)}$, where $W_O^{(i)}$ are the {dv} rows of "
                 "$W_O$ that meet head $i$'s columns:",
    "mh.wo_share": "head {h}'s share (rows {rows} of W_O)",
    "mh.wo_sum": "Added up, the heads' shares give $Y$ exactly.",
    "mh.wo_sum_float": "Added up, the heads' shares give $Y$ (up to the last digit of float64).",
    "mh.step_meaning": "what the heads did",
    "mh.meaning_head": "Head {h}: {rows}.",
    "mh.meaning_row": "{tok} looks most at {top} ({pct})",
    "mh.meaning_even": "{tok} spreads its attention evenly ({pct} each)",
    "mh.meaning": "The same tokens get different weights in different heads: each head's learned $W_Q^{(i)}$ and "
                  "$W_K^{(i)}$ ask a question of their own. $W_O$ blends the {H} answers into one vector per token.",
}

ZH = {
    # multi-head by hand (explain/multihead.py) ---------------------------------------------------
    "mh.title": "手算多头注意力",
    "mh.title_named": "手算多头注意力：{name}",
    "mh.intro": "{L} 个 token（{tokens}），每个 $d_{model} = {d}$ 个数；{H} 个查询头，每个头的查询/键有 "
                "$d_{head} = {dh}$ 维，值有 $d_v = {dv}$ 维。下面每个数都由给定的数精确算出（乘积部分），"
                "或以远多于显示位数的精度算出，只在显示时舍入。",
    "mh.intro_mha": "每个查询头有自己的键/值头（$n_{kv} = {Hkv}$：普通的多头注意力）。",
    "mh.intro_gqa": "{Hkv} 个键/值头，每个由 {group} 个查询头共享（分组查询注意力）。",
    "mh.intro_why": "每个头都是一个独立的注意力，有自己学到的投影 $W_Q^{(i)}$、$W_K^{(i)}$、$W_V^{(i)}$"
                    "（各为 $d_{model} \\times d_{head}$）：各头用不同的方式看同样的 token，$W_O$ 再把它们的发现"
                    "融合起来。代码里并不逐个计算各头：一次大矩阵乘法算出所有头，重新索引（view、transpose）"
                    "把它们分开，所有头的注意力一起计算，最后再把各头拼接起来。",
    "mh.conventions": "矩阵的列 Q1.0 是查询头 1 的特征 0。",
    "mh.wqkv_caption": "W_QKV（学到的）：[W_Q | W_K | W_V] 并排，{cq} + {ck} + {cv} 列",
    "mh.step_fused": "一次融合投影 $[Q \\mid K \\mid V] = X W_{QKV}$",
    "mh.step_separate": "投影 $Q = X W_Q$、$K = X W_K$、$V = X W_V$，所有头一次算出",
    "mh.fused_why": "所有头的查询、键和值来自同一次矩阵乘法：$W_{QKV}$ 的 {n} 列就是 {m} 个块 $W_Q^{(i)}$、"
                    "$W_K^{(g)}$、$W_V^{(g)}$ 并排放在一起。一次大乘法做的正是 {m} 次小乘法的那些乘法，只是一次调用完成。",
    "mh.separate_why": "$W_Q$ 把 {H} 个头各自的投影并排放在一起（{H} 块，每块 {dh} 列）；$W_K$、$W_V$ 同理。"
                       "每个矩阵乘一次就算出所有头。",
    "mh.cols_caption": "列：Qh.f = 查询头 h 的第 f 个特征（Kg.f、Vg.f：键/值头 g 的）",
    "mh.step_split": "分成各头：view 与 transpose（没有计算）",
    "mh.split_why": "$Q$ 的第 $i$ 个列块成为头 $i$ 自己的矩阵 $Q^{(i)}$（{L} × {dh}）。view(L, H, $d_{head}$) "
                    "把每行切成 H 段、每段 $d_{head}$ 个数；transpose(0, 1) 把头的下标放到最前面，"
                    "这样所有头的注意力可以作为一次批量乘法计算。",
    "mh.no_arithmetic": "这里没有任何计算：每个数的值不变，只是位置变了。",
    "mh.col_column": "{m} 的列",
    "mh.col_part": "部分",
    "mh.col_head": "头",
    "mh.col_feature": "特征",
    "mh.col_to": "去向",
    "mh.split_caption": "{m} 的每一列去了哪里",
    "mh.kv_sharing": "K 和 V 的头比 Q 少：几个查询头读取同一个键/值头（见下一步）。",
    "mh.step_own": "单独计算每个头：$Q^{(i)} = X W_Q^{(i)}$",
    "mh.own_why": "$W_Q^{(i)}$ 是学到的 $W_Q$ 中属于头 $i$ 的那几列。单独计算头 {h}：用它自己的 {wq}"
                  "（$W_Q$ 的第 {cols} 列），读取每个 token 的全部 {d} 个特征：",
    "mh.col_wcols": "W 的列",
    "mh.col_diff": "最大 |X·W⁽ⁱ⁾ − 块|",
    "mh.own_caption": "每个头用自己的 W 块单独计算，与融合乘积中对应的块比较",
    "mh.own_same": "每个块都逐项相同：融合乘积不过是各头自己的乘积并排放在一起。",
    "mh.own_differs": "这些块不同：融合乘积不是各头乘积的并排。",
    "mh.not_a_slice": "不是输入的切片：{tok} 的第 {cols} 个特征是 {x}，但它在头 {h} 中的查询是 {q}。"
                      "每个头都通过自己学到的权重，投影 token 的全部特征。",
    "mh.step_head_qkv": "头 {h}：它的 $q$、$k$、$v$",
    "mh.step_head": "头 {h}：{title}",
    "mh.head_qkv": "查询头 {h} 取 $Q$ 的第 {qc} 列，读取键/值头 {g}：$K$ 的第 {kc} 列和 $V$ 的第 {vc} 列。"
                   "从这里开始，头 {h} 就是普通的单头注意力。",
    "mh.step_concat": "拼接各头（没有计算）",
    "mh.concat_why": "各头的输出重新并排放在一起：transpose(0, 1) 再 reshape(L, $H \\cdot d_v$)，是拆分的逆操作。",
    "mh.col_from": "头的输出",
    "mh.col_concat": "Concat 的列",
    "mh.step_wo": "输出投影 $Y = \\mathrm{Concat}\\,W_O$",
    "mh.wo_why": "$W_O$（{r} × {c}，学到的）把各头混合起来：每个输出特征都读取所有头的数。按头拆开，"
                 "$Y = \\sum_i z^{(i)} W_O^{(i)}$，其中 $W_O^{(i)}$ 是 $W_O$ 中与头 $i$ 的列相乘的那 {dv} 行：",
    "mh.wo_share": "头 {h} 的贡献（W_O 的第 {rows} 行）",
    "mh.wo_sum": "各头的贡献相加，正好等于 $Y$。",
    "mh.wo_sum_float": "各头的贡献相加等于 $Y$（误差在 float64 的最后一位）。",
    "mh.step_meaning": "各头做了什么",
    "mh.meaning_head": "头 {h}：{rows}。",
    "mh.meaning_row": "{tok} 最关注 {top}（{pct}）",
    "mh.meaning_even": "{tok} 的注意力平均分配（各 {pct}）",
    "mh.meaning": "同样的 token 在不同的头里得到不同的权重：每个头学到的 $W_Q^{(i)}$ 和 $W_K^{(i)}$ 提出自己的问题。"
                  "$W_O$ 把 {H} 个回答融合成每个 token 的一个向量。",
}
