"""PageBudgetPipeline: stop a web crawl at ``SKILLGRAPH_MAX_PAGES`` documents.

``CLOSESPIDER_ITEMCOUNT`` counts items after the pipelines and lets in-flight
responses overshoot; DESIGN.md wants the bound to count documents *written*
and to be exact, and to apply only to the ``sitemap`` and ``crawl``
strategies (an llms corpus is one fetch). So the budget is a pipeline placed
just before the writers: the N+1th document is dropped, the spider closed
with reason ``max_pages``, and ``build_truncated`` sent. A site with exactly
N pages therefore finishes normally instead of being called truncated.

A document the graph writer will not write does not spend the budget: the
same URL a second time, or the same markdown under a second URL (``/docs/``
and ``/docs/index.html``), which the writer keeps once.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy.exceptions import DropItem, NotConfigured
from scrapy.utils.defer import deferred_from_coro

from skillgraph.items import sha256_text
from skillgraph.signals import build_truncated

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

BOUNDED_STRATEGIES = ("sitemap", "crawl")


class PageBudgetExhausted(DropItem):
    """The page bound was reached before this document.

    Logged at INFO, not Scrapy's WARNING per dropped item: reaching the bound is
    an expected end, already logged once as a warning (``build_truncated``).
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, log_level="INFO")


class PageBudgetPipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.limit = crawler.settings.getint("SKILLGRAPH_MAX_PAGES", 400)
        if self.limit <= 0:
            raise NotConfigured("SKILLGRAPH_MAX_PAGES is 0: no page bound")
        self.crawler = crawler
        self.count = 0
        self.closing = False
        self.counted: set[str] = set()  # URLs and markdown hashes of the documents counted

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageBudgetPipeline:
        return cls(crawler)

    async def process_item(self, item: Any) -> Any:
        adapter = ItemAdapter(item)
        if adapter.get("strategy") not in BOUNDED_STRATEGIES:
            return item
        url, sha = str(adapter.get("url")), sha256_text(adapter.get("markdown") or "")
        if url in self.counted or sha in self.counted:
            self.crawler.stats.inc_value("skillgraph/page_budget/not_counted_duplicate")
            return item  # the graph writer keeps the first one only
        if self.count >= self.limit:
            self.crawler.stats.inc_value("skillgraph/page_budget/dropped")
            await self._close()
            raise PageBudgetExhausted(f"max_pages ({self.limit}) reached")
        self.count += 1
        self.counted.update((url, sha))
        return item

    async def _close(self) -> None:
        if self.closing:
            return
        self.closing = True
        await self.crawler.signals.send_catch_log_async(build_truncated, reason="max_pages", limit=self.limit)
        assert self.crawler.engine is not None
        # Not awaited: closing waits for the items in progress, this one included.
        deferred_from_coro(self.crawler.engine.close_spider_async(reason="max_pages"))
