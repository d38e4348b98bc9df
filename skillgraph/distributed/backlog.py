"""StartingRequests: the requests a worker took from the frontier that have not reached their download slot yet.

The distributed scheduler takes a request from the shared frontier only when this
worker's downloader can start it (no hoarding while other workers idle). Scrapy's
slots show the requests waiting for their delay, but not those still in a downloader
middleware: a page request waiting for a place in the fleet's page budget
(:mod:`skillgraph.distributed.admission`), for a lease on its host or its turn in the
host's fleet-wide schedule (:mod:`skillgraph.distributed.politeness`), or for robots.txt.
Counting only the slots, a worker near the page bound kept popping while its requests
waited for a place: up to ``CONCURRENT_REQUESTS`` of them, some then fetched under the
worker's own rule and refused at admission (15-19 pages of 100 in
tests/test_fleet_limits.py), others kept from idle workers.

Here a request handed out by the scheduler counts from then until Scrapy's
``request_reached_downloader`` (or until it leaves the downloader without reaching a
slot: refused, answered by a middleware). The engine takes requests in one loop before
any middleware runs, so the count starts at the hand-out, not in the middleware. When
a request reaches its slot the engine is woken to take the next one.

One exception keeps a fleet from waiting on itself: a page request that has waited more
than :data:`~skillgraph.distributed.admission.BUDGET_PATIENCE` seconds for a place in the
budget no longer counts. Places are freed by pages in flight, and those may need a tier-ladder request that sits in the
frontier (a higher priority, so taken first): some worker must still take it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy import signals

from skillgraph.compat.scrapy import wake_engine

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

STAT = "skillgraph/distributed/backlog/"



class StartingRequests:
    """Requests handed to the engine and still on their way to a download slot (in a downloader middleware)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.requests: set[Request] = set()
        crawler.signals.connect(self.reached, signal=signals.request_reached_downloader)

    def add(self, request: Request) -> None:
        self.requests.add(request)

    def reached(self, request: Request) -> None:
        """In its slot now (downloading, or waiting there, which the slot's queue shows): take the next one."""
        if request in self.requests:
            self.requests.discard(request)
            if not self.requests:
                wake_engine(self.crawler.engine)

    def holding_back(self) -> bool:
        """True while a request this worker took waits before its slot (long budget waits aside)."""
        if not self.requests:
            return False
        from skillgraph.distributed.admission import BUDGET_PATIENCE, FleetAdmission

        engine = self.crawler.engine
        active = engine.downloader.active if engine is not None else set()
        self.requests &= active  # refused or answered before a slot: not waiting any more
        admission = FleetAdmission.existing(self.crawler)
        patient = admission.long_waits(BUDGET_PATIENCE) if admission is not None else 0
        if len(self.requests) <= patient:
            return False
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(STAT + "starting")
        return True
