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

While the engine runs, the youngest generation is collected every
:data:`YOUNG_THRESHOLD` net allocations instead of Python's 700: a page's
requests, responses, deferreds and tasks mostly die by reference count within
that span, and each collection still walked what was alive of them and moved it
on to the older generations, whose collections followed. The reactor thread's
collector went from 0.19 s to 0.08-0.11 s on the 526-page Python docs crawl, the
process's peak RSS unchanged (104-107 MB either way). Python's thresholds come
back when the engine stops.
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

#: Net allocations of tracked objects between two collections of the youngest generation (Python's: 700).
YOUNG_THRESHOLD = 10_000


class GcFreeze:
    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("SKILLGRAPH_GC_FREEZE_ENABLED", True):
            raise NotConfigured("SKILLGRAPH_GC_FREEZE_ENABLED is off")
        self.crawler = crawler
        self.thresholds: tuple[int, int, int] | None = None  # Python's, while the engine runs
        crawler.signals.connect(self.engine_started, signal=signals.engine_started)
        crawler.signals.connect(self.engine_stopped, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> GcFreeze:
        return cls(crawler)

    def engine_started(self) -> None:
        # The young generations' garbage goes now, not frozen with the rest (0.5 ms). No full collection: at
        # this point it walked all of start-up's ~80,000 objects (44-58 ms) to free about 10 of them.
        gc.collect(1)
        gc.freeze()
        self.thresholds = gc.get_threshold()
        young, *older = self.thresholds
        gc.set_threshold(max(young, YOUNG_THRESHOLD), *older)
        frozen = gc.get_freeze_count()
        if self.crawler.stats is not None:
            self.crawler.stats.set_value("skillgraph/gc/frozen", frozen)
        logger.debug("%d objects of start-up frozen out of the garbage collector's walks", frozen)

    def engine_stopped(self) -> None:
        """Back to the collector: a process that runs crawls one after another (a test session, a script)
        must not keep the garbage of one for good."""
        gc.unfreeze()
        if self.thresholds is not None:
            gc.set_threshold(*self.thresholds)
            self.thresholds = None
