"""Which font drew an element's CJK glyphs, by Chromium's own account — shared by the viewer's and
the docs site's font tests.

``CSS.getPlatformFontsForNode`` (DevTools protocol) lists the fonts that drew an element's
glyphs with their glyph counts; a CJK character that fell back to a system font (DejaVu Sans
draws a box for 我; an installed CJK font draws it without one) shows up there as another family.
The test Chromium sees no CJK system font whatever the machine has (tests/browser/font_sandbox.py;
tests/browser/test_font_sandbox.py shows the checks on a machine that has one).
"""

from __future__ import annotations

#: JavaScript giving an element's text (``this`` is the element).
TEXT_CONTENT = "function () { return this.textContent; }"
#: What an element draws: a <select> shows only its selected option.
SHOWN_TEXT = ("function () { return this.tagName === 'SELECT' ? (this.selectedIndex < 0 ? '' : "
              "this.options[this.selectedIndex].text) : this.textContent; }")


def is_cjk(ch: str) -> bool:
    """CJK radicals to unified ideographs (with CJK punctuation, kana), Hangul, compatibility
    ideographs, and the full-width forms (，！（） in Chinese text)."""
    o = ord(ch)
    return 0x2E80 <= o <= 0x9FFF or 0xAC00 <= o <= 0xD7AF or 0xF900 <= o <= 0xFAFF or 0xFF00 <= o <= 0xFFEF


def cjk_fallbacks(page, selector: str, family: str, *, text_js: str = TEXT_CONTENT,
                  skip_undrawn: bool = False) -> tuple[int, list[tuple[str, list]]]:
    """``(elements checked, [(text, fonts)])``: of the elements matching ``selector`` that hold CJK
    characters, those whose CJK characters were not all drawn with ``family`` (checked right now,
    no waiting). ``skip_undrawn``: an element that drew no glyph at all (a collapsed section of a
    navigation) is not counted; otherwise it is a fallback."""
    cdp = page.context.new_cdp_session(page)
    try:
        cdp.send("DOM.enable")
        cdp.send("CSS.enable")
        root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
        ids = cdp.send("DOM.querySelectorAll", {"nodeId": root, "selector": selector})["nodeIds"]
        bad, checked = [], 0
        for nid in ids:
            obj = cdp.send("DOM.resolveNode", {"nodeId": nid})["object"]["objectId"]
            text = cdp.send("Runtime.callFunctionOn", {"objectId": obj, "returnByValue": True,
                                                      "functionDeclaration": text_js})["result"]["value"]
            n_cjk = sum(is_cjk(c) for c in text)
            if not n_cjk:
                continue
            fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": nid})["fonts"]
            if skip_undrawn and not fonts:
                continue
            checked += 1
            ours = sum(f["glyphCount"] for f in fonts if f["familyName"] == family)
            if ours < n_cjk:
                bad.append((text[:80], fonts))
        return checked, bad
    finally:
        cdp.detach()
