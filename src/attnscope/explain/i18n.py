"""Every label of the worked calculations, in English and Chinese.

Keys are shared; a test checks that both languages have the same keys and the same
``{placeholders}``. Inline math is TeX between ``$…$`` (kept by the LaTeX renderer, turned into
Unicode by the others). Placeholders are ``{name}``; inside math, avoid TeX groups that spell a
parameter's name.
"""

from __future__ import annotations

LANGS = ("en", "zh")

EN = {
    # rendering ---------------------------------------------------------------------------------
    "step_n": "Step {n}: {title}",
    "warning": "Note:",
    "list_sep": ", ",
    "latex.compile": "compile with xelatex when the text has Chinese characters (xeCJK)",

    # toy ---------------------------------------------------------------------------------------
    "toy.title": "Self-attention worked out by hand",
    "toy.title_named": "Self-attention worked out by hand: {name}",
    "toy.intro": "{L} tokens ({tokens}); queries and keys have $d_k = {dk}$ dimensions, values $d_v = {dv}$. "
                 "Every number below is computed in float64 and only rounded for display.",
    "toy.x_caption": "X: one row per token, {d} numbers each (e.g. its embedding)",
    "step.q": "queries $Q = X W_Q$",
    "step.k": "keys $K = X W_K$",
    "step.v": "values $V = X W_V$",
    "step.given_qkv": "the given $Q$, $K$, $V$",
    "step.normalise_cosine": "unit-length $q$ and $k$ (cosine scoring)",
    "step.normalise_qknorm": "layer-normalised $q$ and $k$ (QK-norm)",
    "step.normalise": "$q$ and $k$ as the scoring {name} prepares them",
    "toy.q_why": "Each token's query says what it is looking for: row $i$ of $X$ times each column of $W_Q$.",
    "toy.k_why": "Each token's key says what it offers to the others: row $i$ of $X$ times each column of $W_K$.",
    "toy.v_why": "Each token's value is the content it passes on when someone attends to it.",
    "step.scores": "raw scores $S = Q K^{\\top}$",
    "toy.scores_why": "Score $S_{ij}$ is the dot product of query $i$ with key $j$: how well token $i$'s "
                      "question matches token $j$'s offer. Row $i$ holds query $i$ against every key.",
    "toy.rows_cols": "rows: queries; columns: keys",
    "step.scaled": "scaling",
    "toy.scale_why": "Divide by $\\sqrt{d_k} = \\sqrt{{dk}} \\approx {sqrt}$. Why: if the entries of $q$ and $k$ "
                     "have mean 0 and variance 1, $q \\cdot k$ is a sum of $d_k$ such products and has "
                     "variance $d_k$; dividing by $\\sqrt{d_k}$ brings the variance back to 1 for any $d_k$, so "
                     "softmax does not saturate (see attnscope explain scaling).",
    "toy.scale_unscaled": "No scaling: the factor is $c = {c}$.",
    "toy.scale_inv_d": "Multiply by $c = 1/d_k = {c}$.",
    "toy.scale_cosine": "Multiply by $c = 1/\\tau = {c}$.",
    "toy.scale_factor": "Multiply by the factor of the scoring {name}: $c = {c}$.",
    "step.masked": "masking",
    "toy.mask_why": "Blocked pairs get $-\\infty$: $e^{-\\infty} = 0$, so a query gives them no weight.",
    "step.exp": "exponentials $\\exp(S')$",
    "toy.exp_why": "exp makes every score positive and stretches the gaps between them: a score higher by 1 "
                   "becomes $e \\approx 2.718$ times as large.",
    "toy.exp_shift": "In rows {rows} the largest score is above {limit} and its exponential would be huge, "
                     "so these rows show $e^{s - m}$ with $m$ the row maximum. Dividing numerator and denominator "
                     "by the same $e^{m}$ leaves the weights unchanged.",
    "toy.exp_shift_one": "In row {rows} the largest score is above {limit} and its exponential would be huge, "
                         "so this row shows $e^{s - m}$ with $m$ the row maximum. Dividing numerator and "
                         "denominator by the same $e^{m}$ leaves the weights unchanged.",
    "step.sums": "row sums",
    "step.weights": "softmax weights $A = E / \\Sigma$",
    "toy.weights_why": "Dividing each exponential by its row sum turns the row into a probability distribution: "
                       "all weights are positive and each row adds up to 1.",
    "toy.rows_sum_one": "each row sums to 1",
    "step.output": "output $O = A V$",
    "toy.output_why": "Each output row is the weighted sum of the value rows, with that row's weights.",
    "step.projected": "output projection $Y = O W_O$",
    "step.meaning": "what the output means",
    "toy.meaning_row": "{tok} takes {shares}.",
    "toy.share": "{pct} from {tok}",
    "toy.meaning_first": "Token {tok} started as {x} and comes out as {o}: its own content mixed with what it "
                         "took from the other tokens.",
    "toy.meaning": "The output is no longer the token's own vector: the query chose (through the scores) which "
                   "tokens matter, and the weights blended their values in. Same token, different context, "
                   "different output.",
    # one row --------------------------------------------------------------------------------
    "row.title_model": "The row of {tok}: layer {layer}, head {head}, worked out",
    "row.title_scores": "The row of {tok} worked out",
    "row.title_scores_plain": "One row of attention worked out",
    "row.intro_model": "Model {model}, layer {layer}, head {head}; the text has {L} tokens: {tokens}. "
                       "The query is {tok}; each head works with $d_k = {dk}$ dimensions. q, k and v are "
                       "taken from the model's trace; everything after them is recomputed here in float64.",
    "row.intro_scores": "{S} raw scores of one query against every key, given; they are divided by $\\sqrt{d_k} = \\sqrt{{dk}}$.",
    "row.intro_scores_factor": "{S} raw scores of one query against every key, given; they are multiplied by $c = {c}$.",
    "row.ambiguous": "{tok} occurs at positions {positions}; using the first, position {pos} "
                     "(pass a position to choose another).",
    "row.step_raw": "raw scores $s_j = q \\cdot k_j$",
    "row.raw_why": "The query vector of {tok} against the key vector of every token (the model's $Q K^{\\top}$ row).",
    "row.raw_given": "The given raw scores of {tok} against every key.",
    "row.scale_factor": "Multiply by the model's factor $c = {c}$.",
    "row.masked": "Keys {keys} are masked ($-\\infty$): they get $e^{-\\infty} = 0$ and weight 0.",
    "row.exp_shift": "The largest score is above {limit}, so $e^{s'}$ would be huge. The column shows "
                     "$e^{s' - m}$ with $m = {m}$ (the largest score): numerator and denominator are both divided "
                     "by $e^{m}$, so the probabilities are the same.",
    "row.step_sum": "the sum $\\Sigma$",
    "row.step_prob": "probabilities $p_j = e_j / \\Sigma$",
    "row.prob_sum": "Together: {total}.",
    "row.step_output": "weighted sum of the value vectors",
    "row.sum_why": "Each value vector times its probability, added up. Only the first {n} of {d} dimensions are "
                   "written out; every dimension is computed the same way.",
    "row.v_caption": "V: one row per key token (first {n} of {d} dimensions)",
    "row.step_result": "result",
    "row.meaning": "{tok} puts its attention on {shares}.",
    "row.result": "The new vector of {tok} (first {n} dimensions): {z}.",
    "row.trace_check": "Compared with the model's own float32 numbers: largest difference {ds} in the raw "
                       "scores, {dw} in the probabilities, {dz} in the output vector.",
    "col.pos": "position",
    "col.key": "key token",
    "col.raw": "raw score $s$",
    "col.scaled": "scaled $s'$",
    "col.exp": "$e^{s'}$",
    "col.exp_shift": "$e^{s' - m}$",
    "col.prob": "probability $p$",
    "col.percent": "share",

    # scaling --------------------------------------------------------------------------------
    "sc.title": "Why divide by $\\sqrt{d_k}$? (d_k = {dk})",
    "sc.intro": "Scores are divided by $\\sqrt{d_k} = \\sqrt{{dk}} = {root}$ before softmax. Below: why the "
                "dot products need it, what it does to softmax, and what happens to the gradient without it.",
    "sc.step_growth": "dot products grow with the dimension",
    "sc.growth": "Take $q = k = [0.5, 0.5, \\ldots, 0.5]$: $q \\cdot k$ adds $0.25$ once per dimension, so it "
                 "grows in proportion to $d$.",
    "sc.col_d": "$d_k$",
    "sc.col_qk_half": "$q \\cdot k$ for $q = k = [0.5, \\ldots]$",
    "sc.step_variance": "the variance argument",
    "sc.var_theory": "Let the entries of $q$ and $k$ be independent with mean 0 and variance 1. Each product "
                     "$q_i k_i$ then has mean 0 and variance $\\mathbb{E}[q_i^2]\\,\\mathbb{E}[k_i^2] = 1$, and "
                     "the variances of independent terms add up:",
    "sc.var_sample": "Checked on {n} random pairs of standard-normal vectors per row (seed {seed}):",
    "sc.col_var_theory": "Var(q·k), theory",
    "sc.col_var_sampled": "Var(q·k), sampled",
    "sc.col_std": "std $= \\sqrt{d_k}$",
    "sc.col_var_scaled": "Var(q·k / √d_k), sampled",
    "sc.var_result": "At $d_k = {dk}$ the scores spread with standard deviation about {std} (sampled variance "
                     "{var}); divided by $\\sqrt{d_k}$ their variance is {vs}, close to 1.",
    "sc.step_softmax": "softmax with and without the scale",
    "sc.softmax_intro": "The same scores, once as they are and once divided by $\\sqrt{{dk}} = {root}$:",
    "sc.vec_caption": "scores {v}",
    "sc.col_j": "$j$",
    "sc.col_s": "$s_j$",
    "sc.col_p_raw": "softmax($s$)",
    "sc.col_s_scaled": "$s_j / \\sqrt{d_k}$",
    "sc.col_p_scaled": "softmax($s / \\sqrt{d_k}$)",
    "sc.softmax_max": "Largest weight: {top} without the scale, {top_s} with it. Entropy: {h} vs {h_s} nats "
                      "(a uniform row has {hmax}). Without the scale the row is almost one-hot.",
    "sc.article_raw": "The article prints softmax({v}) $\\approx$ {printed}; computed: {computed}.",
    "sc.article_scaled": "The article prints softmax({v} / 8) = {printed}; computed: {computed}.",
    "sc.step_jacobian": "the softmax Jacobian: why saturated rows stop learning",
    "sc.jac_why": "The gradient that reaches the scores (and through them $q$ and $k$) is multiplied by this "
                  "matrix. Each entry is a product of probabilities, so when one $p_i$ is almost 1 and the "
                  "others almost 0, every entry is almost 0.",
    "sc.jac_raw": "$J$ for softmax({v}), no scale",
    "sc.jac_scaled": "$J$ for softmax({v} / {root})",
    "sc.jac_norms": "Largest entry: {a} without the scale, {b} with it; Frobenius norm {fa} vs {fb}, "
                    "{ratio} times larger with the scale.",
    "sc.ce_grad": "If the right answer were position {target} (cross-entropy on these probabilities), the "
                  "gradient $p - y$ would be {g} without the scale and {gs} with it.",
    "sc.jac_conclusion": "A saturated row passes almost no gradient back: the model barely learns from it. "
                         "Dividing by $\\sqrt{d_k}$ keeps the scores near unit variance, the rows soft, and the "
                         "gradient alive.",
    "sc.article_grad": "The article gives these gradients as {g} and {gs}.",
    # check ----------------------------------------------------------------------------------
    "check.title": "Checking {source}",
    "check.problem_toy": "Problem: {what}, {L} tokens ({tokens}).",
    "check.problem_model": "Problem: model {model}, layer {layer}, head {head}, query {tok}, text “{text}”.",
    "check.problem_scores": "Problem: one row of {S} given scores, $d_k = {dk}$.",
    "check.rule": "Each number is judged at the decimals you wrote it with: 0.71 must be the exact value "
                  "rounded to 2 decimals, 0.707 the exact value rounded to 3.",
    "check.col_step": "step",
    "check.col_n": "answered",
    "check.col_correct": "correct",
    "check.col_rounding": "rounding",
    "check.col_carried": "carried",
    "check.col_wrong": "wrong",
    "check.col_blank": "empty",
    "check.where": "{step}, row {row}, column {col}",
    "check.where_entry": "{step}, entry {col}",
    "check.line_wrong": "{where}: you wrote {wrote}; correct to {d} decimals: {right} (exact {exact}).",
    "check.line_carried": "{where}: you wrote {wrote}; correct: {right} (exact {exact}). Not a new mistake: "
                          "it follows from your {sources} (from your own numbers it is {recomputed}).",
    "check.line_rounding": "{where}: you wrote {wrote}; exact {exact} ({right} to {d} decimals). Accepted: it "
                           "follows from your rounded {sources} (from your numbers: {recomputed}); keep more "
                           "decimals there.",
    "check.sec_wrong": "Wrong: new mistakes",
    "check.sec_carried": "Carried: they follow from an earlier mistake",
    "check.sec_rounding": "Accepted as rounding",
    "check.first_wrong_row": "The calculation first goes wrong at {step}, row {row}.",
    "check.first_wrong": "The calculation first goes wrong at {step}.",
    "check.only_carried": "Some numbers carry an earlier mistake.",
    "check.result_ok": "All correct: {correct} correct, {rounding} accepted as rounding.",
    "check.result_bad": "{wrong} wrong, {carried} carried, {correct} correct, {rounding} accepted as rounding.",
    # exercise -------------------------------------------------------------------------------
    "ex.title": "Exercise {seed}: self-attention by hand ({L} tokens, {d} dimensions)",
    "ex.solution_title": "Exercise {seed}: worked solution",
    "ex.intro": "Compute single-head self-attention by hand for these {L} tokens. Rows are tokens; "
                "$Q = X W_Q$, $K = X W_K$, $V = X W_V$ and $d_k = {d}$.",
    "ex.step_tasks": "tasks",
    "ex.task_1": "Compute $Q$, $K$ and $V$.",
    "ex.task_2": "Compute the raw scores $S = Q K^{\\top}$.",
    "ex.task_3": "Scale them: $S' = S / \\sqrt{d_k}$.",
    "ex.task_4": "Take $e^{s}$ of every scaled score and add up each row.",
    "ex.task_5": "Divide each exponential by its row sum: the softmax weights $A$.",
    "ex.task_6": "Compute the output $O = A V$: each row is a weighted sum of the rows of $V$.",
    "ex.decimals": "Write your numbers into the answers file and run attnscope check on it. Each number is "
                   "judged at the decimals you write, so write as many as you computed (4 is a good choice).",
    "ex.step_questions": "questions",
    "ex.q1": "Question 1. Why are the scores divided by $\\sqrt{d_k}$ before softmax?",
    "ex.q2": "Question 2. Softmax is two operations. Which, and what does each do?",
    "ex.q3": "Question 3. After the weighted sum, whose information does the new vector of {tok} contain?",
    "ex.step_answers": "answers to the questions",
    "ex.a1": "Answer 1. The variance of $q \\cdot k$ grows with $d_k$ (it equals $d_k$ for unit-variance entries; "
             "at BERT's $d_k = 64$ a sample gives {var}), and large scores make softmax almost one-hot, where "
             "the gradient vanishes. In this exercise, the scores of {tok} are {s}: without scaling softmax "
             "gives {p}; divided by $\\sqrt{{dk}} = {root}$ it gives {ps}, a softer row.",
    "ex.a2": "Answer 2. exp, then normalisation. exp makes every score positive and stretches the gaps: the "
             "scaled scores of {tok}, {s}, become {e}; a gap of {gap} turns into a ratio of {ratio}. "
             "Normalisation divides by the sum {sum}, so the weights {w} are positive and add up to 1.",
    "ex.a3": "Answer 3. Its weights: {shares}. So the new vector {o} (it started as {x}) is mostly the value "
             "of {top}, mixed with the others in these shares.",
    "ex.file_comment1": "attnscope exercise {seed}: fill in your numbers (replace ~), then run: attnscope check <this file>",
    "ex.file_comment2": "Write as many decimals as you computed; leave ~ where you did not compute.",
    "ex.wrote": "Blank answers file written to {path}; fill it in and run: attnscope check {path}",
    "ex.kept": "{path} exists and was left as it is (it may hold your answers); check it with: attnscope check {path}",
}

ZH = {
    # rendering ---------------------------------------------------------------------------------
    "step_n": "第 {n} 步：{title}",
    "warning": "注意：",
    "list_sep": "、",
    "latex.compile": "含中文字符时请用 xelatex 编译（xeCJK）",

    # toy ---------------------------------------------------------------------------------------
    "toy.title": "手算自注意力",
    "toy.title_named": "手算自注意力：{name}",
    "toy.intro": "{L} 个 token（{tokens}）；查询和键的维度 $d_k = {dk}$，值的维度 $d_v = {dv}$。"
                 "下面每个数都用 float64 计算，只在显示时四舍五入。",
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
    "toy.meaning_first": "token {tok} 原来是 {x}，输出是 {o}：它自己的内容，加上从其他 token 取来的信息。",
    "toy.meaning": "输出已经不只是这个 token 自己的向量：查询（通过分数）决定哪些 token 重要，权重再把它们的值融合进来。"
                   "同一个 token，换一个上下文，输出就不同。",
    # one row --------------------------------------------------------------------------------
    "row.title_model": "逐步计算 {tok} 这一行：第 {layer} 层，第 {head} 个头",
    "row.title_scores": "逐步计算 {tok} 这一行",
    "row.title_scores_plain": "逐步计算注意力的一行",
    "row.intro_model": "模型 {model}，第 {layer} 层，第 {head} 个头；文本共 {L} 个 token：{tokens}。"
                       "查询是 {tok}；每个头的维度 $d_k = {dk}$。q、k、v 取自模型的追踪记录，之后的每一步都在这里用 float64 重新计算。",
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
    "sc.softmax_max": "最大权重：不缩放 {top}，缩放后 {top_s}。熵：{h} 对 {h_s} nats（均匀分布为 {hmax}）。不缩放时这一行几乎是 one-hot。",
    "sc.article_raw": "原文给出 softmax({v}) $\\approx$ {printed}；计算结果：{computed}。",
    "sc.article_scaled": "原文给出 softmax({v} / 8) = {printed}；计算结果：{computed}。",
    "sc.step_jacobian": "softmax 的雅可比矩阵：饱和的行为什么学不动",
    "sc.jac_why": "传回分数（再传到 $q$ 和 $k$）的梯度要乘以这个矩阵。每个元素都是概率的乘积，所以当某个 $p_i$ 接近 1、"
                  "其余接近 0 时，所有元素都接近 0。",
    "sc.jac_raw": "softmax({v}) 的 $J$，不缩放",
    "sc.jac_scaled": "softmax({v} / {root}) 的 $J$",
    "sc.jac_norms": "最大元素：不缩放 {a}，缩放后 {b}；Frobenius 范数 {fa} 对 {fb}，缩放后大 {ratio} 倍。",
    "sc.ce_grad": "假设正确答案是第 {target} 个（对这些概率做交叉熵），梯度 $p - y$ 不缩放时为 {g}，缩放后为 {gs}。",
    "sc.jac_conclusion": "饱和的行几乎传不回梯度：模型几乎学不到东西。除以 $\\sqrt{d_k}$ 让分数保持单位方差，"
                         "权重分布保持柔和，梯度得以正常传播。",
    "sc.article_grad": "原文给出的梯度是 {g} 和 {gs}。",
    # check ----------------------------------------------------------------------------------
    "check.title": "检查 {source}",
    "check.problem_toy": "题目：{what}，{L} 个 token（{tokens}）。",
    "check.problem_model": "题目：模型 {model}，第 {layer} 层，第 {head} 个头，查询 {tok}，文本“{text}”。",
    "check.problem_scores": "题目：给定的一行 {S} 个分数，$d_k = {dk}$。",
    "check.rule": "每个数按你写出的小数位数判断：0.71 必须等于精确值四舍五入到 2 位小数，0.707 必须等于精确值四舍五入到 3 位小数。",
    "check.col_step": "步骤",
    "check.col_n": "已作答",
    "check.col_correct": "正确",
    "check.col_rounding": "舍入",
    "check.col_carried": "连带",
    "check.col_wrong": "错误",
    "check.col_blank": "空白",
    "check.where": "{step}，第 {row} 行，第 {col} 列",
    "check.where_entry": "{step}，第 {col} 项",
    "check.line_wrong": "{where}：你写的是 {wrote}；保留 {d} 位小数的正确值：{right}（精确值 {exact}）。",
    "check.line_carried": "{where}：你写的是 {wrote}；正确值：{right}（精确值 {exact}）。这不是新的错误："
                          "它来自你的 {sources}（用你自己的数算出来是 {recomputed}）。",
    "check.line_rounding": "{where}：你写的是 {wrote}；精确值 {exact}（保留 {d} 位小数为 {right}）。可以接受："
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
    "ex.a3": "答 3：它的权重是：{shares}。所以新向量 {o}（原来是 {x}）主要是 {top} 的值，再按这些比例混合了其他 token。",
    "ex.file_comment1": "attnscope 练习 {seed}：把 ~ 换成你的数，然后运行：attnscope check <本文件>",
    "ex.file_comment2": "算到几位小数就写几位；没算的地方保留 ~。",
    "ex.wrote": "空白答案文件已写入 {path}；填好后运行：attnscope check {path}",
    "ex.kept": "{path} 已存在，未改动（里面可能有你的答案）；检查它：attnscope check {path}",
}

LABELS = {"en": EN, "zh": ZH}
