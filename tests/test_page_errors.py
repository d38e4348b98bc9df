"""PageErrors: a page whose evaluation raised is a ``skipped`` entry with the exception, never a silent loss.

A real crawl of a loopback site: one page has an ``href`` no URL parser accepts
(``http://[user@]host/path``, from vim's netrw manual, which once made the page's
evaluation raise and the page vanish from an exit-0 build); another page's
evaluation is made to raise by a spider of this module that fails on it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scrapy.http import Response

from skillgraph.page.work import read_links
from skillgraph.spiders.docs import DocsSpider
from tests.servers import SiteServer

PAGE = "<html><head><title>{0}</title></head><body><main><h1>{0}</h1>{1}</main></body></html>"
TEXT = "<p>" + "This page documents a part of the tool with enough words to be a real page. " * 6 + "</p>"


class FaultyDocsSpider(DocsSpider):
    """The docs spider, whose page callback raises on ``broken.html`` (a bug nobody has found yet)."""

    name = "docs_faulty"

    async def parse_page(self, response: Response, follow: bool = False) -> Any:  # type: ignore[override]
        if response.url.endswith("/broken.html"):
            raise RuntimeError("injected evaluation failure")
        async for output in super().parse_page(response, follow=follow):
            yield output


def site(root: Path) -> None:
    pages = {
        "index.html": ("Home", '<a href="netrw.html">netrw</a> <a href="broken.html">broken</a>'),
        "netrw.html": ("Netrw", '<p>Read <a href="http://[user@]host/path">http://[user@]host/path</a> and '
                                '<a href="ftp://[user@]host/path">ftp</a>, then <a href="after.html">after</a>.</p>'),
        "broken.html": ("Broken", ""),
        "after.html": ("After", ""),
    }
    for name, (title, links) in pages.items():
        (root / name).write_text(PAGE.format(title, links + TEXT), "utf-8")


def test_an_unparsable_href_is_no_link_and_the_page_keeps_its_others() -> None:
    html = PAGE.format("Netrw", '<a href="http://[user@]host/path">x</a> <a href="after.html">after</a>' + TEXT)
    from lxml import etree

    root = etree.HTML(html.encode())
    inside, outside = read_links("http://docs.test/netrw.html", html, root, "http://docs.test/")
    assert inside == ["http://docs.test/after.html"] and outside == []


def test_a_page_whose_evaluation_raises_is_skipped_with_the_exception(crawl: Any, tmp_path: Path) -> None:
    root = tmp_path / "site"
    root.mkdir()
    site(root)
    server = SiteServer(root)
    try:
        result = crawl("docs_faulty", url=server.url + "index.html", graph="faulty",
                       settings={"SPIDER_MODULES": "skillgraph.spiders,tests.test_page_errors",
                                 "SKILLGRAPH_RENDER_ENABLED": False})
    finally:
        server.stop()
    assert result.returncode == 0, result.log[-3000:]
    pages = {p["url"].rsplit("/", 1)[1] for p in result.sources["pages"]}
    assert pages == {"index.html", "netrw.html", "after.html"}, "netrw.html is a page, and its link was followed"
    skipped = {s["url"].rsplit("/", 1)[1]: s for s in result.sources["skipped"]}
    assert set(skipped) == {"broken.html"}
    assert skipped["broken.html"]["reason"] == "low-quality"
    assert "RuntimeError: injected evaluation failure" in skipped["broken.html"]["detail"]
    assert result.stats["skillgraph/page/evaluation_errors"] == 1
    assert "Page http://127.0.0.1" in result.log and "could not be evaluated" in result.log
