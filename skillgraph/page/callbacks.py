"""PageCallbacks: what happens to a page's response, for any spider.

Scrapy serialises a request's callback and errback by the name of a method of
the spider (``request_to_dict``), so the page callbacks must be spider methods
for JOBDIR and the shared scrapy-redis frontier to keep working. They live in
this mixin: ``SkillgraphSpider`` inherits it, and the strategy middleware binds
the same functions onto a plain ``scrapy.Spider`` that enables it
(:func:`bind_page_callbacks`), so any spider gets the whole ladder.

State is the Build's (:mod:`skillgraph.build`): the profile, the ledger, the
budget. Nothing here is kept on the spider.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from types import MethodType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit
from weakref import WeakKeyDictionary

from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, Response, TextResponse
from scrapy.spidermiddlewares.httperror import HttpError

from skillgraph.build import Build
from skillgraph.graph import llms as graph_llms
from skillgraph.items import DocumentItem
from skillgraph.page.outcomes import PageUnchanged, Unreached
from skillgraph.strategy.llms import looks_like_html
from skillgraph.strategy.profiler import utc_now
from skillgraph.tiers import TierLadder

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler

_MARKDOWN_TYPES = ("text/markdown", "text/x-markdown", "text/plain")
_DEPTH_LIMITS: WeakKeyDictionary[Crawler, int] = WeakKeyDictionary()


def depth_limit(crawler: Crawler) -> int:
    """``DEPTH_LIMIT``, read once per crawler."""
    limit = _DEPTH_LIMITS.get(crawler)
    if limit is None:
        limit = _DEPTH_LIMITS[crawler] = crawler.settings.getint("DEPTH_LIMIT", 0)
    return limit


def failure_reason(failure: Any) -> tuple[str, int | None, str]:
    """A failed page request as a ``skipped`` entry: (reason, HTTP status, detail)."""
    if failure.check(HttpError):
        return "http", failure.value.response.status, ""
    message = str(failure.value)
    if failure.check(IgnoreRequest):
        if "robots.txt" in message:
            return "robots", None, message[:200]
        if message.startswith("SSRF guard"):
            return "ssrf", None, message[:200]
        if message.startswith("blocked"):
            return "blocked", None, message[:200]
    return "network", None, f"{type(failure.value).__name__}: {message}"[:200]


class PageCallbacks:
    """Page callbacks and errbacks; every URL they see ends in the Build's ledger."""

    crawler: Crawler

    def in_site(self, url: str) -> bool:
        """Beyond the scope, may this page be part of the graph? (SectionsSpider narrows it.)"""
        return True

    def page_request(self, url: str, follow: bool = False, **kwargs: Any) -> Request:
        """A page request; its failures reach :meth:`page_failed`, so every URL ends accounted for."""
        request = Request(url, callback=self.parse_page, errback=self.page_failed, **kwargs)
        if follow:
            request.cb_kwargs["follow"] = True
        return request

    def page_failed(self, failure: Any) -> None:
        """Record why a page request produced no response (DESIGN.md's ``skipped`` reasons)."""
        if failure.check(PageUnchanged, Unreached):
            return  # carried over from the live graph / left unreached by the page bound or the timeout
        request = failure.request
        reason, status, detail = failure_reason(failure)
        link = str(request.meta.get("skillgraph_link") or request.url)
        Build.of(self.crawler).skip(link, reason, status=status, detail=detail or None)

    def tier_failed(self, failure: Any) -> Iterator[Any]:
        """A ladder request (``negotiated``, ``render``) failed: the ladder records it and moves on."""
        yield from TierLadder.of(self).failed(failure)

    # llms.txt links: the .md twin first -----------------------------------------

    async def parse_twin(self, response: Response) -> AsyncIterator[Any]:
        """Use the ``.md`` twin when it is real markdown; otherwise fetch the page itself."""
        if response.status == 200 and self.is_markdown(response):
            async for output in self.parse_page(response):
                yield output
            return
        self.crawler.stats.inc_value("skillgraph/llms/twin_missing")
        yield self.original_request(response.request)

    def twin_failed(self, failure: Any) -> Iterator[Request]:
        if failure.check(PageUnchanged, Unreached):  # carried over (issue 5), or past a bound
            return
        self.crawler.stats.inc_value("skillgraph/llms/twin_error")
        yield self.original_request(failure.request)

    def original_request(self, request: Request | None) -> Request:
        assert request is not None
        meta = {k: v for k, v in request.meta.items() if k.startswith("skillgraph_")}
        return self.page_request(request.meta["skillgraph_link"], meta=meta)

    # pages -------------------------------------------------------------------------

    @staticmethod
    def is_markdown(response: Response) -> bool:
        ctype = (response.headers.get(b"Content-Type") or b"").decode("latin-1").lower()
        body_head = response.body[:256].decode("utf-8", "replace")
        if looks_like_html(body_head, ctype):
            return False
        path = urlsplit(response.url).path.lower()
        return ctype.startswith(_MARKDOWN_TYPES) or path.endswith((".md", ".markdown", ".mdx"))

    async def parse_page(self, response: Response, follow: bool = False) -> AsyncIterator[Any]:
        link = response.meta.get("skillgraph_link", response.url)
        ok = 200 <= response.status < 300  # 403/429/503 reach here to be examined as block pages
        if ok and self.is_markdown(response):
            text = response.text if isinstance(response, TextResponse) else response.body.decode("utf-8", "replace")
            title = self.markdown_title(text) or response.meta.get("skillgraph_title", "")
            yield self.document(link, title, text, "markdown", utc_now())
            return
        if not isinstance(response, HtmlResponse):
            self.crawler.stats.inc_value("skillgraph/page/skipped_not_document")
            ctype = (response.headers.get(b"Content-Type") or b"").decode("latin-1")
            status = response.status if not ok else None
            Build.of(self.crawler).skip(link, "http" if status else "low-quality", status=status,
                                        detail=f"not a document ({ctype or 'no Content-Type'})")
            return
        for output in await TierLadder.of(self).handle(response, link, follow=follow and ok):
            yield output

    async def html_document(self, response: HtmlResponse, link: str) -> AsyncIterator[Any]:
        """Extract an HTML page into a document, degrading tier by tier when the quality gates fail.

        Also the callback of the ladder's own requests (``negotiated``, ``render``), so
        they stay serialisable: see ``skillgraph.tiers`` and docs/rendering.md.
        """
        for output in await TierLadder.of(self).handle(response, link):
            yield output

    def follow_links(self, response: Response, links: list[str], outside: list[str]) -> Iterator[Request]:
        """Follow a page's in-scope links (read by :func:`skillgraph.page.pool.read_links`), in the page's order.

        Breadth first: the requests carry the page's depth plus one; the
        scheduler's FIFO queues keep the site's order.
        """
        build = Build.of(self.crawler)
        depth = int(response.meta.get("depth", 0)) + 1
        limit = depth_limit(self.crawler)
        out_of_scope = sum(build.outside(url) for url in outside)
        for url in links:
            if not self.in_site(url):
                out_of_scope += build.outside(url)
                continue
            if not build.learn(url, "link", depth):
                continue
            if limit and depth > limit:
                build.skip(url, "depth", detail=f"{depth} links from the start page (DEPTH_LIMIT={limit})")
                continue
            yield self.page_request(url, follow=True)
        if out_of_scope:
            self.crawler.stats.inc_value("skillgraph/crawl/out_of_scope", out_of_scope)

    @staticmethod
    def markdown_title(text: str) -> str:
        """The first H1 outside code (one markdown scanner: :mod:`skillgraph.markdown`)."""
        return graph_llms.markdown_title(text)

    def document(self, url: str, title: str, markdown: str, tier: str, fetched_at: str,
                 sha256: str = "") -> DocumentItem:
        """The document item; ``sha256`` when the page pool already hashed the markdown (hashed once)."""
        profile = Build.of(self.crawler).profile
        source = profile.source if profile is not None else url
        domain = getattr(self, "domain", "") or urlsplit(profile.url if profile is not None else url).hostname or ""
        return DocumentItem(url=url, title=title, markdown=markdown, fetched_at=fetched_at, source=source,
                            domain=domain, strategy=profile.strategy if profile is not None else "crawl", tier=tier,
                            sha256=sha256)


CALLBACKS = ("in_site", "page_request", "page_failed", "tier_failed", "parse_twin", "twin_failed",
             "original_request", "is_markdown", "parse_page", "html_document", "follow_links", "markdown_title",
             "document")


def bind_page_callbacks(spider: Spider) -> None:
    """Give a plain spider the page callbacks, as methods of its own (so requests stay serialisable)."""
    for name in CALLBACKS:
        if not hasattr(spider, name):
            function = PageCallbacks.__dict__[name]
            if isinstance(function, staticmethod):
                setattr(spider, name, function.__func__)
            else:
                setattr(spider, name, MethodType(function, spider))
