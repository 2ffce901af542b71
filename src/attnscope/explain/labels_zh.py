"""The Chinese labels of :mod:`.i18n` (the same keys and placeholders as :mod:`.labels_en`)."""

ZH = {
    # rendering ---------------------------------------------------------------------------------
    "step_n": "第 {n} 步：{title}",
    "warning": "注意：",
    "list_sep": "、",
    "latex.compile": "含中文字符时请用 xelatex 编译（xeCJK）",
    "counting": "位置、行、列、维度、头和层都从 0 开始计数，与 trace、查看器以及 --position、--head、--layer 一致。",

    # toy ---------------------------------------------------------------------------------------
    "toy.title": "手算自注意力",
    "toy.title_named": "手算自注意力：{name}",
    "toy.intro": "{L} 个 token（{tokens}）；查询和键的维度 $d_k = {dk}$，值的维度 $d_v = {dv}$。"
                 "下面的加法和乘法都是精确的（数按写下的样子取），平方根、exp 和 softmax 算到 100 位有效数字，"
                 "只在显示时四舍五入。",
    "toy.x_caption": "X：每个 token 一行，每行 {d} 个数（例如它的词向量）",
    "step.q": "查询 $Q = X W_Q$",
    "step.k": "键 $K = X W_K$",
    "step.v": "值 $V = X W_V$",
    "step.given_qkv": "给定的 $Q$、$K$、$V$",
    "step.normalise_cosine": "单位长度的 $q$ 和 $k$（余弦打分）",
    "step.normalise_qknorm": "层归一化后的 $q$ 和 $k$（QK-norm）",
    "step.normalise": "打分方式 {name} 预处理后的 $q$ 和 $k$",
    "toy.q_why": "每个 token 的查询表示“我在找什么”：$X$ 的第 $i$ 行乘以 $W_Q$ 的每一列。",
    "toy.k_why": "每个 token 的键表示“我能提供什么”：$X$ 的第 $i$ 行乘以 $W_K$ 的每一列。",
    "toy.v_why": "每个 token 的值是别人关注它时它传递出去的内容。",
    "step.scores": "原始分数 $S = Q K^{\\top}$",
    "toy.scores_why": "分数 $S_{ij}$ 是查询 $i$ 与键 $j$ 的点积：token $i$ 的需求与 token $j$ 的供给有多匹配。"
                      "第 $i$ 行是查询 $i$ 对所有键的分数。",
    "toy.rows_cols": "行：查询；列：键",
    "step.scaled": "缩放",
    "toy.scale_why": "除以 $\\sqrt{d_k} = \\sqrt{{dk}} \\approx {sqrt}$。原因：若 $q$ 和 $k$ 的各分量均值为 0、方差为 1，"
                     "$q \\cdot k$ 是 $d_k$ 个这样的乘积之和，方差为 $d_k$；除以 $\\sqrt{d_k}$ 后，无论 $d_k$ 多大，"
                     "方差都回到 1，softmax 不会饱和（见 attnscope explain scaling）。",
    "toy.scale_unscaled": "不缩放：系数 $c = {c}$。",
    "toy.scale_inv_d": "乘以 $c = 1/d_k = {c}$。",
    "toy.scale_cosine": "乘以 $c = 1/\\tau = {c}$。",
    "toy.scale_factor": "乘以打分方式 {name} 的系数：$c = {c}$。",
    "step.masked": "掩码",
    "toy.mask_why": "被屏蔽的位置记为 $-\\infty$：$e^{-\\infty} = 0$，查询不会给它任何权重。",
    "step.exp": "指数 $\\exp(S')$",
    "toy.exp_why": "exp 让每个分数都变成正数，并拉大它们之间的差距：分数高 1，指数就大 $e \\approx 2.718$ 倍。",
    "toy.exp_shift": "第 {rows} 行有大于 {limit} 的分数，其指数会非常大；这些行显示 $e^{s - m}$，$m$ 为该行最大值。"
                     "分子分母同除以 $e^{m}$，权重不变。",
    "toy.exp_shift_one": "第 {rows} 行有大于 {limit} 的分数，其指数会非常大；这一行显示 $e^{s - m}$，$m$ 为该行最大值。"
                         "分子分母同除以 $e^{m}$，权重不变。",
    "step.sums": "每行求和",
    "step.weights": "softmax 权重 $A = E / \\Sigma$",
    "toy.weights_why": "每个指数除以所在行的和，这一行就变成概率分布：权重都为正，且每行之和为 1。",
    "toy.rows_sum_one": "每行之和为 1",
    "step.output": "输出 $O = A V$",
    "toy.output_why": "每个输出行是各个值向量的加权和，权重就是该行的注意力权重。",
    "step.projected": "输出投影 $Y = O W_O$",
    "step.meaning": "输出表示什么",
    "toy.meaning_row": "{tok} 的注意力：{shares}。",
    "toy.share": "{tok} {pct}",
    "toy.meaning_first_vo": "token {tok} 提供的值是 {vs} = {v}，它的输出是 {os} = {o}：它自己的值，混合了它所关注的 "
                            "token 的值（两个向量都在值空间里，宽 $d_v$）。",
    "toy.meaning_first_xy": "token {tok} 原来是 {x}，经过 $W_O$（映射回 $X$ 的宽度）后输出是 {y}：它自己的内容，加上从其他 "
                            "token 取来的信息。",
    "toy.meaning_blind": "{tok} 看不到任何键（所有键都被遮蔽）：它什么也不取，输出是零向量。",
    "toy.blind_row": "第 {rows} 行（{toks}）看不到任何键：它的指数全是 0，和为 0，没有权重（全为 0，不是概率分布）。",
    "toy.blind_rows": "第 {rows} 行（{toks}）看不到任何键：它们的指数全是 0，和为 0，没有权重（全为 0，不是概率分布）。",
    "toy.blind_weights": "第 {row} 行（{tok}）：和为 0，无可相除；每个权重都是 0。",
    "toy.rows_sum_one_but": "每行之和为 1，第 {rows} 行除外：它看不到任何键（全为 0）",
    "toy.rows_sum_one_but_many": "每行之和为 1，第 {rows} 行除外：它们看不到任何键（全为 0）",
    "toy.meaning": "输出已经不只是这个 token 自己的向量：查询（通过分数）决定哪些 token 重要，权重再把它们的值融合进来。"
                   "同一个 token，换一个上下文，输出就不同。",
    # one row --------------------------------------------------------------------------------
    "row.title_model": "逐步计算 {tok} 这一行：第 {layer} 层，第 {head} 个头",
    "row.title_scores": "逐步计算 {tok} 这一行",
    "row.title_scores_plain": "逐步计算注意力的一行",
    "row.intro_model": "模型 {model}，第 {layer} 层，第 {head} 个头；文本共 {L} 个 token：{tokens}。"
                       "查询是 {tok}；每个头的维度 $d_k = {dk}$。q、k、v 取自模型的追踪记录，"
                       "之后的每一步都在这里用 float64 重新计算。",
    "row.intro_scores": "给定一个查询对每个键的 {S} 个原始分数；它们除以 $\\sqrt{d_k} = \\sqrt{{dk}}$。",
    "row.intro_scores_factor": "给定一个查询对每个键的 {S} 个原始分数；它们乘以 $c = {c}$。",
    "row.ambiguous": "{tok} 出现在位置 {positions}；使用第一个，位置 {pos}（指定位置可选择其他的）。",
    "row.step_raw": "原始分数 $s_j = q \\cdot k_j$",
    "row.raw_why": "{tok} 的查询向量与每个 token 的键向量做点积（模型 $Q K^{\\top}$ 的这一行）。",
    "row.raw_given": "给定的 {tok} 对每个键的原始分数。",
    "row.scale_factor": "乘以模型的系数 $c = {c}$。",
    "row.masked": "键 {keys} 被掩码（$-\\infty$）：$e^{-\\infty} = 0$，权重为 0。",
    "row.exp_shift": "最大分数超过 {limit}，$e^{s'}$ 会非常大。这一列显示 $e^{s' - m}$，$m = {m}$（最大分数）："
                     "分子分母同除以 $e^{m}$，概率不变。",
    "row.step_sum": "求和 $\\Sigma$",
    "row.step_prob": "概率 $p_j = e_j / \\Sigma$",
    "row.prob_sum": "合计：{total}。",
    "row.step_output": "值向量的加权求和",
    "row.sum_why": "每个值向量乘以它的概率再相加。只写出 {d} 维中的前 {n} 维；每一维的算法都相同。",
    "row.v_caption": "V：每个键 token 一行（{d} 维中的前 {n} 维）",
    "row.step_result": "结果",
    "row.meaning": "{tok} 的注意力分配：{shares}。",
    "row.result": "{tok} 的新向量（前 {n} 维）：{z}。",
    "row.trace_check": "与模型自己的 float32 结果相比：原始分数最大相差 {ds}，概率最大相差 {dw}，输出向量最大相差 {dz}。",
    "col.pos": "位置",
    "col.key": "键 token",
    "col.raw": "原始分数 $s$",
    "col.scaled": "缩放后 $s'$",
    "col.exp": "$e^{s'}$",
    "col.exp_shift": "$e^{s' - m}$",
    "col.prob": "概率 $p$",
    "col.percent": "占比",

    # scaling --------------------------------------------------------------------------------
    "sc.title": "为什么要除以 $\\sqrt{d_k}$？（d_k = {dk}）",
    "sc.intro": "分数在 softmax 之前要除以 $\\sqrt{d_k} = \\sqrt{{dk}} = {root}$。下面依次说明：点积为什么需要缩放，"
                "缩放对 softmax 有什么影响，不缩放时梯度会怎样。",
    "sc.step_growth": "点积随维度增大",
    "sc.growth": "取 $q = k = [0.5, 0.5, \\ldots, 0.5]$：每多一维，$q \\cdot k$ 就多加 $0.25$，所以它与 $d$ 成正比地增长。",
    "sc.col_d": "$d_k$",
    "sc.col_qk_half": "$q = k = [0.5, \\ldots]$ 时的 $q \\cdot k$",
    "sc.step_variance": "方差的推导",
    "sc.var_theory": "设 $q$ 和 $k$ 的各分量相互独立，均值为 0，方差为 1。每个乘积 $q_i k_i$ 的均值为 0，方差为 "
                     "$\\mathbb{E}[q_i^2]\\,\\mathbb{E}[k_i^2] = 1$，独立项的方差可以相加：",
    "sc.var_sample": "每一行用 {n} 对随机标准正态向量验证（随机种子 {seed}）：",
    "sc.col_var_theory": "Var(q·k)，理论",
    "sc.col_var_sampled": "Var(q·k)，抽样",
    "sc.col_std": "标准差 $= \\sqrt{d_k}$",
    "sc.col_var_scaled": "Var(q·k / √d_k)，抽样",
    "sc.var_result": "在 $d_k = {dk}$ 时，分数的标准差约为 {std}（抽样方差 {var}）；除以 $\\sqrt{d_k}$ 后方差为 {vs}，接近 1。",
    "sc.step_softmax": "缩放与不缩放的 softmax",
    "sc.softmax_intro": "同一组分数，一次原样，一次除以 $\\sqrt{{dk}} = {root}$：",
    "sc.vec_caption": "分数 {v}",
    "sc.col_j": "$j$",
    "sc.col_s": "$s_j$",
    "sc.col_p_raw": "softmax($s$)",
    "sc.col_s_scaled": "$s_j / \\sqrt{d_k}$",
    "sc.col_p_scaled": "softmax($s / \\sqrt{d_k}$)",
    "sc.softmax_max": "最大权重：不缩放 {top}，缩放后 {top_s}。熵：{h} 对 {h_s} nats（均匀分布为 {hmax}）。"
                      "不缩放时这一行几乎是 one-hot。",
    "sc.article_raw": "原文给出 softmax({v}) $\\approx$ {printed}；计算结果：{computed}。",
    "sc.article_scaled": "原文给出 softmax({v} / 8) = {printed}；计算结果：{computed}。",
    "sc.article_digits": "按原文自己的精度，计算结果是 {shown}：{diffs}。",
    "sc.article_diff": "第 {j} 项是 {c}，不是 {p}",
    "sc.article_same": "按原文自己的精度，印出的每一位都对。",
    "sc.step_jacobian": "softmax 的雅可比矩阵：饱和的行为什么学不动",
    "sc.jac_why": "传回分数（再传到 $q$ 和 $k$）的梯度要乘以这个矩阵。每个元素都是概率的乘积，所以当某个 $p_i$ 接近 1、"
                  "其余接近 0 时，所有元素都接近 0。",
    "sc.jac_raw": "softmax({v}) 的 $J$，不缩放",
    "sc.jac_scaled": "softmax({v} / {root}) 的 $J$",
    "sc.jac_norms": "最大元素：不缩放 {a}，缩放后 {b}；Frobenius 范数 {fa} 对 {fb}，缩放后大 {ratio} 倍。",
    "sc.ce_grad": "假设正确答案是位置 {target}（对这些概率做交叉熵），梯度 $p - y$ 不缩放时为 {g}，缩放后为 {gs}。",
    "sc.jac_conclusion": "饱和的行几乎传不回梯度：模型几乎学不到东西。除以 $\\sqrt{d_k}$ 让分数保持单位方差，"
                         "权重分布保持柔和，梯度得以正常传播。",
    "sc.article_grad": "原文给出的梯度是 {g} 和 {gs}。",
    # check ----------------------------------------------------------------------------------
    "check.title": "检查 {source}",
    "check.problem_toy": "题目：{what}，{L} 个 token（{tokens}）。",
    "check.problem_model": "题目：模型 {model}，第 {layer} 层，第 {head} 个头，查询 {tok}（位置 {pos}），文本“{text}”。",
    "check.problem_scores": "题目：给定的一行 {S} 个分数，$d_k = {dk}$。",
    "check.rule": "每个数按你写出的小数位数判断：0.71 必须等于精确值四舍五入到 2 位小数，"
                  "0.707 必须等于精确值四舍五入到 3 位小数（1.7705e44：到 5 位有效数字）。",
    "check.prec_decimals": " {d} 位小数",
    "check.prec_decimal": " 1 位小数",
    "check.prec_whole": "整数",
    "check.prec_digits": " {n} 位有效数字",
    "check.prec_digit": " 1 位有效数字",
    "check.conv_plain": "{step}，第 {row} 行：你写的是 $e^{s'}$ 本身（这一行最大的分数是 $m = {m}$）；逐步计算里写的是 "
                        "$e^{s' - m}$。两种都对：除以各自的和，得到的权重相同。",
    "check.conv_shifted": "{step}，第 {row} 行：你写的是 $e^{s' - m}$，$m = {m}$ 是这一行最大的分数，和逐步计算一样"
                          "（写 $e^{s'}$ 本身也对）。",
    "check.sec_conventions": "你怎样写指数",
    "check.col_step": "步骤",
    "check.col_n": "已作答",
    "check.col_correct": "正确",
    "check.col_rounding": "舍入",
    "check.col_carried": "连带",
    "check.col_wrong": "错误",
    "check.col_blank": "空白",
    "check.where": "{step}，第 {row} 行，第 {col} 列",
    "check.where_entry": "{step}，第 {col} 项",
    "check.line_wrong": "{where}：你写的是 {wrote}；保留{prec}的正确值：{right}（精确值 {exact}）。",
    "check.line_carried": "{where}：你写的是 {wrote}；正确值：{right}（精确值 {exact}）。这不是新的错误："
                          "它来自你的 {sources}（用你自己的数算出来是 {recomputed}）。",
    "check.line_rounding": "{where}：你写的是 {wrote}；精确值 {exact}（保留{prec}为 {right}）。可以接受："
                           "它来自你舍入后的 {sources}（用你的数算出来是 {recomputed}）；那一步请多保留几位小数。",
    "check.sec_wrong": "错误：新的错误",
    "check.sec_carried": "连带错误：来自前面的错误",
    "check.sec_rounding": "作为舍入误差接受",
    "check.first_wrong_row": "计算第一次出错在 {step}，第 {row} 行。",
    "check.first_wrong": "计算第一次出错在 {step}。",
    "check.only_carried": "有些数沿用了前面的错误。",
    "check.result_ok": "全部正确：{correct} 个正确，{rounding} 个作为舍入误差接受。",
    "check.result_bad": "{wrong} 个错误，{carried} 个连带错误，{correct} 个正确，{rounding} 个作为舍入误差接受。",
    # exercise -------------------------------------------------------------------------------
    "ex.title": "练习 {seed}：手算自注意力（{L} 个 token，{d} 维）",
    "ex.solution_title": "练习 {seed}：详细解答",
    "ex.intro": "请为这 {L} 个 token 手算单头自注意力。每行是一个 token；$Q = X W_Q$，$K = X W_K$，$V = X W_V$，$d_k = {d}$。",
    "ex.step_tasks": "任务",
    "ex.task_1": "计算 $Q$、$K$ 和 $V$。",
    "ex.task_2": "计算原始分数 $S = Q K^{\\top}$。",
    "ex.task_3": "缩放：$S' = S / \\sqrt{d_k}$。",
    "ex.task_4": "对每个缩放后的分数求 $e^{s}$，并把每行加起来。",
    "ex.task_5": "每个指数除以所在行的和，得到 softmax 权重 $A$。",
    "ex.task_6": "计算输出 $O = A V$：每一行都是 $V$ 各行的加权和。",
    "ex.decimals": "把你的数填进答案文件，然后对它运行 attnscope check。每个数按你写出的小数位数判断，"
                   "所以算到几位就写几位（建议 4 位）。",
    "ex.step_questions": "思考题",
    "ex.q1": "题 1：为什么 softmax 之前要把分数除以 $\\sqrt{d_k}$？",
    "ex.q2": "题 2：softmax 包含哪两个操作？各起什么作用？",
    "ex.q3": "题 3：加权求和之后，{tok} 的新向量里包含了谁的信息？",
    "ex.step_answers": "思考题答案",
    "ex.a1": "答 1：$q \\cdot k$ 的方差随 $d_k$ 增大（分量方差为 1 时等于 $d_k$；在 BERT 的 $d_k = 64$ 下抽样得到 {var}），"
             "分数太大时 softmax 几乎变成 one-hot，梯度消失。在本题中，{tok} 的分数是 {s}：不缩放时 softmax 为 {p}；"
             "除以 $\\sqrt{{dk}} = {root}$ 后为 {ps}，分布更柔和。",
    "ex.a2": "答 2：先取指数，再归一化。exp 让每个分数变成正数并拉大差距：{tok} 缩放后的分数 {s} 变成 {e}；"
             "差 {gap} 变成 {ratio} 倍。归一化除以总和 {sum}，得到的权重 {w} 都为正，且和为 1。",
    "ex.a3": "答 3：它的权重是：{shares}。所以新向量 {o}（它自己的值是 {v}，输入是 {x}）主要是 {top} 的值，再按这些比例混合了"
             "其他 token 的值。",
    "ex.file_comment1": "attnscope 练习 {seed}：把 ~ 换成你的数，然后运行：attnscope check <本文件>",
    "ex.file_comment2": "算到几位小数就写几位；没算的地方保留 ~。",
    "ex.wrote": "空白答案文件已写入 {path}；填好后运行：attnscope check {path}",
    "ex.kept": "{path} 已存在，未改动（里面可能有你的答案）；检查它：attnscope check {path}",
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
