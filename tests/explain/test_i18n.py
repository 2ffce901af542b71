
from attnscope.explain import i18n
from attnscope.explain.doc import T
from attnscope.explain.render.base import _PLACEHOLDER as PH  # noqa: E402
from attnscope.explain.render.base import Ctx, tex_to_text


def test_both_languages_have_every_label_with_the_same_placeholders():
    assert set(i18n.EN) == set(i18n.ZH)
    for key in i18n.EN:
        assert set(PH.findall(i18n.EN[key])) == set(PH.findall(i18n.ZH[key])), key
        for lang in i18n.LANGS:
            assert i18n.LABELS[lang][key].count("$") % 2 == 0, (lang, key)


def test_math_in_labels_becomes_plain_unicode():
    for lang in i18n.LANGS:
        for key, label in i18n.LABELS[lang].items():
            params = {name: 7 for name in PH.findall(label)}
            text = Ctx(lang).text(T(key, params))
            assert "\\" not in text and "$" not in text, (lang, key, text)


def test_tex_to_text_examples():
    assert tex_to_text(r"\frac{QK^{\top}}{\sqrt{d_k}}") == "QKᵀ/√d_k"
    assert tex_to_text(r"\mathbb{E}[q_i^2]\,\mathbb{E}[k_i^2] = 1") == "E[q_i²] E[k_i²] = 1"
    assert tex_to_text(r"e^{-\infty} = 0") == "e^(−∞) = 0"
