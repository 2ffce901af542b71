"""The experiments' reports and figure titles/axes (:mod:`attnscope.experiments`), in English and
Chinese. Numbers are formatted by the templates themselves (the same format spec in both
languages), so a report says the same numbers in either."""

EN = {
    # shared
    "experiments.time": "Time: {seconds:.1f} s.",
    "experiments.scaled": "scaled",
    "experiments.unscaled": "unscaled",
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
}

ZH = {
    "experiments.time": "用时：{seconds:.1f} 秒。",
    "experiments.scaled": "缩放",
    "experiments.unscaled": "未缩放",
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
}
