"""ConditionalMiddleware: validators sent only for pages of the live graph; 304 → carried over."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from scrapy import Request, Spider
from scrapy.http import HtmlResponse, Response
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from skillgraph.build import Build
from skillgraph.middlewares.conditional import ConditionalMiddleware
from skillgraph.page.outcomes import PageUnchanged
from skillgraph.signals import build_committed, build_failed, page_not_modified
from tests.conftest import _origin_site
from tests.servers import Rule, SiteServer

PAGE = "http://127.0.0.1:1/docs/a.html"


class GraphSpider(Spider):
    name = "g"
    graph_name = "g"

    def parse_page(self, response: Response) -> None:
        pass


def make_middleware(tmp_path: Path, validators: dict[str, tuple[str | None, str | None]]) -> ConditionalMiddleware:
    graphs = tmp_path / "graphs"
    (graphs / "g").mkdir(parents=True)
    (graphs / "g" / "sources.json").write_text(json.dumps({"pages": [{"url": PAGE, "file": "a.md"}]}))
    crawler = get_crawler(GraphSpider, {"SKILLGRAPH_GRAPHS_DIR": str(graphs),
                                        "SKILLGRAPH_STATE_PATH": str(tmp_path / "state.sqlite3")})
    crawler.spider = GraphSpider()
    mw = build_from_crawler(ConditionalMiddleware, crawler)
    asyncio.run(mw.state.set_validators(validators))
    return mw


def test_validators_only_for_live_pages_and_never_for_probes(tmp_path: Path) -> None:
    mw = make_middleware(tmp_path, {PAGE: ('"v1"', "Sun, 29 Nov 2026 12:00:00 GMT")})
    spider = mw.crawler.spider
    page = Request(PAGE, callback=spider.parse_page)  # type: ignore[union-attr]
    probe = Request(PAGE, callback=NO_CALLBACK, meta={"skillgraph_probe": True})
    other = Request("http://127.0.0.1:1/docs/new.html", callback=spider.parse_page)  # type: ignore[union-attr]

    async def scenario() -> Request:
        for request in (page, probe, other):
            await mw.process_request(request)
        hop = page.replace(url="http://127.0.0.1:1/docs/moved.html")  # a redirect copies headers and meta
        await mw.process_request(hop)
        return hop

    hop = asyncio.run(scenario())
    assert page.headers[b"If-None-Match"] == b'"v1"'
    assert page.headers[b"If-Modified-Since"] == b"Sun, 29 Nov 2026 12:00:00 GMT"
    assert b"If-None-Match" not in probe.headers
    assert b"If-Modified-Since" not in other.headers, "not in the live graph: a 304 could not be honoured"
    assert b"If-None-Match" not in hop.headers and "skillgraph_conditional" not in hop.meta
    assert mw.crawler.stats.get_value("skillgraph/conditional/sent") == 1


def test_304_carries_over_and_validators_wait_for_a_committed_build(tmp_path: Path) -> None:
    mw = make_middleware(tmp_path, {PAGE: ('"v1"', None)})
    crawler, spider = mw.crawler, mw.crawler.spider
    carried: list[str] = []
    crawler.signals.connect(lambda url: carried.append(url), signal=page_not_modified, weak=False)
    page = Request(PAGE, callback=spider.parse_page)  # type: ignore[union-attr]
    b_url = "http://127.0.0.1:1/docs/b.html"

    async def scenario() -> None:
        await mw.process_request(page)
        with pytest.raises(PageUnchanged):
            await mw.process_response(page, Response(PAGE, status=304, request=page))
        plain = Request(b_url, callback=spider.parse_page)  # type: ignore[union-attr]
        spontaneous = Response(plain.url, status=304, request=plain)
        assert await mw.process_response(plain, spontaneous) is spontaneous, "we did not ask: not ours to handle"
        fresh = HtmlResponse(plain.url, body=b"<p>x</p>", headers={"ETag": '"b1"'}, request=plain)
        assert await mw.process_response(plain, fresh) is fresh
        await crawler.signals.send_catch_log_async(build_failed, build=Build.of(crawler))
        assert await mw.state.validators(b_url) == (None, None), "build not committed: nothing stored"
        await crawler.signals.send_catch_log_async(build_committed, build=Build.of(crawler))
        assert await mw.state.validators(b_url) == ('"b1"', None)

    asyncio.run(scenario())
    assert carried == [PAGE]
    assert crawler.stats.get_value("skillgraph/conditional/not_modified") == 1
    assert crawler.stats.get_value("skillgraph/conditional/discarded") == 1
    assert crawler.stats.get_value("skillgraph/conditional/stored") == 1


@pytest.fixture
def llms_site(tmp_path: Path) -> Iterator[SiteServer]:
    _, server = _origin_site("llms_stub", tmp_path / "site")
    yield server
    server.stop()


def test_llms_twins_revalidate_with_etag_in_local_mode(crawl, llms_site: SiteServer, tmp_path: Path) -> None:
    site, graphs = llms_site, tmp_path / "graphs"
    settings = {"SKILLGRAPH_SSRF_ALLOWLIST": f"127.0.0.1:{site.port}", "SKILLGRAPH_RENDER_ENABLED": False,
                "SKILLGRAPH_RECENCY_HOURS": 0}
    site.rules["/docs/guide.html.md"] = Rule(headers={"ETag": '"guide-1"'})
    first = crawl("docs", graphs=graphs, settings=settings, url=site.url + "docs/", graph="acme")
    assert first.returncode == 0, first.log[-3000:]
    pages = first.sources["pages"]
    assert first.sources["changes"]["new"] == len(pages) >= 4
    guide = next(p for p in pages if p["url"] == site.url + "docs/guide.html")
    assert guide["tier"] == "markdown"

    site.rules["/docs/guide.html.md"] = Rule(status=304, headers={"ETag": '"guide-1"'}, body=b"")
    mark = len(site.requests)
    second = crawl("docs", graphs=graphs, settings=settings, url=site.url + "docs/", graph="acme")
    assert second.returncode == 0, second.log[-3000:]
    sources = second.sources
    assert sources["changes"] == {"new": 0, "changed": 0, "unchanged": len(pages), "removed": 0}
    sent = {path: headers for _, path, headers in site.requests[mark:]}
    assert sent["/docs/guide.html.md"].get("If-None-Match") == '"guide-1"'
    assert "/docs/guide.html" not in sent, "a twin answered 304 is kept: no fallback to the HTML page"
    assert "skillgraph/llms/twin_error" not in second.stats
    assert second.stats["skillgraph/conditional/not_modified"] == len(pages), "every page revalidated"
    assert "skillgraph/dual_write/disk_written" not in second.stats
    kept = next(p for p in sources["pages"] if p["url"] == guide["url"])
    assert kept["sha256"] == guide["sha256"] and kept["tier"] == "markdown"
    assert (second.graph / kept["file"]).read_text() == (first.graph / guide["file"]).read_text()
