"""CrawlTimeout: end a site's build after ``SKILLGRAPH_CRAWL_TIMEOUT`` seconds.

Like ``CLOSESPIDER_TIMEOUT``, but the build is then a *successful, truncated*
build (DESIGN.md): ``build_truncated`` is sent first so ``sources.json`` says
which bound stopped it, and the close reason is ``crawl_timeout``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import CallLaterResult, call_later
from scrapy.utils.defer import deferred_from_coro

from skillgraph.signals import build_truncated

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class CrawlTimeout:
    def __init__(self, crawler: Crawler) -> None:
        self.timeout = crawler.settings.getfloat("SKILLGRAPH_CRAWL_TIMEOUT", 240)
        if self.timeout <= 0:
            raise NotConfigured("SKILLGRAPH_CRAWL_TIMEOUT is 0")
        self.crawler = crawler
        self.call: CallLaterResult | None = None
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
        deferred_from_coro(self._close())

    async def _close(self) -> None:
        await self.crawler.signals.send_catch_log_async(build_truncated, reason="crawl_timeout",
                                                        limit=int(self.timeout))
        assert self.crawler.engine is not None
        await self.crawler.engine.close_spider_async(reason="crawl_timeout")

    def spider_closed(self) -> None:
        call, self.call = self.call, None
        if call is not None:
            call.cancel()
