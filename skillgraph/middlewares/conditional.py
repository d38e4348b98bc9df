"""ConditionalMiddleware: incremental recrawl with ``If-None-Match`` / ``If-Modified-Since``.

Scrapy's ``HttpCacheMiddleware`` (RFC2616 policy) revalidates against a cache
of whole responses and answers the spider from it; skillgraph keeps no
response cache — the live graph already holds each page as markdown. So this
middleware keeps only the validators (ETag, Last-Modified) per fetched URL in
the local state, sends them for page requests whose page has a file in the
live graph (otherwise a 304 could not be honoured), and turns a 304 into
``page_not_modified`` (the graph writer carries the file over) plus a refused
request: Scrapy's HttpErrorMiddleware would drop the 304 anyway.

Validators seen in a run are stored only when that run's graph is committed,
so they always describe the content of the live graph: a failed build never
leaves validators that would keep an older file alive.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from skillgraph.build.state import get_state
from skillgraph.middlewares.recency import is_page_request, live_pages, page_unchanged, page_url
from skillgraph.signals import build_committed, build_failed

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

_HEADERS = (b"If-None-Match", b"If-Modified-Since")


class ConditionalMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("SKILLGRAPH_CONDITIONAL_ENABLED", True):
            raise NotConfigured("SKILLGRAPH_CONDITIONAL_ENABLED is off")
        self.crawler = crawler
        self.state = get_state(crawler)
        self.seen: dict[str, tuple[str | None, str | None]] = {}
        crawler.signals.connect(self.store, signal=build_committed)
        crawler.signals.connect(self.discard, signal=build_failed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ConditionalMiddleware:
        return cls(crawler)

    async def process_request(self, request: Request) -> None:
        if request.meta.get("skillgraph_conditional") not in (None, request.url):
            for name in _HEADERS:  # a redirect copied the validators of another URL
                request.headers.pop(name, None)
            request.meta.pop("skillgraph_conditional")
        if not is_page_request(request) or request.meta.get("dont_revalidate"):
            return
        if page_url(request) not in live_pages(self.crawler):
            return
        etag, last_modified = await self.state.validators(request.url)
        if etag:
            request.headers.setdefault(b"If-None-Match", etag)
        if last_modified:
            request.headers.setdefault(b"If-Modified-Since", last_modified)
        if etag or last_modified:
            request.meta["skillgraph_conditional"] = request.url
            self.crawler.stats.inc_value("skillgraph/conditional/sent")

    async def process_response(self, request: Request, response: Response) -> Response:
        if not is_page_request(request):
            return response
        if response.status == 304 and request.meta.get("skillgraph_conditional") == request.url:
            self.crawler.stats.inc_value("skillgraph/conditional/not_modified")
            await page_unchanged(self.crawler, request, page_url(request))
        if response.status == 200:
            etag = response.headers.get(b"ETag")
            last_modified = response.headers.get(b"Last-Modified")
            if etag or last_modified:
                self.seen[request.url] = (etag.decode("latin-1") if etag else None,
                                          last_modified.decode("latin-1") if last_modified else None)
        return response

    async def store(self) -> None:
        """The build is live: its validators now describe the live graph's files."""
        if self.seen:
            await self.state.set_validators(self.seen)
            self.crawler.stats.set_value("skillgraph/conditional/stored", len(self.seen))

    def discard(self) -> None:
        if self.seen:
            self.crawler.stats.set_value("skillgraph/conditional/discarded", len(self.seen))
