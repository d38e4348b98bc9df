"""RecencyMiddleware: skip page requests scraped within ``SKILLGRAPH_RECENCY_HOURS``.

Scrapy's dupefilter forgets between runs (or, with JOBDIR, never lets a URL
through again); recency dedup needs "when was this URL last scraped". The time
is kept under ``skillgraph:scraped:<url>`` in Redis or in the local SQLite state
(:mod:`skillgraph.build.state`).

A page is skipped only when it is recent *and* has a file in the live graph:
the skipped page must be carried over into the new build
(``page_not_modified``), which needs the previous file. Probes, robots.txt
and other ``NO_CALLBACK`` fetches are never skipped; ``dont_recency`` in
``request.meta`` opts a request out. With ``SKILLGRAPH_RECENCY_HOURS = 0`` nothing is
skipped, but scrape times are still recorded.

This module also holds what the conditional middleware shares: which requests
are pages, the live graph's pages, and :func:`page_unchanged`.
"""

from __future__ import annotations

import contextlib
import logging
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, NoReturn

from scrapy import Request
from scrapy.http.request import NO_CALLBACK

from skillgraph.build import Build
from skillgraph.build.state import StateUnavailableError, get_state
from skillgraph.page.outcomes import PageUnchanged
from skillgraph.signals import page_not_modified
from skillgraph.strategy.profiler import utc_now
from skillgraph.urls import in_scope

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)


def is_page_request(request: Request) -> bool:
    return request.callback is not NO_CALLBACK and not request.meta.get("skillgraph_probe")


def page_url(request: Request) -> str:
    """The page a request stands for (an llms ``.md`` twin stands for its link)."""
    return str(request.meta.get("skillgraph_link") or request.url)


def live_pages(crawler: Crawler) -> dict[str, dict[str, Any]]:
    """The live graph's page records by URL (the Build's one reading of the previous ``sources.json``)."""
    return Build.of(crawler).previous.pages


async def page_unchanged(crawler: Crawler, request: Request, url: str) -> NoReturn:
    """Carry the page over, count it as handled, and refuse the request."""
    await crawler.signals.send_catch_log_async(page_not_modified, url=url)
    if request.cb_kwargs.get("follow"):
        expand(crawler)
    raise PageUnchanged(f"unchanged: {url}")


def expand(crawler: Crawler) -> None:
    """A link-following page kept without a body has no links to follow: revisit the live graph's pages.

    An unchanged page links where it linked before, so its targets are in the
    previous graph; a new page is linked from a changed page, which is parsed;
    pages a truncated previous build never reached are requested by the spider.
    """
    spider = crawler.spider
    build = Build.of(crawler)
    if spider is None or build.profile is None or build.expanded or not hasattr(spider, "page_request"):
        return
    build.expanded = True
    assert crawler.engine is not None
    for url in live_pages(crawler):
        if "#" in url or not in_scope(url, build.profile.scope) or not build.learn(url, "previous"):
            continue
        crawler.stats.inc_value("skillgraph/recency/revisited")
        crawler.engine.crawl(spider.page_request(url, follow=True))


class RecencyMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        hours = crawler.settings.getfloat("SKILLGRAPH_RECENCY_HOURS", 24)
        # 0 turns the skip off; scrape times are still recorded, for the runs that skip.
        self.window = timedelta(hours=hours) if hours > 0 else None
        self.crawler = crawler
        self.state = get_state(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RecencyMiddleware:
        return cls(crawler)

    async def process_request(self, request: Request) -> None:
        if self.window is None or not is_page_request(request) or request.meta.get("dont_recency"):
            return
        url = page_url(request)
        if url not in live_pages(self.crawler):
            return
        try:
            scraped = await self.state.scraped_at(url)
        except StateUnavailableError:
            return
        if scraped is None or datetime.now(UTC) - scraped > self.window:
            return
        self.crawler.stats.inc_value("skillgraph/recency/skipped")
        await page_unchanged(self.crawler, request, url)

    async def process_response(self, request: Request, response: Response) -> Response:
        if response.status == 200 and is_page_request(request):
            with contextlib.suppress(StateUnavailableError):
                await self.state.set_scraped(page_url(request), utc_now())
        return response
