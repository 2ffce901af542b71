"""The experiments' reports and figure titles/axes (:mod:`attnscope.experiments`), in English and
Chinese. Numbers are formatted by the templates themselves (the same format spec in both
languages), so a report says the same numbers in either."""

EN = {
    # shared
    "experiments.time": "Time: {seconds:.1f} s.",
    "experiments.scaled": "scaled",
    "experiments.unscaled": "unscaled",
    "experiments.line_variance": "  largest |z| of Var(q·k) vs d_k: {z:.2f}; largest |Var(q·k/√d_k) − 1|: {rel:.3f}",
    "experiments.line_saturation": "  d_k={d_k}: entropy scaled {h_s:.3f} vs unscaled {h_u:.3f} nats; Jacobian norm ratio "
                                   "unscaled/scaled {ratio:.3f}",
    # variance
    "experiments.var.title": "# Experiment: variance of q·k",
    "experiments.var.setup": "q and k with independent unit-variance entries; {samples} dot products per "
                             "distribution and d_k; seed {seed}.",
    "experiments.var.theory": "Theory: Var(q·k) = d_k, Var(q·k/√d_k) = 1; SE = relative standard error of the "
                              "sampled ratio, z = (ratio − 1)/SE.",
    "experiments.var.entries": "## Entries ~ {dist}",
    "experiments.var.col_theory": "theory",
    "experiments.var.overall": "Over all {cells} (distribution, d_k) cells the largest |z| is {max_abs_z:.2f} "
                               "and the largest |Var(q·k/√d_k) − 1| is {max_rel:.3f}: the sampled variance "
                               "follows d_k, and the scaled one stays at 1, for every entry distribution tried.",
    "experiments.var.hist_head": "## The article's histograms (d_k = {d_k}, Q and K of shape ({n}, {d_k}))",
    "experiments.var.hist_text": "Unscaled scores: variance {var_unscaled:.1f} (article: \"about 256\"), largest "
                                 "|score| {max_unscaled:.1f}. Scaled: variance {var_scaled:.3f} (article: \"about "
                                 "1\"), largest |score| {max_scaled:.2f}. The {n}² scores share rows and columns, "
                                 "so they are not independent; their variance still estimates d_k.",
    "experiments.var.fig_theory_dk": "theory: d_k",
    "experiments.var.fig_theory_1": "theory: 1",
    "experiments.var.fig_se": "{dist} (±2 SE)",
    "experiments.var.fig_y_unscaled": "sampled Var(q·k)",
    "experiments.var.fig_y_scaled": "sampled Var(q·k / √d_k)",
    "experiments.var.fig_unscaled": "unscaled q·k",
    "experiments.var.fig_scaled": "scaled q·k / √d_k",
    "experiments.var.hist_unscaled": "Unscaled Q·Kᵀ, d_k = {d_k} (var = {var:.1f})",
    "experiments.var.hist_scaled": "Scaled Q·Kᵀ/√d_k (var = {var:.3f})",
    "experiments.var.score": "score",
    "experiments.var.count": "count",
    # saturation
    "experiments.sat.title": "# Experiment: softmax saturation",
    "experiments.sat.setup": "Rows of S = {S} scores q·k with q, k ~ N(0, I_d_k) (variance d_k); {rows} rows per "
                             "d_k; seed {seed}. \"scaled\" divides by √d_k before softmax. ‖J‖_F is the Frobenius "
                             "norm of the softmax Jacobian diag(p) − ppᵀ, the factor by which a gradient at the "
                             "weights reaches the scores.",
    "experiments.sat.col_max_s": "max p (scaled)",
    "experiments.sat.col_max_u": "max p (unscaled)",
    "experiments.sat.col_h_s": "H (scaled)",
    "experiments.sat.col_h_u": "H (unscaled)",
    "experiments.sat.col_j_s": "‖J‖ (scaled)",
    "experiments.sat.col_j_u": "‖J‖ (unscaled)",
    "experiments.sat.col_j_lim": "‖J‖ saturated limit",
    "experiments.sat.col_sat": "rows with max p > {threshold}",
    "experiments.sat.uniform": "Uniform limit: max p = {max_weight:.4f}, H = ln {S} = {entropy:.4f}, "
                               "‖J‖_F = √{S_1}/{S} = {jacobian:.4f}. Saturated limit of the unscaled case: "
                               "E‖J‖_F ≈ f·E[1/|q|] with f = {f:.4f} (density of the top-two gap at 0).",
    "experiments.sat.summary": "At d_k = {d_k}, unscaled softmax puts on average {max_u:.3f} of the weight on one "
                               "key ({sat_pct:.0f}% of rows above {threshold}), entropy {h_u:.3f} nats against "
                               "{h_s:.3f} scaled, and the Jacobian norm is {ratio}× the scaled one. ",
    "experiments.sat.larger": "For small d_k (up to {d_k}) the unscaled Jacobian is *larger* than the scaled "
                              "one — a moderately peaked softmax passes more gradient than a flat one — ",
    "experiments.sat.smaller": "from d_k = {d_k} on it is smaller and falls towards the saturated limit, like "
                               "1/√d_k (dotted line): the gradient reaching the scores shrinks steadily, it does "
                               "not vanish at some threshold. The scaled curves do not move with d_k.",
    "experiments.sat.still": "The scaled curves do not move with d_k.",
    "experiments.sat.example": "The article's example: softmax([1, 2, 3]) = [{w1}] (‖J‖_F = {j1:.3f}); "
                               "softmax([10, 20, 30]) = [{w2}] (‖J‖_F = {j2:.2e}).",
    "experiments.sat.fig_max": "largest softmax weight",
    "experiments.sat.fig_entropy": "entropy (nats)",
    "experiments.sat.fig_uniform": "uniform ({value:.3g})",
    "experiments.sat.fig_limit": "saturated limit",
    "experiments.sat.fig_title": "softmax over S = {S} keys, scores q·k with variance d_k",
    # training (units are counted by attnscope.experiments.training.verdicts.counted_in)
    "experiments.train.unit_layer": "pre-LN layer",
    "experiments.train.unit_seed": "seed",
    "experiments.train.unit_step": "step",
    "experiments.train.unit_job": "job",
    "experiments.train.unit_run": "run",
    "experiments.train.unit_head": "head",
    "experiments.train.na": "n/a",
    "experiments.train.speed_unjudged": "cannot be judged (no unscaled run finished)",
    "experiments.train.speed_untold": ("cannot be told from these runs (no run of either variant reached the "
                                       "threshold loss: they learned too little)"),
    "experiments.train.speed_all": "holds in every cell",
    "experiments.train.speed_none": "does not hold anywhere",
    "experiments.train.speed_some": "holds only at {where}",
    "experiments.train.speed": "\"Scaling trained over 3× faster\" {verdict}: to reach the loss that unscaled ended with, "
                               "unscaled needed this many times the steps of scaled — {parts} (to reach the "
                               "threshold: {thr_parts}; '>' = unscaled never got there, a lower bound).",
    "experiments.train.join": "; ",
    "experiments.train.stall_part": "{task}: unscaled stalled in {stalled}/{seeds} seeds, loss {init} → {final} "
                                    "(threshold {threshold:.3g}, reached in {reached}/{seeds})",
    "experiments.train.stall_vs": " vs scaled → {final} (reached {reached}/{seeds})",
    "experiments.train.confirmed": "is confirmed",
    "experiments.train.not_confirmed": "is not confirmed",
    "experiments.train.partly": "is partly confirmed",
    "experiments.train.caveat": " — but scaled stalled too ({runs}), so this budget cannot tell the factor's effect",
    "experiments.train.stall": "\"Unscaled training at d_k = {d_k} stalled\" {verdict} ({stalled}/{total} runs "
                               "stalled{caveat}): {parts}.",
    "experiments.train.title": "# Experiment: training with and without 1/√d_k",
    "experiments.train.claims": "## The article's claims",
    "experiments.train.no_speed": "not measured (scaled or unscaled missing from the variants)",
    "experiments.train.no_stall": "not measured (unscaled missing from the variants)",
    "experiments.train.setup": "## Set-up",
    "experiments.train.model": "- Model: attnscope TransformerEncoder, {layers}, d_model = {d_model}, d_ff = {d_ff}, "
                               "n_heads = d_model / d_k, no dropout, linear read-out; init {init} (LeCun: q and k "
                               "entries start with unit variance).",
    "experiments.train.optim": "- Optimiser: AdamW (lr {lr:g}, no weight decay, clip 1.0), {warmup} % linear warm-up, "
                               "cosine decay to {final} %; identical for every variant, and identical batches and "
                               "initial weights for a given seed.",
    "experiments.train.eval": "- Evaluation every {every} steps on a fixed held-out set.",
    "experiments.train.recall": "- recall: {n_pairs} key-value pairs + {n_queries} queries, {n_keys} keys × {n_values} "
                                "values; baseline ln {n_values} = {baseline:.3f}; threshold {threshold:.3g}; {steps} × "
                                "batch {batch}; {seeds}.",
    "experiments.train.lm": "- lm: {corpus} ({chars} chars, sha256 {sha}…), {vocab} symbols, windows of {seq_len}; "
                            "count-model losses on the held-out text: unigram {unigram:.3f} (baseline), bigram "
                            "{bigram:.3f} (threshold), trigram {trigram:.3f}; {steps} steps × batch {batch}; {seeds}.",
    "experiments.train.flags": "- stalled: final loss above baseline − {fraction}·(baseline − threshold); diverged: "
                               "NaN/inf or final > initial loss. Steps to threshold: median over seeds (a run that "
                               "never got there counts as infinitely slow; — = median not reached).",
    "experiments.train.task": "## Task {task}",
    "experiments.train.col_variant": "variant",
    "experiments.train.col_steps": "steps to thr.",
    "experiments.train.col_reached": "reached",
    "experiments.train.col_loss": "final loss",
    "experiments.train.col_acc": "final acc",
    "experiments.train.col_entropy": "entropy/ln n: init → final",
    "experiments.train.col_maxw": "max w init",
    "experiments.train.col_grad": "‖∂L/∂scores‖ init, mean",
    "experiments.train.col_stalled": "stalled",
    "experiments.train.col_diverged": "diverged",
    "experiments.train.time": "Time: {total:.0f} s wall ({jobs}); sum of run times {runs:.0f} s.",
    "experiments.train.fig_threshold": "threshold",
    "experiments.train.fig_baseline": "baseline (stall level)",
    "experiments.train.fig_dk": "d_k = {d_k} ({heads})",
    "experiments.train.fig_step": "step",
    "experiments.train.fig_loss": "held-out loss (nats)",
    "experiments.train.fig_entropy": "attention entropy / ln(#keys)",
    "experiments.train.fig_grad": "‖∂loss/∂scores‖",
    "experiments.train.fig_task": "task {task}: mean over {seeds}",
    "experiments.train.fig_final_y": "final held-out loss",
    "experiments.train.fig_final": "{task}: final loss",
    "experiments.train.fig_never": "never reached",
    "experiments.train.fig_steps_y": "steps (median over seeds)",
    "experiments.train.fig_steps": "{task}: steps to loss {threshold:.3g}",
}

ZH = {
    "experiments.time": "用时：{seconds:.1f} 秒。",
    "experiments.scaled": "缩放",
    "experiments.unscaled": "未缩放",
    "experiments.line_variance": "  Var(q·k) 与 d_k 相比 |z| 最大为 {z:.2f}；|Var(q·k/√d_k) − 1| 最大为 {rel:.3f}",
    "experiments.line_saturation": "  d_k={d_k}：熵：缩放 {h_s:.3f}，未缩放 {h_u:.3f} 奈特；"
                                   "雅可比范数之比（未缩放/缩放）{ratio:.3f}",
    "experiments.var.title": "# 实验：q·k 的方差",
    "experiments.var.setup": "q 和 k 的各分量相互独立，且都是单位方差；每种分布、每个 d_k 取 {samples} 个点积；随机种子 {seed}。",
    "experiments.var.theory": "理论：Var(q·k) = d_k，Var(q·k/√d_k) = 1；SE 是抽样比值的相对标准误差，z = (比值 − 1)/SE。",
    "experiments.var.entries": "## 分量服从 {dist} 分布",
    "experiments.var.col_theory": "理论值",
    "experiments.var.overall": "在全部 {cells} 个（分布, d_k）组合中，|z| 最大为 {max_abs_z:.2f}，"
                               "|Var(q·k/√d_k) − 1| 最大为 {max_rel:.3f}：对试过的每一种分量分布，抽样方差都随 d_k "
                               "增长，而缩放后的方差保持在 1。",
    "experiments.var.hist_head": "## 文章中的直方图（d_k = {d_k}，Q 和 K 的形状为 ({n}, {d_k})）",
    "experiments.var.hist_text": "未缩放的分数：方差 {var_unscaled:.1f}（文章：“约 256”），|分数| 最大 {max_unscaled:.1f}。"
                                 "缩放后：方差 {var_scaled:.3f}（文章：“约 1”），|分数| 最大 {max_scaled:.2f}。"
                                 "这 {n}² 个分数共用行和列，所以并不相互独立；但它们的方差仍然是 d_k 的估计。",
    "experiments.var.fig_theory_dk": "理论：d_k",
    "experiments.var.fig_theory_1": "理论：1",
    "experiments.var.fig_se": "{dist}（±2 SE）",
    "experiments.var.fig_y_unscaled": "抽样得到的 Var(q·k)",
    "experiments.var.fig_y_scaled": "抽样得到的 Var(q·k / √d_k)",
    "experiments.var.fig_unscaled": "未缩放的 q·k",
    "experiments.var.fig_scaled": "缩放后的 q·k / √d_k",
    "experiments.var.hist_unscaled": "未缩放的 Q·Kᵀ，d_k = {d_k}（方差 = {var:.1f}）",
    "experiments.var.hist_scaled": "缩放后的 Q·Kᵀ/√d_k（方差 = {var:.3f}）",
    "experiments.var.score": "分数",
    "experiments.var.count": "个数",
    "experiments.sat.title": "# 实验：softmax 饱和",
    "experiments.sat.setup": "每行 S = {S} 个分数 q·k，q、k ~ N(0, I_d_k)（方差为 d_k）；每个 d_k 取 {rows} 行；"
                             "随机种子 {seed}。“缩放”表示在 softmax 之前除以 √d_k。‖J‖_F 是 softmax 雅可比矩阵 "
                             "diag(p) − ppᵀ 的 Frobenius 范数，即权重处的梯度传到分数时乘上的因子。",
    "experiments.sat.col_max_s": "最大 p（缩放）",
    "experiments.sat.col_max_u": "最大 p（未缩放）",
    "experiments.sat.col_h_s": "H（缩放）",
    "experiments.sat.col_h_u": "H（未缩放）",
    "experiments.sat.col_j_s": "‖J‖（缩放）",
    "experiments.sat.col_j_u": "‖J‖（未缩放）",
    "experiments.sat.col_j_lim": "‖J‖ 饱和极限",
    "experiments.sat.col_sat": "最大 p > {threshold} 的行",
    "experiments.sat.uniform": "均匀极限：最大 p = {max_weight:.4f}，H = ln {S} = {entropy:.4f}，"
                               "‖J‖_F = √{S_1}/{S} = {jacobian:.4f}。未缩放情形的饱和极限："
                               "E‖J‖_F ≈ f·E[1/|q|]，其中 f = {f:.4f}（最大两个分数之差在 0 处的概率密度）。",
    "experiments.sat.summary": "在 d_k = {d_k} 时，未缩放的 softmax 平均把 {max_u:.3f} 的权重放在一个键上"
                               "（{sat_pct:.0f}% 的行超过 {threshold}），熵为 {h_u:.3f} 奈特，缩放后为 {h_s:.3f}；"
                               "雅可比范数是缩放后的 {ratio} 倍。",
    "experiments.sat.larger": "d_k 较小时（不超过 {d_k}），未缩放的雅可比范数反而*更大*——适度尖锐的 softmax "
                              "比平坦的 softmax 传过更多梯度——",
    "experiments.sat.smaller": "从 d_k = {d_k} 起它更小，并像 1/√d_k 那样趋向饱和极限（点线）：传到分数的梯度"
                               "逐步变小，并不是在某个阈值处突然消失。缩放后的曲线不随 d_k 变化。",
    "experiments.sat.still": "缩放后的曲线不随 d_k 变化。",
    "experiments.sat.example": "文章中的例子：softmax([1, 2, 3]) = [{w1}]（‖J‖_F = {j1:.3f}）；"
                               "softmax([10, 20, 30]) = [{w2}]（‖J‖_F = {j2:.2e}）。",
    "experiments.sat.fig_max": "最大的 softmax 权重",
    "experiments.sat.fig_entropy": "熵（奈特）",
    "experiments.sat.fig_uniform": "均匀（{value:.3g}）",
    "experiments.sat.fig_limit": "饱和极限",
    "experiments.sat.fig_title": "对 S = {S} 个键做 softmax，分数 q·k 的方差为 d_k",
    "experiments.train.unit_layer": "个 pre-LN 层",
    "experiments.train.unit_seed": "个种子",
    "experiments.train.unit_step": "步",
    "experiments.train.unit_job": "个进程",
    "experiments.train.unit_run": "次训练",
    "experiments.train.unit_head": "个头",
    "experiments.train.na": "无",
    "experiments.train.speed_unjudged": "无法判断（没有一次未缩放的训练完成）",
    "experiments.train.speed_untold": "这些训练无法判断（两种变体都没有一次达到阈值损失：学到的太少）",
    "experiments.train.speed_all": "在每个组合中都成立",
    "experiments.train.speed_none": "在任何组合中都不成立",
    "experiments.train.speed_some": "只在 {where} 成立",
    "experiments.train.speed": "“缩放后训练快 3 倍以上”{verdict}：要达到未缩放训练最终的损失，未缩放训练所需的步数是缩放训练的"
                               "这么多倍——{parts}（达到阈值所需：{thr_parts}；“>”表示未缩放训练从未达到，是下界）。",
    "experiments.train.join": "；",
    "experiments.train.stall_part": "{task}：未缩放训练在 {stalled}/{seeds} 个种子中停滞，损失 {init} → {final}"
                                    "（阈值 {threshold:.3g}，{reached}/{seeds} 个达到）",
    "experiments.train.stall_vs": "，缩放训练 → {final}（{reached}/{seeds} 个达到）",
    "experiments.train.confirmed": "得到证实",
    "experiments.train.not_confirmed": "没有得到证实",
    "experiments.train.partly": "部分得到证实",
    "experiments.train.caveat": "——但缩放训练也停滞了（{runs}），所以在这个训练量下看不出这个因子的作用",
    "experiments.train.stall": "“d_k = {d_k} 时未缩放训练停滞”{verdict}（{stalled}/{total} 次训练停滞{caveat}）：{parts}。",
    "experiments.train.title": "# 实验：有无 1/√d_k 的训练",
    "experiments.train.claims": "## 文章的论断",
    "experiments.train.no_speed": "未测量（变体中缺少缩放或未缩放）",
    "experiments.train.no_stall": "未测量（变体中缺少未缩放）",
    "experiments.train.setup": "## 设置",
    "experiments.train.model": "- 模型：attnscope TransformerEncoder，{layers}，d_model = {d_model}，d_ff = {d_ff}，"
                               "n_heads = d_model / d_k，无 dropout，线性读出；初始化 {init}（LeCun：q 和 k 的分量一开始"
                               "就是单位方差）。",
    "experiments.train.optim": "- 优化器：AdamW（学习率 {lr:g}，无权重衰减，梯度裁剪 1.0），{warmup} % 线性预热，"
                               "余弦衰减到 {final} %；每个变体都相同，同一个种子的批次和初始权重也相同。",
    "experiments.train.eval": "- 每 {every} 步在固定的留出集上评估一次。",
    "experiments.train.recall": "- recall：{n_pairs} 个键值对 + {n_queries} 个查询，{n_keys} 个键 × {n_values} 个值；"
                                "基线 ln {n_values} = {baseline:.3f}；阈值 {threshold:.3g}；{steps} × 批大小 {batch}；"
                                "{seeds}。",
    "experiments.train.lm": "- lm：{corpus}（{chars} 个字符，sha256 {sha}…），{vocab} 个符号，窗口长 {seq_len}；"
                            "计数模型在留出文本上的损失：一元 {unigram:.3f}（基线），二元 {bigram:.3f}（阈值），"
                            "三元 {trigram:.3f}；{steps} 步 × 批大小 {batch}；{seeds}。",
    "experiments.train.flags": "- 停滞：最终损失高于基线 − {fraction}·(基线 − 阈值)；发散：出现 NaN/inf，或最终损失大于"
                               "初始损失。达到阈值的步数：各种子的中位数（从未达到的训练算作无限慢；— 表示中位数未达到）。",
    "experiments.train.task": "## 任务 {task}",
    "experiments.train.col_variant": "变体",
    "experiments.train.col_steps": "达到阈值的步数",
    "experiments.train.col_reached": "达到",
    "experiments.train.col_loss": "最终损失",
    "experiments.train.col_acc": "最终准确率",
    "experiments.train.col_entropy": "熵/ln n：初始 → 最终",
    "experiments.train.col_maxw": "初始最大权重",
    "experiments.train.col_grad": "‖∂L/∂scores‖ 初始，平均",
    "experiments.train.col_stalled": "停滞",
    "experiments.train.col_diverged": "发散",
    "experiments.train.time": "用时：墙钟 {total:.0f} 秒（{jobs}）；各次训练用时之和 {runs:.0f} 秒。",
    "experiments.train.fig_threshold": "阈值",
    "experiments.train.fig_baseline": "基线（停滞水平）",
    "experiments.train.fig_dk": "d_k = {d_k}（{heads}）",
    "experiments.train.fig_step": "步",
    "experiments.train.fig_loss": "留出集损失（奈特）",
    "experiments.train.fig_entropy": "注意力熵 / ln(键数)",
    "experiments.train.fig_grad": "‖∂loss/∂scores‖",
    "experiments.train.fig_task": "任务 {task}：{seeds}的平均",
    "experiments.train.fig_final_y": "最终留出集损失",
    "experiments.train.fig_final": "{task}：最终损失",
    "experiments.train.fig_never": "从未达到",
    "experiments.train.fig_steps_y": "步数（各种子的中位数）",
    "experiments.train.fig_steps": "{task}：损失降到 {threshold:.3g} 所需的步数",
}
