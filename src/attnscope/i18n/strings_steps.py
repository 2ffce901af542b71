"""The names of a calculation's steps as ``check`` reports them (the answer file's keys:
``weights``, ``scaled``, …), in English and Chinese. Each Chinese name carries the key behind
it, so that a learner still finds the answer file's key."""

EN = {
    "steps.head": "{name}[{head}]",
    "steps.Q": "Q",
    "steps.K": "K",
    "steps.V": "V",
    "steps.QKV": "QKV",
    "steps.Q_normed": "Q_normed",
    "steps.K_normed": "K_normed",
    "steps.Q_rot": "Q_rot",
    "steps.K_rot": "K_rot",
    "steps.scores": "scores",
    "steps.scaled": "scaled",
    "steps.exp": "exp",
    "steps.sum": "sum",
    "steps.sums": "sums",
    "steps.weights": "weights",
    "steps.output": "output",
    "steps.concat": "concat",
    "steps.projected": "projected",
}

ZH = {
    "steps.head": "{name}，头 {head}",
    "steps.Q": "查询（Q）",
    "steps.K": "键（K）",
    "steps.V": "值（V）",
    "steps.QKV": "融合的查询、键、值（QKV）",
    "steps.Q_normed": "归一化的查询（Q_normed）",
    "steps.K_normed": "归一化的键（K_normed）",
    "steps.Q_rot": "旋转后的查询（Q_rot）",
    "steps.K_rot": "旋转后的键（K_rot）",
    "steps.scores": "原始分数（scores）",
    "steps.scaled": "缩放后的分数（scaled）",
    "steps.exp": "指数（exp）",
    "steps.sum": "行和（sum）",
    "steps.sums": "行和（sums）",
    "steps.weights": "注意力权重（weights）",
    "steps.output": "输出（output）",
    "steps.concat": "拼接（concat）",
    "steps.projected": "投影后的输出（projected）",
}
