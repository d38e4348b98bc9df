"""Splash as the render backend, through skillgraph.render.splash_compat (scrapy-splash 0.11.1 on Scrapy 2.19).

No Splash server can run here, so ``FakeSplash`` is a loopback HTTP server that
answers Splash's ``render.html`` HTTP API the way Splash does for these pages:
it fetches the ``url`` argument and returns the HTML after "running" the page's
client-side app (it mounts the csr_site's content into its ``#root``, as the
bundle would). Everything on the Scrapy side — scrapy-splash's request
rewriting, slot policy, response classes, its spider middleware — is real.
"""

from __future__ import annotations

import asyncio
import json
import re
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import pytest
from scrapy import Spider
from scrapy.core.spidermw import SpiderMiddlewareManager
from scrapy.utils.test import get_crawler

from tests.conftest import SITES
from tests.servers import LoopbackHTTPServer, SiteServer
from tests.test_tiers import allow, pages_by_url

SPLASH_DEDUP = "skillgraph.render.splash_compat.SplashDeduplicateArgsMiddleware"


def render_html(url: str, headers: dict[str, str]) -> tuple[int, bytes]:
    """Fetch ``url`` and run the csr_site app on it: mount its page's content into ``#root``."""
    request = urllib.request.Request(url, headers={k: v for k, v in headers.items() if k.lower() != "accept-encoding"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            html = response.read().decode("utf-8")
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    if '<div id="root"></div>' in html and 'src="static/app.js"' in html:
        page = urlsplit(url).path.rsplit("/", 1)[-1] or "index.html"
        with urllib.request.urlopen(urljoin(url, "static/pages.json"), timeout=10) as response:
            entry = json.load(response).get(page)
        if entry is not None:  # broken.html: the bundle throws, the root stays empty
            html = html.replace('<div id="root"></div>', f'<div id="root"><main>{entry["html"]}</main></div>')
            html = re.sub(r"<title>.*?</title>", f"<title>{entry['title']} | Widget docs</title>", html)
    return 200, html.encode("utf-8")


class FakeSplash(LoopbackHTTPServer):
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def _answer(self, args: dict[str, Any]) -> None:
                server.calls.append({"path": urlsplit(self.path).path, **args})
                if urlsplit(self.path).path != "/render.html" or "url" not in args:
                    status, body, ctype = 400, b'{"error": 400, "type": "BadOption"}', "application/json"
                else:
                    status, body = render_html(args["url"], args.get("headers") or {})
                    ctype = "text/html; charset=utf-8"
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                self._answer(json.loads(self.rfile.read(length) or b"{}"))

            def do_GET(self) -> None:
                self._answer({k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()})

        super().__init__(Handler)


@pytest.fixture(scope="module")
def splash() -> Iterator[FakeSplash]:
    server = FakeSplash()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def csr_site() -> Iterator[SiteServer]:
    server = SiteServer(SITES / "csr_site")
    yield server
    server.stop()


def test_splash_backend_renders_csr_pages(crawl, csr_site: SiteServer, splash: FakeSplash) -> None:
    site = csr_site.url
    result = crawl("docs", url=site + "docs/index.html", graph="splash",
                   settings={**allow(site, splash.url), "SKILLGRAPH_RENDER_BACKEND": "splash",
                             "SKILLGRAPH_SPLASH_URL": splash.url, "SKILLGRAPH_RENDER_TIMEOUT": "5",
                             "SKILLGRAPH_RENDER_BROWSER": "/nonexistent"})  # no browser needed for Splash
    assert result.returncode == 0, result.log[-3000:]
    pages = pages_by_url(result.sources)
    for name in ("index.html", "guide.html", "api.html"):
        assert pages[site + "docs/" + name]["tier"] == "render", name
    assert pages[site + "docs/about.html"]["tier"] == "html", "links of the Splash-rendered page are followed"
    assert pages[site + "docs/broken.html"]["tier"] == "best-effort"
    guide = (result.graph / pages[site + "docs/guide.html"]["file"]).read_text()
    assert "```python" in guide and "@scheduler.every(30)" in guide
    rendered = sorted(c["url"].rsplit("/", 1)[-1] for c in splash.calls if c["path"] == "/render.html")
    assert rendered == sorted(["index.html", "guide.html", "api.html", "broken.html"])
    assert all(c["timeout"] == 5 and c["wait"] == 0.5 for c in splash.calls)
    assert result.stats["splash/render.html/request_count"] == 4
    assert result.stats["splash/render.html/response_count/200"] == 4
    assert result.stats["skillgraph/render/backend"] == "splash"
    assert not any(k.startswith("playwright/") for k in result.stats)
    assert "ScrapyDeprecationWarning" not in result.log


def test_splash_without_url_is_a_clear_error_at_start(crawl, csr_site: SiteServer) -> None:
    result = crawl("docs", url=csr_site.url + "docs/index.html", graph="nosplash",
                   settings={**allow(csr_site.url), "SKILLGRAPH_RENDER_BACKEND": "splash"})
    assert result.returncode != 0
    assert "SKILLGRAPH_SPLASH_URL is empty" in result.log


def test_scrapy_splash_spider_middleware_needs_the_compat_layer() -> None:
    import skillgraph.render.splash_compat  # noqa: F401  (scrapy_splash imports only after it)

    original = get_crawler(Spider, {"SPIDER_MIDDLEWARES": {"scrapy_splash.SplashDeduplicateArgsMiddleware": 100}})
    with pytest.raises(TypeError, match="asynchronous spider output"):
        SpiderMiddlewareManager.from_crawler(original)
    compat = get_crawler(Spider, {"SPIDER_MIDDLEWARES": {SPLASH_DEDUP: 100}})
    manager = SpiderMiddlewareManager.from_crawler(compat)
    assert any(type(mw).__name__ == "SplashDeduplicateArgsMiddleware" for mw in manager.middlewares)


def test_dedup_args_middleware_handles_async_output() -> None:
    from scrapy_splash import SplashRequest

    from skillgraph.render.splash_compat import LOCAL_VALUES_KEY, SplashDeduplicateArgsMiddleware

    crawler = get_crawler(Spider)
    crawler.spider = Spider("s")
    mw = SplashDeduplicateArgsMiddleware.from_crawler(crawler)
    script = "function main(splash) return splash:html() end"
    requests = [SplashRequest(f"http://127.0.0.1:1/{n}", endpoint="execute", args={"lua_source": script},
                              cache_args=["lua_source"]) for n in range(3)]

    async def output() -> AsyncIterator[Any]:
        for request in [*requests, {"an": "item"}]:
            yield request

    async def collect() -> list[Any]:
        return [x async for x in mw.process_spider_output_async(None, output())]  # type: ignore[arg-type]

    results = asyncio.run(collect())
    assert results[-1] == {"an": "item"}
    fingerprints = {r.meta["splash"]["args"]["lua_source"] for r in results[:-1]}
    assert len(fingerprints) == 1 and next(iter(fingerprints)).startswith("LOCAL+"), "stored once, by fingerprint"
    assert crawler.spider.state[LOCAL_VALUES_KEY] == {next(iter(fingerprints)): script}
