"""GcFreeze: the objects that live for the whole crawl are kept out of the garbage collector's walks.

Python's cyclic collector walks every tracked object of a generation on each
collection; a full collection walks all of them. After start-up a crawl holds
hundreds of thousands of objects that never die (Scrapy, Twisted, lxml,
skillgraph's modules, settings, components), and every full collection of the
crawl walked them again: 0.24 s of the reactor thread for the 526 pages of the
Python docs (bench/stages.py). ``gc.freeze()`` once the engine has started moves
them to the permanent generation (what servers do after start-up); the collector
then walks only what the crawl allocates. They are unfrozen when the engine
stops. The page workers freeze theirs when they start (:mod:`skillgraph.page.pool`).
"""

from __future__ import annotations

import gc
import logging
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class GcFreeze:
    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("SKILLGRAPH_GC_FREEZE_ENABLED", True):
            raise NotConfigured("SKILLGRAPH_GC_FREEZE_ENABLED is off")
        self.crawler = crawler
        crawler.signals.connect(self.engine_started, signal=signals.engine_started)
        crawler.signals.connect(self.engine_stopped, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> GcFreeze:
        return cls(crawler)

    def engine_started(self) -> None:
        gc.collect()  # what start-up left as garbage goes now, not frozen with the rest
        gc.freeze()
        frozen = gc.get_freeze_count()
        if self.crawler.stats is not None:
            self.crawler.stats.set_value("skillgraph/gc/frozen", frozen)
        logger.debug("%d objects of start-up frozen out of the garbage collector's walks", frozen)

    def engine_stopped(self) -> None:
        """Back to the collector: a process that runs crawls one after another (a test session, a script)
        must not keep the garbage of one for good."""
        gc.unfreeze()
