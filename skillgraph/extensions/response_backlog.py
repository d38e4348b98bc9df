"""ResponseBacklog: the responses waiting for their page's work bounded in number, not only in bytes.

Scrapy stops pulling requests while the bodies of the responses its scraper holds
(queued, or in a callback) add up to more than ``SCRAPER_SLOT_MAX_ACTIVE_SIZE``; each
counts its body's length, or ``MIN_RESPONSE_SIZE`` (1 kB) if smaller. A page's
callback here holds its response until the page pool has evaluated it and every
earlier page (results come back in arrival order), so one bound in bytes had to
choose between two failures:

* **small**: 1 MB held the page workers idle. One 2.5 MB index page (the Python
  docs' ``contents.html``) is over the bound alone, so while a worker spent 0.3 s
  on it nothing more was fetched, and the other worker ran out of pages: the
  workers waited 1.4-1.8 s of a 7 s crawl of the Python docs, and the engine was in
  back-out for 4.6-5.4 s of it.
* **large**: 5 MB let ~1,200 waiting pages in on a site of 4 kB pages, each with
  its request, tasks and result (+54 MB of RSS on the 20,000-page bench).

Here each response counts at least ``SCRAPER_SLOT_MAX_ACTIVE_SIZE /
SKILLGRAPH_RESPONSE_BACKLOG`` (the slot's ``MIN_RESPONSE_SIZE``, set when the
spider opens): at most that many responses wait, whatever their size, and
their bodies still add up to no more than the bound. Scrapy's own back-out does
the holding; only the unit changes. With 16 MB and 64 the workers of the
Python docs crawl waited 0.4-0.6 s (BENCHMARKS.md, "Crawl throughput").
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured

from skillgraph.compat.scrapy import (
    ScraperSlot,
    bytes_waiting,
    count_responses_as_at_least,
    responses_waiting,
    scraper_slot,
)

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


def bound_in_number(slot: ScraperSlot, max_active_size: int, backlog: int) -> int:
    """Count each response of ``slot`` as at least ``max_active_size / backlog`` bytes; the responses that may wait."""
    return max_active_size // count_responses_as_at_least(slot, max_active_size // backlog)


class ResponseBacklog:
    def __init__(self, crawler: Crawler) -> None:
        backlog = crawler.settings.getint("SKILLGRAPH_RESPONSE_BACKLOG", 64)
        if backlog <= 0:
            raise NotConfigured("SKILLGRAPH_RESPONSE_BACKLOG is 0: Scrapy's bound in bytes alone")
        self.crawler = crawler
        self.backlog = backlog
        self.max_active_size = crawler.settings.getint("SCRAPER_SLOT_MAX_ACTIVE_SIZE")
        self.slot: ScraperSlot | None = None
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.response_received, signal=signals.response_received)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ResponseBacklog:
        return cls(crawler)

    def spider_opened(self) -> None:
        slot = scraper_slot(self.crawler.engine)  # made by the scraper before this signal
        if slot is None or bytes_waiting(slot):  # counted in with Scrapy's minimum, they would be counted out with ours
            logger.warning("The scraper's slot was missing or in use when the spider opened: "
                           "waiting responses are bounded in bytes alone")
            return
        self.slot = slot
        responses = bound_in_number(slot, self.max_active_size, self.backlog)
        if self.crawler.stats is not None:
            self.crawler.stats.set_value("skillgraph/backlog/responses", responses)
        logger.debug("Responses waiting for their callbacks: at most %d, their bodies at most %d bytes",
                     responses, self.max_active_size)

    def response_received(self) -> None:
        """The deepest the backlog got (this response included): a stat, for tuning the bound."""
        if self.slot is not None and self.crawler.stats is not None:
            self.crawler.stats.max_value("skillgraph/backlog/max_waiting", responses_waiting(self.slot) + 1)
