"""Parallel texts of the encoder–decoder tests (source, target), English and Chinese."""

PAIRS = {
    "en": (["translate English to German: The cat sat on the mat.", "Attention is all you need!",
            "summarize: Queries and keys; values too? Yes, every token looks at every other token."],
           ["Die Katze sass auf der Matte.", "Ja", "Every token looks."]),
    "zh": (["我喜欢人工智能", "北京是中国的首都。我爱北京！", "你好世界。"], ["你好世界。", "我爱北京", "北京是中国的首都。"]),
}
