"""PagePool: the CPU-heavy part of a page, done once, in a pool of processes.

Parsing an HTML page, extracting it, assessing it against the quality gates,
hashing its markdown and reading its links cost ~20x what fetching it costs.
On the reactor thread they serialise the crawl onto one core.
:func:`skillgraph.page.work.evaluate` does all of it, once per page, as a pure
function of the response's bytes, so :class:`PagePool` can run it in worker
processes (``SKILLGRAPH_PAGE_WORKERS``, default one per core; ``0`` runs it in
the reactor thread, the serial path).

What must stay ordered does: :class:`ArrivalOrder` hands results back in the order
the responses arrived, so the ledger and the writer see what the serial path shows them.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from skillgraph.page import work
from skillgraph.page.work import NOT_PAGES, PageJob, PageResult, read_links
from skillgraph.page.workers import WorkerPipes

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

_POOLS: WeakKeyDictionary[Crawler, PagePool] = WeakKeyDictionary()
#: Pages evaluated in the crawl process before the pool starts: a one-page ``scrapy scrape`` or a small
#: site never pays for starting processes; a larger crawl switches to the pool as soon as it is up.
INLINE_PAGES = 8
__all__ = ["INLINE_PAGES", "NOT_PAGES", "ArrivalOrder", "PageJob", "PagePool", "PageResult", "read_links"]


class ArrivalOrder:
    """Results back in the order their pages arrived, whatever order the pool finishes them in."""

    def __init__(self) -> None:
        self.issued = 0
        self.released = 0
        self.done: set[int] = set()
        self.waiters: dict[int, asyncio.Future[None]] = {}

    def ticket(self) -> int:
        self.issued += 1
        return self.issued - 1

    async def turn(self, ticket: int) -> None:
        """Wait until every earlier ticket was released."""
        if ticket > self.released:
            self.waiters[ticket] = asyncio.get_running_loop().create_future()
            await self.waiters[ticket]

    def release(self, ticket: int) -> None:
        self.done.add(ticket)
        while self.released in self.done:
            self.done.discard(self.released)
            self.released += 1
        waiter = self.waiters.pop(self.released, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class PagePool:
    """Runs :func:`evaluate` in worker processes (one per core by default), or inline when set to 0."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        workers = crawler.settings.getint("SKILLGRAPH_PAGE_WORKERS", -1)
        self.workers = (os.cpu_count() or 1) if workers < 0 else workers
        self.executor: WorkerPipes | None = None
        self.starting: asyncio.Future[WorkerPipes | None] | None = None
        self.evaluated = 0
        self.closed = False
        self.order = ArrivalOrder()
        from scrapy import signals

        crawler.signals.connect(self.shutdown, signals.engine_stopped)

    @classmethod
    def of(cls, crawler: Crawler) -> PagePool:
        pool = _POOLS.get(crawler)
        if pool is None:
            pool = _POOLS[crawler] = cls(crawler)
        return pool

    def _start(self) -> WorkerPipes | None:
        """Start the worker processes (in a thread: starting the fork server blocks for about a second)."""
        # forkserver: workers start from a clean process, not a fork of the reactor and its threads
        context = multiprocessing.get_context("forkserver")
        # what a page's evaluation imports, and no Scrapy or Twisted: small workers, a quick fork server
        context.set_forkserver_preload(["skillgraph.page.work", "skillgraph.tiers.evaluate"])
        if self.closed:
            return None
        return WorkerPipes(self.workers, context)

    def _started(self, starting: asyncio.Future[WorkerPipes | None]) -> None:
        """On the loop: the workers' pipes read by it from now on (or page work stays here, with a warning)."""
        if starting.cancelled():
            return
        if starting.exception() is not None:
            logger.warning("The page worker processes did not start (%s): page work stays in the crawl process",
                           starting.exception())
            self.workers = 0
            return
        pipes = starting.result()
        if pipes is None:
            return
        if self.closed:
            pipes.close()
            return
        pipes.attach(asyncio.get_running_loop())
        self.executor = pipes
        logger.info("Page work runs in %d worker processes (SKILLGRAPH_PAGE_WORKERS)", self.workers)
        if self.crawler.stats is not None:
            self.crawler.stats.set_value("skillgraph/pagework/workers", self.workers)

    async def evaluate(self, response: Response, tier: str, threshold: float, links_scope: str | None) -> PageResult:
        """The page's result, handed back in the order the pages arrived."""
        from scrapy.http import TextResponse

        from skillgraph.tiers.evaluate import page_attempt, response_headers

        if not isinstance(response, TextResponse):  # nothing to parse: the ladder's own verdict, here
            return PageResult(*page_attempt(tier, response, threshold), "")
        job = PageJob(tier, response.url, response.body, response.encoding, response_headers(response),
                      response.status, response.meta.get("skillgraph_title", ""), threshold, links_scope)
        ticket = self.order.ticket()
        try:
            result = await self._run(job)
            result.attempt.headers = job.headers  # kept here, not sent back by the worker
            await self.order.turn(ticket)
            return result
        finally:
            self.order.release(ticket)

    async def _run(self, job: PageJob) -> PageResult:
        self.evaluated += 1
        if self.workers and self.starting is None and self.evaluated > INLINE_PAGES:
            self.starting = asyncio.ensure_future(asyncio.to_thread(self._start))
            self.starting.add_done_callback(self._started)
        executor = self.executor
        if executor is not None and self.workers:
            try:
                return await executor.run(work.evaluate, job)
            except BrokenProcessPool as exc:  # a worker died (killed, out of memory): go on in this process
                if self.workers:
                    logger.warning("A page worker process died (%s): page work goes on in the crawl process", exc)
                    self.workers = 0
                    if self.crawler.stats is not None:
                        self.crawler.stats.inc_value("skillgraph/pagework/pool_broken")
        return work.evaluate(job)

    def running_executor(self) -> WorkerPipes | None:
        """The worker processes if they are up, for other CPU-bound work of the crawl (the commit's links)."""
        return self.executor if self.workers else None

    def shutdown(self) -> None:
        self.closed = True
        if self.executor is not None:
            self.executor.close()
            self.executor = None
