"""The render tier with real Chromium (scrapy-playwright): CSR shells, waiting, closing, a missing browser.

``csr_site`` serves client-side-rendered pages: an empty ``#root`` plus a module
script that fetches the content and mounts it after a delay. Links to further
pages exist only in the rendered DOM.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import lxml.etree as etree
import pytest

from skillgraph.render import detect_shell
from tests.conftest import CORPUS, PYTHON_DOCS, SITES
from tests.servers import Rule, SiteServer
from tests.test_tiers import allow, pages_by_url

SHELLS = ("index.html", "guide.html", "api.html", "broken.html")


@pytest.fixture(scope="module")
def csr_site() -> Iterator[SiteServer]:
    server = SiteServer(SITES / "csr_site")
    yield server
    server.stop()


def parse(path: Path) -> etree._Element:
    return etree.fromstring(path.read_bytes(), etree.HTMLParser())


def test_csr_pages_are_rendered_in_chromium(crawl, csr_site: SiteServer) -> None:
    site = csr_site.url
    result = crawl("docs", url=site + "docs/index.html", graph="csr",
                   settings={**allow(site), "SKILLGRAPH_RENDER_TIMEOUT": "6", "DEPTH_LIMIT": "1"})
    assert result.returncode == 0, result.log[-3000:]
    sources = result.sources
    pages = pages_by_url(sources)
    # A tier request is the same page, not a link deeper: with DEPTH_LIMIT=1 the index (depth 0) is rendered
    # and the pages it links to (depth 1) are all crawled and rendered too.
    assert len(pages) == 5
    assert result.stats["request_depth_max"] == 1
    assert "depth/request_ignored_count" not in result.stats
    for name in ("index.html", "guide.html", "api.html"):
        page = pages[site + "docs/" + name]
        assert page["tier"] == "render", name
        assert page["quality"] >= 0.5
    guide = (result.graph / pages[site + "docs/guide.html"]["file"]).read_text()
    assert "# Widget user guide" in guide and "```python" in guide and "@scheduler.every(30)" in guide
    # about.html is linked only from the rendered index: found by following the rendered DOM; static: html tier.
    assert pages[site + "docs/about.html"]["tier"] == "html"
    # A bundle that throws leaves an empty shell: rendered, waited for (bounded), still failing -> flagged.
    assert pages[site + "docs/broken.html"]["tier"] == "best-effort"
    warnings = [w for w in sources["warnings"] if w["url"] == site + "docs/broken.html"]
    assert [w["kind"] for w in warnings] == ["best-effort"]
    assert "client-side-rendered shell" in warnings[0]["message"] and "render:" in warnings[0]["message"]
    # Cheap first, shells included: a shell tries `Accept: text/markdown` before the browser. This host
    # answers it with HTML, so it is remembered as not negotiating; only shells already in flight ask too.
    negotiations = [h for _, _, h in csr_site.requests if "text/markdown" in h.get("Accept", "")]
    assert 1 <= len(negotiations) <= len(SHELLS)
    stats = result.stats
    assert stats["skillgraph/tiers/shell_detected"] == len(SHELLS)
    assert stats["skillgraph/tiers/render/requested"] == len(SHELLS)
    assert stats["skillgraph/tiers/document/render"] == 3
    # Every page opened for a render was closed; one context, pages bounded.
    assert stats["playwright/page_count"] == stats["playwright/page_count/closed"] == len(SHELLS)
    assert stats["playwright/context_count"] == 1
    assert stats["playwright/page_count/max_concurrent"] <= 4
    # Images are aborted in the browser (a text extraction never reads them).
    assert stats["playwright/request_count/aborted"] >= 1
    assert "/docs/static/logo.png" not in csr_site.paths()


def test_thin_pages_go_to_the_browser_only_when_scripts_could_fill_them(crawl, csr_site: SiteServer) -> None:
    # Three thin pages that are no shells (a navigation of 200+ characters), each with a theme script: a hybrid
    # page whose article is mounted by a script, a short static page and a search page.
    site = csr_site.url
    result = crawl("docs", url=site + "docs/hybrid.html", graph="hybrid",
                   settings={**allow(site), "SKILLGRAPH_RENDER_TIMEOUT": "6", "DEPTH_LIMIT": "1"})
    assert result.returncode == 0, result.log[-3000:]
    pages = pages_by_url(result.sources)
    hybrid, thin, search = (pages[site + "docs/" + name] for name in ("hybrid.html", "thin.html", "search.html"))
    assert hybrid["tier"] == "render"
    article = (result.graph / hybrid["file"]).read_text()
    assert "one priority queue ordered by its next run time" in article and "```python" in article
    # A browser would show the same: best effort at once, the reason recorded, no browser for them.
    assert thin["tier"] == search["tier"] == "best-effort"
    messages = {w["url"]: w["message"] for w in result.sources["warnings"]}
    assert "render: skipped: nothing in its main region waits for scripts" in messages[site + "docs/thin.html"]
    assert "render: skipped: a search page: its results need a query" in messages[site + "docs/search.html"]
    stats = result.stats
    assert stats["skillgraph/tiers/render/requested"] == 1
    assert stats["skillgraph/tiers/render/skipped"] == 2
    assert stats["playwright/page_count"] == 1


def test_render_timeout_is_recorded_and_the_page_kept_as_best_effort(crawl) -> None:
    # The bundle arrives after the navigation bound: the render fails, the ladder records why and moves on.
    slow = SiteServer(SITES / "csr_site", rules={"/docs/static/app.js": Rule(delay=3.5)})
    try:
        site = slow.url
        result = crawl("docs", url=site + "docs/guide.html", graph="slow",
                       settings={**allow(site), "SKILLGRAPH_RENDER_TIMEOUT": "2"})
    finally:
        slow.stop()
    assert result.returncode == 0, result.log[-3000:]
    [page] = result.sources["pages"]
    assert page["tier"] == "best-effort"
    [warning] = result.sources["warnings"]
    assert warning["kind"] == "best-effort" and "render: render request failed: TimeoutError" in warning["message"]
    assert result.stats["skillgraph/tiers/render/error"] == 1
    assert result.stats["playwright/page_count"] == result.stats["playwright/page_count/closed"] == 1


def test_missing_browser_is_a_clear_error_at_start_when_rendering_was_asked_for(
        crawl, csr_site: SiteServer, tmp_path: Path) -> None:
    site = csr_site.url
    result = crawl("docs", url=site + "docs/index.html", graph="nobrowser",
                   settings={**allow(site), "SKILLGRAPH_RENDER_BROWSER": str(tmp_path / "no-chromium"),
                             "SKILLGRAPH_RENDER_ENABLED": "True"})
    assert result.returncode != 0
    assert "no-chromium" in result.log and "is not an executable file" in result.log
    assert "RenderUnavailableError" in result.log
    assert not result.graph.exists()
    assert not [p for _, p, _ in csr_site.requests if p.endswith("nobrowser")]


def test_missing_browser_by_default_costs_one_warning_not_the_crawl(crawl, csr_site: SiteServer,
                                                                    tmp_path: Path) -> None:
    """Issue 14: rendering on by default only, no Chromium: one warning line and a stat; the crawl builds."""
    site = csr_site.url
    result = crawl("docs", url=site + "docs/guide.html", graph="defaultnobrowser",
                   settings={**allow(site), "SKILLGRAPH_RENDER_BROWSER": str(tmp_path / "no-chromium"),
                             "SKILLGRAPH_TIERS_NEGOTIATE": "False"})
    assert result.returncode == 0, result.log[-3000:]
    warned = [line for line in result.log.splitlines() if "Render tier off" in line]
    assert len(warned) == 1 and "no-chromium" in warned[0] and "WARNING" in warned[0]
    assert "RenderUnavailableError" not in result.log and "Traceback" not in result.log
    assert result.stats["skillgraph/render/unavailable"] == 1
    assert not any(k.startswith("playwright/") for k in result.stats)
    [page] = result.sources["pages"]
    assert page["tier"] == "best-effort", "the shell page is kept, flagged, without a browser"


def test_render_off_degrades_shells_to_best_effort_without_a_browser(crawl, csr_site: SiteServer) -> None:
    site = csr_site.url
    result = crawl("docs", url=site + "docs/guide.html", graph="norender",
                   settings={**allow(site), "SKILLGRAPH_RENDER_ENABLED": "False", "SKILLGRAPH_TIERS_NEGOTIATE": "False",
                             "SKILLGRAPH_RENDER_BROWSER": "/nonexistent"})
    assert result.returncode == 0, result.log[-3000:]
    [page] = result.sources["pages"]
    assert page["tier"] == "best-effort"
    assert [w["kind"] for w in result.sources["warnings"]] == ["best-effort"]
    assert not any(k.startswith("playwright/") for k in result.stats)


def test_shell_detection() -> None:
    for name in SHELLS:
        shell = detect_shell(parse(SITES / "csr_site" / "docs" / name))
        assert shell.is_shell and "#root" in shell.reason, name
    assert not detect_shell(parse(SITES / "csr_site" / "docs" / "about.html")).is_shell
    # The shared corpus's pages when present (SKILLGRAPH_TEST_CORPUS), the real Python docs always.
    real = sorted(CORPUS.glob("doc_html/**/*.html")) + sorted(PYTHON_DOCS.glob("library/a*.html"))
    assert len(real) > 20
    flagged = [p for p in real if detect_shell(parse(p)).is_shell]
    assert flagged == [], "real documentation pages are never shells"
    assert not detect_shell(None).is_shell
    # Why a thin non-shell page is not rendered ("" when a script could fill it).
    docs = SITES / "csr_site" / "docs"
    skips = {name: detect_shell(parse(docs / name), "http://h/docs/" + name).render_skip
             for name in ("hybrid.html", "thin.html", "search.html", "about.html")}
    assert skips == {"hybrid.html": "", "thin.html": "nothing in its main region waits for scripts (no empty mount)",
                     "search.html": "a search page: its results need a query", "about.html": "the page has no scripts"}
    # The search rule needs the form to query the page itself: with another page's search box, the empty
    # results box is a mount like any other, and the page goes to the browser.
    box = parse(docs / "search.html")
    box.find(".//form").set("action", "search.html")
    assert detect_shell(box, "http://h/docs/thin.html").render_skip == ""
    box.find(".//form").set("action", "/docs/search.html?from=nav")
    assert detect_shell(box, "http://h/docs/search.html").render_skip.startswith("a search page")
    del box.find(".//form").attrib["action"]  # no action at all: a box scripts handle (rustdoc's), not a query page
    assert detect_shell(box, "http://h/docs/search.html").render_skip == ""


def html(markup: str) -> etree._Element:
    return etree.fromstring(markup, etree.HTMLParser())


BUNDLE = "<script src='/app.js'></script>"


@pytest.mark.parametrize(("body", "mount"), [
    ("<div id='app'></div>", "#app"),
    ("<div data-reactroot=''></div>", "#div"),
    ("<app-root></app-root>", "#app-root"),
    ("<section><p>x</p></section><div id='x' data-reactroot='1'></div><div id='root'></div>", "#x"),  # the first
    ("<app-root></app-root><div id='root'></div>", "#app-root"),
])
def test_a_mount_point_is_found_by_id_data_reactroot_or_tag_and_the_first_wins(body: str, mount: str) -> None:
    shell = detect_shell(html(f"<html><head>{BUNDLE}</head><body>{body}</body></html>"))
    assert shell.is_shell and mount in shell.reason, shell
    # an id that merely contains a known one ("approot", "root-nav") is no mount point
    near = detect_shell(html(f"<html><head>{BUNDLE}</head><body><div id='approot'></div><div id='root-nav'></div>"
                             "</body></html>"))
    assert "empty app root" not in near.reason


def test_the_main_region_is_the_first_main_article_or_role_main_and_only_its_descendants_are_mounts() -> None:
    prose = "<p>" + "Enough text to read as a page of its own, not a loading box. " * 6 + "</p>"
    page = ("<html><head>" + BUNDLE + "</head><body><nav><div id='menu'></div></nav>"
            "<div role='main'>{inner}</div><article><div id='late'></div></article></body></html>")
    # the empty #menu is outside the main region, the empty article #late comes after it: nothing waits for scripts
    assert detect_shell(html(page.format(inner=prose)), "http://h/p.html").render_skip.startswith("nothing")
    # an empty id'd div inside the main region is a mount: the page may need the browser
    assert detect_shell(html(page.format(inner=prose + "<div id='widget'></div>")), "http://h/p.html").render_skip == ""
    # the main region itself holding one child is not its own mount
    one = "<html><head>" + BUNDLE + "</head><body><main><div>" + prose + "</div></main></body></html>"
    assert detect_shell(html(one), "http://h/p.html").render_skip.startswith("nothing")
