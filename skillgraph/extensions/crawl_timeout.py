"""CrawlTimeout: end a site's build after ``SKILLGRAPH_CRAWL_TIMEOUT`` seconds.

Like ``CLOSESPIDER_TIMEOUT``, but the build is then a *successful, truncated*
build (DESIGN.md): ``build_truncated`` is sent first so ``sources.json`` says
which bound stopped it, and the close reason is ``crawl_timeout``.

Closing a spider waits for the downloads in flight, and a stuck server holds
each for ``DOWNLOAD_TIMEOUT`` times its retries. So the bound is enforced by a
watchdog too: ``SKILLGRAPH_CRAWL_TIMEOUT_GRACE`` seconds after the deadline, if
the spider is still closing, the graph is finalised with the pages it has
(``build_deadline``: the graph writer commits, the stats file is written) and
the process exits. Stopping the reactor is not enough: Scrapy's shutdown
trigger waits for the same stuck downloads. A build never outlives its bound
by more than the grace.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import CallLaterResult, call_later
from scrapy.utils.defer import deferred_from_coro

from skillgraph.signals import build_deadline, build_truncated

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class CrawlTimeout:
    def __init__(self, crawler: Crawler) -> None:
        self.timeout = crawler.settings.getfloat("SKILLGRAPH_CRAWL_TIMEOUT", 240)
        if self.timeout <= 0:
            raise NotConfigured("SKILLGRAPH_CRAWL_TIMEOUT is 0")
        self.grace = crawler.settings.getfloat("SKILLGRAPH_CRAWL_TIMEOUT_GRACE", 15)
        self.crawler = crawler
        self.call: CallLaterResult | None = None
        self.watchdog: CallLaterResult | None = None
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlTimeout:
        return cls(crawler)

    def spider_opened(self) -> None:
        self.call = call_later(self.timeout, self.expire)

    def expire(self) -> None:
        self.call = None
        self.crawler.stats.set_value("skillgraph/crawl_timeout/expired", 1)
        self.watchdog = call_later(self.grace, self.force_stop)
        deferred_from_coro(self._close())

    def force_stop(self) -> None:
        """The spider did not close within the grace: finalise the graph, then stop the reactor."""
        self.watchdog = None
        self.crawler.stats.set_value("skillgraph/crawl_timeout/forced", 1)
        logger.error("Spider still closing %.0fs after the crawl timeout (downloads in flight); forcing shutdown",
                     self.grace)
        self.crawler.signals.send_catch_log(build_deadline, reason="crawl_timeout")
        logging.shutdown()  # flush every handler: nothing after this line runs
        os._exit(0)  # the build is a successful, truncated build

    async def _close(self) -> None:
        await self.crawler.signals.send_catch_log_async(build_truncated, reason="crawl_timeout",
                                                        limit=int(self.timeout))
        assert self.crawler.engine is not None
        await self.crawler.engine.close_spider_async(reason="crawl_timeout")

    def spider_closed(self) -> None:
        for call in (self.call, self.watchdog):
            if call is not None:
                call.cancel()
        self.call = self.watchdog = None
