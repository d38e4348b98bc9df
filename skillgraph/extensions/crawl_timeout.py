"""CrawlTimeout: end a site's build after ``SKILLGRAPH_CRAWL_TIMEOUT`` seconds, through the engine.

Like ``CLOSESPIDER_TIMEOUT``, but the build is then a *successful, truncated*
build (DESIGN.md): ``build_truncated`` is sent first so ``sources.json`` says
which bound stopped it, and the spider is closed with reason ``crawl_timeout``.

Closing a spider waits for the downloads in flight, and a stuck server would
hold each for ``DOWNLOAD_TIMEOUT`` (times its retries). Rather than killing the
process, :class:`DeadlineMiddleware` gives every request a ``download_timeout``
(Scrapy's own per-request meta key) that ends no later than
``SKILLGRAPH_CRAWL_TIMEOUT_GRACE`` seconds past the deadline. So no download
outlives the bound plus the grace, the engine closes normally, the graph is
committed, the stats are written, and other crawlers in the same process are
left alone.

Requests already handed to the downloader but still waiting for their slot's
delay would be sent one delay apart before the engine could close (16 of them
behind a 1 s delay held a timed-out crawl 20 s past its bound): at the timeout
they are ended with :class:`DeadlinePassed`, so their URLs stay unreached
(``truncated.skipped``) and the spider closes as soon as the downloads in
flight end.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import CallLaterResult, call_later
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future

from skillgraph.build import Build
from skillgraph.compat.scrapy import download_slots, take_slot_queue
from skillgraph.page.outcomes import Unreached
from skillgraph.signals import build_truncated

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class DeadlinePassed(Unreached):
    """The crawl timeout came before this request left its download slot: left for the next run."""


class CrawlTimeout:
    def __init__(self, crawler: Crawler) -> None:
        self.timeout = crawler.settings.getfloat("SKILLGRAPH_CRAWL_TIMEOUT", 240)
        if self.timeout <= 0:
            raise NotConfigured("SKILLGRAPH_CRAWL_TIMEOUT is 0")
        self.grace = max(crawler.settings.getfloat("SKILLGRAPH_CRAWL_TIMEOUT_GRACE", 5), 0.0)
        self.crawler = crawler
        self.call: CallLaterResult | None = None
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlTimeout:
        return cls(crawler)

    def spider_opened(self) -> None:
        Build.of(self.crawler).deadline = time.monotonic() + self.timeout + self.grace
        self.call = call_later(self.timeout, self.expire)

    def expire(self) -> None:
        self.call = None
        self.crawler.stats.set_value("skillgraph/crawl_timeout/expired", 1)
        deferred_from_coro(self._close())

    async def _close(self) -> None:
        await self.crawler.signals.send_catch_log_async(build_truncated, reason="crawl_timeout",
                                                        limit=int(self.timeout))
        engine = self.crawler.engine
        assert engine is not None
        closing = deferred_from_coro(engine.close_spider_async(reason="crawl_timeout"))  # stops new requests
        dropped = 0
        for slot in list(download_slots(engine.downloader).values()):
            for request, waiting in take_slot_queue(slot):
                dropped += 1
                waiting.errback(DeadlinePassed(f"crawl_timeout ({self.timeout:g} s): {request.url} left for "
                                               "the next run"))
        if dropped:
            self.crawler.stats.inc_value("skillgraph/crawl_timeout/dropped", dropped)
            logger.info("Crawl timeout: %d queued requests left for the next run", dropped)
        await maybe_deferred_to_future(closing)

    def spider_closed(self) -> None:
        if self.call is not None:
            self.call.cancel()
            self.call = None


class DeadlineMiddleware:
    """Bound each download's ``download_timeout`` by the crawl's deadline plus the grace."""

    def __init__(self, crawler: Crawler) -> None:
        if crawler.settings.getfloat("SKILLGRAPH_CRAWL_TIMEOUT", 240) <= 0:
            raise NotConfigured("SKILLGRAPH_CRAWL_TIMEOUT is 0")
        self.crawler = crawler
        self.default = crawler.settings.getfloat("DOWNLOAD_TIMEOUT", 180)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DeadlineMiddleware:
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        deadline = Build.of(self.crawler).deadline
        if deadline is None:
            return
        left = max(deadline - time.monotonic(), 1.0)
        current = float(request.meta.get("download_timeout", self.default))
        if left < current:
            request.meta["download_timeout"] = left
            self.crawler.stats.inc_value("skillgraph/crawl_timeout/shortened")
