"""The docs site (mkdocs.yml): built with ``mkdocs build --strict``, and opened from disk in headless
Chromium with every request that would leave the machine refused and recorded.

- The real build has no warning, and a strict build of the same configuration fails on a broken
  link, a missing anchor and a missing API reference (so the clean build means something).
- No built page or stylesheet names a remote script, stylesheet, font or image.
- The Chinese pages say ``<html lang="zh">``, every other page ``lang="en"``.
- In Chromium, from file://: every kind of page renders (home, tutorial, the Chinese tutorial, a
  how-to, the API reference), the offline search finds a word, and no request other than file:,
  data: or blob: is made. Chinese text is drawn with the site's own CJK font (asked of Chromium
  with ``CSS.getPlatformFontsForNode``; the test Chromium sees none of the machine's CJK fonts,
  tests/browser/font_sandbox.py), never a fallback. Screenshots go to artifacts/docs/.
- Without a browser: the stylesheet's ``@font-face`` names the built font file, which draws every
  CJK character the pages show (fontTools), on whatever machine.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.browser.cjk_glyphs import cjk_fallbacks
from tests.browser.playwright_once import chromium_context, watched_page

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "mkdocs.yml"
ARTIFACTS = ROOT / "artifacts" / "docs"
CJK_FAMILY = "attnscope CJK"  # the family name inside the bundled font (attnscope.fonts.CJK_FAMILY)

pytestmark = pytest.mark.slow


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> tuple[Path, str]:
    """The site built from the repository's mkdocs.yml (once per run, shared by xdist workers):
    (site folder, build log)."""
    from filelock import FileLock

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # this run's folder
    out, log = shared / "docs-site", shared / "docs-site.log"
    with FileLock(str(shared / "docs-site.lock")):
        if not log.exists():
            r = mkdocs_build(CONFIG, out)
            log.write_text(f"rc={r.returncode}\n{r.stdout}{r.stderr}", encoding="utf-8")
    text = log.read_text(encoding="utf-8")
    assert text.startswith("rc=0\n"), f"mkdocs build --strict failed:\n{text}"
    return out, text


def test_strict_build_has_no_warning(site):
    out, log = site
    bad = [ln for ln in log.splitlines() if re.match(r"\s*(WARNING|ERROR)\b", ln)]
    assert bad == [], "\n".join(bad)
    for page in ("index.html", "getting-started.html", "tutorial/index.html", "zh/tutorial/index.html",
                 "howto/inspect-a-head.html", "reference/api.html", "reference/cli.html", "search/search_index.js",
                 "assets/fonts/attnscope-cjk.otf", "assets/fonts/OFL.txt", "stylesheets/cjk.css"):
        assert (out / page).is_file(), f"{page} was not built"


def _variant(tmp: Path, pages: dict[str, str]) -> Path:
    """The repository's configuration over a docs folder of ``pages`` only (all of them in the nav)."""
    cfg = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    docs = tmp / "docs"
    for name, text in pages.items():
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text(text, encoding="utf-8")
    cfg["docs_dir"] = str(docs)
    cfg["nav"] = list(pages)
    cfg["hooks"] = [str(ROOT / h) for h in cfg["hooks"]]
    cfg["extra"]["polyfills"] = []
    for plugin in cfg["plugins"]:
        if isinstance(plugin, dict) and "mkdocstrings" in plugin:
            plugin["mkdocstrings"]["handlers"]["python"]["paths"] = [str(ROOT / "src")]
    path = tmp / "mkdocs.yml"
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    return path


GOOD = {"index.md": "# Home\n\n[the other page](other.md#a-heading), [the API](api.md)\n",
        "other.md": "# Other\n\n## A heading\n\n中文也可以。\n",
        "api.md": "# API\n\n::: attnscope.functional.softmax\n"}


@pytest.mark.parametrize("defect, pages, named", [
    ("none", GOOD, None),
    ("a link to a missing page", {**GOOD, "index.md": "# Home\n\n[gone](nowhere.md)\n"}, "nowhere.md"),
    ("a link to a missing anchor", {**GOOD, "index.md": "# Home\n\n[gone](other.md#no-such-heading)\n"},
     "no-such-heading"),
    ("a missing API reference", {**GOOD, "api.md": "# API\n\n::: attnscope.functional.no_such_function\n"},
     "no_such_function"),
])
def test_strict_build_fails_on_a_broken_link_or_reference(tmp_path, defect, pages, named):
    r = mkdocs_build(_variant(tmp_path, pages), tmp_path / "site")
    log = r.stdout + r.stderr
    if named is None:
        assert r.returncode == 0, log
        assert (tmp_path / "site" / "api.html").read_text(encoding="utf-8").count("softmax") > 1
    else:
        assert r.returncode != 0, f"{defect}: the strict build passed\n{log}"
        assert named in log, f"{defect}: the build log does not name {named!r}\n{log}"


HTML_LANG = re.compile(r"""<html\b[^>]*\blang=["']([^"']*)["']""", re.I)


def html_lang(path: Path) -> str:
    m = HTML_LANG.search(path.read_text(encoding="utf-8"))
    assert m, f"{path.name} has no <html lang>"
    return m.group(1)


def test_chinese_pages_are_marked_chinese(site):
    """<html lang="zh"> on every page of docs/zh/ (tools/mkdocs_hooks.py), lang="en" on every other."""
    out, _ = site
    zh = {f"zh/{p.relative_to(ROOT / 'docs' / 'zh').with_suffix('.html').as_posix()}"
          for p in (ROOT / "docs" / "zh").rglob("*.md")}
    assert "zh/tutorial/index.html" in zh and len(zh) >= 8, sorted(zh)
    langs = {f.relative_to(out).as_posix(): html_lang(f) for f in out.rglob("*.html")}
    assert {rel: langs.get(rel) for rel in zh} == dict.fromkeys(zh, "zh")
    others = {rel: lang for rel, lang in langs.items() if rel not in zh}
    assert others["index.html"] == "en" and others["tutorial/softmax.html"] == "en"
    assert {rel for rel, lang in others.items() if lang != "en"} == set()


def test_a_page_can_name_its_language_in_its_front_matter(tmp_path):
    pages = {"index.md": "# Home\n\nEnglish.\n", "zh/a.md": "# 中文\n\n中文页面。\n",
             "fr.md": "---\nlang: fr\n---\n\n# Français\n\nUne page.\n"}
    r = mkdocs_build(_variant(tmp_path, pages), tmp_path / "site")
    assert r.returncode == 0, r.stdout + r.stderr
    got = {rel: html_lang(tmp_path / "site" / rel) for rel in ("index.html", "zh/a.html", "fr.html")}
    assert got == {"index.html": "en", "zh/a.html": "zh", "fr.html": "fr"}


REMOTE = re.compile(r"""<(?:script|img|iframe|source|audio|video)\b[^>]*\bsrc=["']?(?:https?:)?//"""
                    r"""|<link\b[^>]*\bhref=["']?(?:https?:)?//""", re.I)
CSS_REMOTE = re.compile(r"""url\(\s*["']?(?:https?:)?//|@import\s+(?:url\()?\s*["']?(?:https?:)?//""", re.I)


def test_no_page_or_stylesheet_names_a_remote_resource(site):
    out, _ = site
    bad = []
    for f in out.rglob("*.html"):
        bad += [f"{f.relative_to(out)}: {m.group(0)}" for m in REMOTE.finditer(f.read_text(encoding="utf-8"))]
    for f in out.rglob("*.css"):
        bad += [f"{f.relative_to(out)}: {m.group(0)}" for m in CSS_REMOTE.finditer(f.read_text(encoding="utf-8"))]
    assert bad == [], "\n".join(bad[:20])
    # the one remote script Material would add for file:// search is the vendored copy
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "assets/vendor/iframe-worker/shim.js" in index and "unpkg.com" not in index


# ---------------------------------------------------------------------------------------------
# In Chromium, from disk


@pytest.fixture(scope="module")
def browser():
    """A Chromium context that lets file:, data: and blob: requests through and refuses and
    records (``browser.left``) every other."""
    with chromium_context("the site tests") as ctx:
        left: list[str] = []

        def refuse(route):
            url = route.request.url
            if url.startswith(("file:", "data:", "blob:")):
                route.continue_()
            else:
                left.append(url)
                route.abort()

        ctx.route("**/*", refuse)
        ctx.on("request", lambda r: None if r.url.startswith(("file:", "data:", "blob:")) else left.append(r.url))
        ctx.left = left
        yield ctx


@pytest.fixture
def page(browser):
    """A fresh tab; the test fails if the page logs an error, throws, or a request leaves the machine."""
    # DevTools' CSS agent re-reads file: stylesheets and logs this about its own request
    with watched_page(browser, ignored=["'file:' URLs are treated as unique security origins"]) as pg:
        del browser.left[:]
        yield pg
    assert browser.left == [], f"requests that left the machine: {browser.left}"


def _open(page, site, rel: str) -> None:
    out, _ = site
    page.goto((out / rel).as_uri())
    page.wait_for_load_state("load")
    page.evaluate("() => document.fonts.ready")


PAGES = {
    "index.html": "attnscope",
    "getting-started.html": "Getting started",
    "tutorial/index.html": "tutorial",
    "tutorial/scaling.html": "√d",
    "zh/tutorial/index.html": "教程",
    "howto/inspect-a-head.html": "head",
    "reference/api.html": "Python API",
}


@pytest.mark.browser
@pytest.mark.parametrize("rel", list(PAGES))
def test_page_renders_from_disk_with_no_request_leaving(page, site, rel):
    _open(page, site, rel)
    h1 = page.inner_text("article h1")
    assert PAGES[rel].lower() in h1.lower(), h1
    assert page.locator(".md-nav__link").count() > 10  # the navigation is there
    assert page.locator("article").inner_text().strip().count("\n") > 3


@pytest.mark.browser
@pytest.mark.parametrize("word, found", [("softmax", "Softmax"), ("缩放", "除以 √d_k")])
def test_offline_search_finds_a_word(page, site, word, found):
    """The search index is inlined for file:// and its worker runs in an iframe; Chinese, which has
    no spaces, is indexed character by character (mkdocs.yml's search separator)."""
    _open(page, site, "index.html")
    box = page.locator("input[data-md-component=search-query]")
    box.click()
    box.fill(word)
    box.press("End")  # a key event: the search reacts to the keyboard
    page.wait_for_selector(".md-search-result__item", timeout=30_000)
    titles = page.locator(".md-search-result__item h1").all_inner_texts()
    assert any(found in t for t in titles), titles


@pytest.mark.browser
def test_api_page_lists_known_functions(page, site):
    _open(page, site, "reference/api.html")
    for name, words in (("attnscope.functional.attention", "Dot-product attention"),
                        ("attnscope.models.load", None), ("attnscope.trace.Trace", None),
                        ("attnscope.explain.explain", None), ("attnscope.distributed.ring_attention", None)):
        heading = page.locator(f"[id='{name}']")
        assert heading.count() == 1, f"{name} is not on the API page"
        if words:
            assert words in page.locator(f"[id='{name}'] ~ .doc-contents").first.inner_text()
    assert ":func:" not in page.inner_text("article")  # Sphinx roles are dropped, the names stay


FONT_FACE = re.compile(r"@font-face\s*{(?P<body>[^}]*)}")


def test_the_site_carries_its_own_font_for_every_cjk_character_it_shows(site):
    """Without Chromium or the machine's fonts: stylesheets/cjk.css's @font-face names the family
    and the built font file, its unicode-range holds every CJK character of the built pages that the
    bundled font has, the file's character map (fontTools) draws all of them, Material's text and
    code fonts name the family first, and every page links the stylesheet."""
    from fontTools.ttLib import TTFont

    from attnscope.fonts import has_glyph
    from tests.browser.cjk_glyphs import is_cjk

    out, _ = site
    css = (out / "stylesheets" / "cjk.css").read_text(encoding="utf-8")
    faces = [m.group("body") for m in FONT_FACE.finditer(css)]
    assert len(faces) == 1 and f'font-family: "{CJK_FAMILY}"' in faces[0], css[:500]
    src = re.search(r'src:\s*url\("([^"]+)"\)', faces[0])
    assert src, faces[0]
    font_file = (out / "stylesheets" / src.group(1)).resolve()
    assert font_file == (out / "assets" / "fonts" / "attnscope-cjk.otf").resolve() and font_file.is_file()
    ranges = re.search(r"unicode-range:\s*([^;]+);", faces[0])
    assert ranges, faces[0]
    covered = {chr(int(r.strip()[2:], 16)) for r in ranges.group(1).split(",")}
    shown: set[str] = set()
    for f in out.rglob("*.html"):
        text = re.sub(r"<[^>]+>", " ", f.read_text(encoding="utf-8"))
        shown.update(c for c in text if is_cjk(c) and has_glyph(c))
    assert len(shown) > 500, len(shown)  # the Chinese tutorial's characters, at least
    assert sorted(shown - covered) == []
    with TTFont(str(font_file)) as font:
        cmap = font.getBestCmap()
    assert sorted(c for c in covered if ord(c) not in cmap) == []
    for var in ("--md-text-font", "--md-code-font"):
        assert re.search(rf'{var}:\s*"{CJK_FAMILY}"', css), var
    for rel in ("index.html", "zh/tutorial/index.html", "tutorial/tokens.html"):
        assert "stylesheets/cjk.css" in (out / rel).read_text(encoding="utf-8"), rel


@pytest.mark.browser
@pytest.mark.parametrize("rel", ["zh/tutorial/index.html", "zh/tutorial/scaling.html", "tutorial/tokens.html"])
def test_chinese_text_is_drawn_with_the_sites_font(page, site, rel):
    _open(page, site, rel)
    # text, tables and code blocks (the CLI's Chinese output), and the navigation's Chinese titles
    checked, bad = cjk_fallbacks(page, "article h1, article h2, article p, article li, article td, "
                                       "article pre code, .md-nav__link", CJK_FAMILY, skip_undrawn=True)
    assert checked >= 3, f"only {checked} elements with CJK text on {rel}"
    assert bad == [], bad[:3]


@pytest.mark.browser
def test_screenshots_of_the_tutorial_and_the_chinese_page(page, site):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for rel, name in (("tutorial/softmax.html", "tutorial-softmax.png"), ("zh/tutorial/softmax.html", "zh-tutorial-softmax.png"),
                      ("index.html", "index.png")):
        _open(page, site, rel)
        page.screenshot(path=str(ARTIFACTS / name), full_page=False)
        assert (ARTIFACTS / name).stat().st_size > 10_000
