"""A worker's side of the shared frontier: Redis outages, acknowledgements, heartbeats, idle close.

:class:`FrontierWorker` is the part of
:class:`~skillgraph.distributed.scheduler.DistributedScheduler` that deals
with the other workers of a frontier:

* **Outages.** Every Redis call goes through :meth:`FrontierWorker.guarded`:
  the first that fails starts an outage (:mod:`skillgraph.distributed.reconnect`),
  during which no call is made: requests in flight finish, the new ones are held
  (:mod:`skillgraph.distributed.held`), acknowledgements wait, an idle worker
  stays open. When Redis answers again :meth:`FrontierWorker.resume` rejoins
  the frontier; reaping waits a grace period meanwhile, so workers that are
  alive but not reconnected yet keep their requests.
* **Acknowledgements.** A popped request stays in flight under this worker
  until the engine is done with it (callback and item pipelines included).
* **Heartbeats.** Every ``SKILLGRAPH_DISTRIBUTED_WORKER_TIMEOUT / 3`` seconds;
  the in-flight requests of a worker silent for longer than the timeout go
  back to the queue.
* **Idle close that waits for the others.** An idle worker stays open while
  anything is queued or in flight anywhere, polling every
  ``SKILLGRAPH_DISTRIBUTED_POLL_INTERVAL``.
* **Leaving.** Unfinished requests go back; the last worker out clears the
  frontier (unless ``SCHEDULER_PERSIST``); with ``SKILLGRAPH_ASSEMBLY_ENABLED``
  off, a graph that other workers shared is marked ``partial``.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from redis.exceptions import RedisError
from scrapy import signals
from scrapy.exceptions import DontCloseSpider
from scrapy.utils.asyncio import CallLaterResult, call_later, create_looping_call

from skillgraph.compat.scrapy import requests_in_progress, wake_engine
from skillgraph.distributed.held import HeldRequests
from skillgraph.distributed.reconnect import OUTAGE, Reconnect
from skillgraph.signals import build_warning

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector
    from scrapy_redis.dupefilter import RFPDupeFilter

    from skillgraph.distributed.frontier import Frontier

logger = logging.getLogger("skillgraph.distributed.scheduler")  # the scheduler's log lines, as before the split
_T = TypeVar("_T")

STAT = "skillgraph/distributed/"


class FrontierWorker:
    """Mixin of the distributed scheduler; its attributes are set in ``DistributedScheduler.from_crawler``."""

    crawler: Crawler
    stats: StatsCollector
    queue: Frontier
    df: RFPDupeFilter
    persist: bool
    worker: str
    worker_timeout: float
    poll_interval: float
    others: set[str]
    resumed: int
    waiting: bool
    wake_call: CallLaterResult | None
    beat: Any
    reconnect: Reconnect
    held: HeldRequests
    local: deque[Request]
    reap_after: float  # monotonic time before which no worker is reaped (just after an outage)

    def init_worker(self, crawler: Crawler) -> None:
        """The worker's own state (scrapy-redis builds the scheduler in ``from_settings``, without the crawler)."""
        settings = crawler.settings
        self.crawler = crawler
        self.stats = crawler.stats
        self.worker_timeout = settings.getfloat("SKILLGRAPH_DISTRIBUTED_WORKER_TIMEOUT", 30.0)
        self.poll_interval = settings.getfloat("SKILLGRAPH_DISTRIBUTED_POLL_INTERVAL", 0.5)
        self.worker = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.local = deque()
        self.others = set()
        self.resumed = 0
        self.waiting = False
        self.wake_call = None
        self.beat = create_looping_call(self.heartbeat)
        self.reconnect = Reconnect(crawler, self.resume)
        self.held = HeldRequests()
        self.reap_after = 0.0

    def guarded(self, call: Callable[[], _T], default: _T) -> _T:
        """Run a Redis call; on a failure, or during an outage, answer ``default`` without calling Redis.

        The first failure starts the outage: :attr:`reconnect` tries Redis
        with backoff, and :meth:`resume` runs when it answers.
        """
        if self.reconnect.down:
            return default
        try:
            return call()
        except (RedisError, OSError) as exc:
            self.stats.inc_value(STAT + "redis_error")
            self.reconnect.begin(exc)
            return default

    def resume(self) -> None:
        """Redis answers again: rejoin the frontier and settle what the outage left (raises if Redis fails again).

        In this order: the heartbeat first (so no one reaps this worker), a pop
        whose reply was lost back into the queue, the held requests into the
        frontier, and only then the acknowledgements of the pages that made
        them (acknowledged first, a failure in between would lose their links).
        """
        self.queue.server.connection_pool.disconnect()  # connections to the old server would each fail once
        self.others.update(w for w in self.queue.heartbeat() if w != self.worker)
        self.reap_after = time.monotonic() + self.worker_timeout + self.reconnect.backoff_max
        orphans = self.queue.requeue_orphans()
        if orphans:
            self.stats.inc_value(f"{OUTAGE}orphans_requeued", orphans)
            logger.info("%d request(s) popped while Redis went down, never received: back in the frontier", orphans)
        flushed = self.held.flush(self.df, self.queue)
        for request in flushed.seen:
            self.crawler.signals.send_catch_log(signals.request_dropped, request=request, spider=self.crawler.spider)
        self.local.extend(flushed.local)
        self.stats.inc_value(f"{OUTAGE}held_pushed", flushed.pushed)
        self.stats.inc_value(f"{OUTAGE}held_filtered", len(flushed.seen))
        logger.info("Requests held during the outage: %d into the shared frontier, %d already there, %d kept here",
                    flushed.pushed, len(flushed.seen), len(flushed.local))
        done = self.finished()
        if done:
            self.stats.inc_value(STAT + "acked", self.queue.ack(done))

    def hold(self, request: Request, ask: bool) -> bool:
        """Keep a new request until Redis is back (``ask``: the dupefilter has not been asked yet)."""
        self.held.add(request, ask)
        self.stats.inc_value(f"{OUTAGE}held")
        return True

    def finished(self) -> list[Request]:
        """Popped requests the engine has finished with."""
        if not self.queue.tokens:
            return []
        busy = requests_in_progress(self.crawler.engine)
        return [request for request in self.queue.tokens if request not in busy]

    def acknowledge(self) -> None:
        """Acknowledge popped requests the engine has finished with (left its in-progress set).

        The engine keeps a request in progress from download through callback
        and item pipelines, but exposes no signal for that last step, so its
        in-progress set is read (a private attribute,
        :func:`skillgraph.compat.scrapy.requests_in_progress`; the downloader's
        public ``active`` set, which ends before the callback, is the fallback).
        """
        done = self.finished()
        if done:  # on an outage the tokens stay, acknowledged by resume
            self.stats.inc_value(STAT + "acked", self.guarded(lambda: self.queue.ack(done), 0))

    def heartbeat(self) -> None:
        workers: list[str] = self.guarded(self.queue.heartbeat, [])
        self.others.update(w for w in workers if w != self.worker)
        self.reap()

    def reap(self) -> None:
        if time.monotonic() < self.reap_after:  # just back from an outage: the others may not have beaten yet
            return
        moved, dead = self.guarded(lambda: self.queue.reap(self.worker_timeout), (0, 0))
        if dead:
            self.stats.inc_value(STAT + "reaped_workers", dead)
            self.stats.inc_value(STAT + "reaped", moved)
            logger.warning("%d worker(s) silent for %.0fs: %d in-flight requests returned to the frontier",
                           dead, self.worker_timeout, moved)

    def spider_idle(self) -> None:
        """Keep an idle worker open while any worker has requests queued or in flight, or Redis is away."""
        self.acknowledge()
        self.reap()
        progress = self.guarded(self.queue.progress, None)
        if progress is None:  # unreachable: the frontier is out of sight, not drained
            self.reconnect.idle()
            raise DontCloseSpider
        queued, inflight = progress
        if not queued and not inflight:
            logger.info("Shared frontier drained: worker %s closes", self.worker)
            return
        if not self.waiting:
            self.waiting = True
            self.stats.inc_value(STAT + "idle_waits")
            logger.info("Idle, but the frontier is not drained (%d queued, %d in flight): waiting", queued, inflight)
        if self.wake_call is None:
            self.wake_call = call_later(self.poll_interval, self.wake)
        raise DontCloseSpider

    def wake(self) -> None:
        """Ask the engine for requests now, not at its 5 s heartbeat (:func:`skillgraph.compat.scrapy.wake_engine`)."""
        self.wake_call = None
        self.waiting = False
        wake_engine(self.crawler.engine)

    def leave(self) -> None:
        """Leave the frontier: requeue what is unfinished here, clear it if last, mark a shared graph ``partial``."""
        if self.beat.running:
            self.beat.stop()
        self.reconnect.close()
        if self.wake_call is not None:
            self.wake_call.cancel()
            self.wake_call = None
        self.acknowledge()
        self.heartbeat()  # the last look at who else worked on this frontier
        returned, cleared = self.guarded(
            lambda: self.queue.release(self.worker_timeout, clear_if_last=not self.persist), (0, False))
        if returned:
            self.stats.inc_value(STAT + "returned", returned)
            logger.info("%d unfinished requests returned to the shared frontier", returned)
        if cleared:
            self.stats.set_value(STAT + "frontier_cleared", 1)
            logger.info("Last worker out: shared frontier %s cleared", self.queue.keys.requests)
        if (self.others or self.resumed) and not self.crawler.settings.getbool("SKILLGRAPH_ASSEMBLY_ENABLED", True):
            # with assembly on (the default) the fleet's graph is whole: nothing partial to say
            self.stats.set_value(STAT + "partial_graph", 1)
            why = (f"{len(self.others)} other worker(s) shared this crawl" if self.others
                   else f"this run resumed a shared frontier ({self.resumed} requests queued)")
            self.crawler.signals.send_catch_log(
                build_warning, kind="partial", url=None,
                message=f"distributed crawl: {why}; this graph holds only the pages worker {self.worker} "
                        "fetched (every document is in skillgraph:queue once)")
