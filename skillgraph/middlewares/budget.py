"""PageBudgetMiddleware: no page is fetched past ``SKILLGRAPH_MAX_PAGES``.

``CLOSESPIDER_ITEMCOUNT`` counts items after the fact, so every request already
scheduled or in flight is still downloaded (17 pages past a bound of 50 in one
measured crawl) and then dropped. Here a page request of a bounded strategy
(``sitemap``, ``crawl``) waits before it is sent until the build has room for it:
the bound less the pages admitted and the pages still in flight
(:meth:`skillgraph.build.Build.wait_for_budget`). Once the bound is reached the
next page request is refused (:class:`BudgetReached`; its URL stays in the
ledger as unreached, counted in ``truncated.skipped`` and fetched first by the
next run), ``build_truncated`` is sent and the spider is closed with reason
``max_pages``. A site with exactly N pages therefore finishes normally.

In distributed mode the room is the whole fleet's: a page request first takes a
place in the build's budget in Redis
(:meth:`skillgraph.distributed.admission.FleetAdmission.hold`: pages admitted plus
pages in flight on every worker), waiting while places may still free up; it is
refused like a local one once the fleet admitted the bound.

Probes, robots.txt and the tier ladder's requests for a page already in flight
pass untouched. Placed at 110: after robots.txt (a forbidden page takes no
place), before recency (a page carried over unchanged spends the budget too).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING
from weakref import WeakSet

from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import deferred_from_coro

from skillgraph.build import Build
from skillgraph.distributed.admission import FleetAdmission
from skillgraph.middlewares.recency import is_page_request, page_url
from skillgraph.middlewares.strategy import detection_done
from skillgraph.page.outcomes import Unreached
from skillgraph.signals import build_truncated

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class BudgetReached(Unreached):
    """The page bound is reached: this page is left for the next run (``truncated``)."""


class PageBudgetMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        if crawler.settings.getint("SKILLGRAPH_MAX_PAGES", 400) <= 0:
            raise NotConfigured("SKILLGRAPH_MAX_PAGES is 0: no page bound")
        self.crawler = crawler
        self.build = Build.of(crawler)
        self.fleet = FleetAdmission.of(crawler)  # None in local mode
        # A page in flight normally settles within one download; past that, let the next one go.
        self.patience = max(crawler.settings.getfloat("DOWNLOAD_TIMEOUT", 30), 1.0)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageBudgetMiddleware:
        return cls(crawler)

    async def process_request(self, request: Request) -> None:
        if not is_page_request(request) or request.meta.get("skillgraph_tier"):
            return
        await detection_done(self.crawler)  # the bound applies to bounded strategies: known once profiled
        held = await self.fleet.hold(page_url(request), self.patience) if self.fleet is not None else None
        if held is not False and await self.build.wait_for_budget(page_url(request), self.patience):
            return
        if held and self.fleet is not None:
            self.fleet.release([page_url(request)])
        self.crawler.stats.inc_value("skillgraph/page_budget/unreached")
        await stop_at_max_pages(self.crawler)
        raise BudgetReached(f"max_pages ({self.build.max_pages}) reached: {request.url} left for the next run")


#: Crawlers already stopping at their page bound (each stops once).
STOPPING_AT_BOUND: WeakSet[Crawler] = WeakSet()


async def stop_at_max_pages(crawler: Crawler) -> None:
    """The page bound is reached: say so once (``build_truncated``) and close the spider.

    Shared by this middleware (no fetch past the bound) and the page budget
    pipeline (no document admitted past it), whichever sees the bound first.
    """
    if crawler in STOPPING_AT_BOUND:
        return
    STOPPING_AT_BOUND.add(crawler)
    limit = Build.of(crawler).max_pages
    await crawler.signals.send_catch_log_async(build_truncated, reason="max_pages", limit=limit)
    assert crawler.engine is not None
    # Not awaited: closing waits for the requests in progress, the caller's included.
    deferred_from_coro(crawler.engine.close_spider_async(reason="max_pages"))
