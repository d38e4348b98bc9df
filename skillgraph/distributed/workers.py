"""A worker's side of the shared frontier: Redis outages, acknowledgements, heartbeats, idle close.

:class:`FrontierWorker` is the part of
:class:`~skillgraph.distributed.scheduler.DistributedScheduler` that deals
with the other workers of a frontier:

* **Outages.** Every Redis call goes through :meth:`FrontierWorker.guarded`:
  while Redis is down the worker answers a default and goes on with its local
  requests, trying Redis again after ``SKILLGRAPH_REDIS_RETRY_SECONDS``.
* **Acknowledgements.** A popped request stays in flight under this worker
  until the engine is done with it (callback and item pipelines included).
* **Heartbeats.** Every ``SKILLGRAPH_DISTRIBUTED_WORKER_TIMEOUT / 3`` seconds;
  the in-flight requests of a worker silent for longer than the timeout go
  back to the queue.
* **Idle close that waits for the others.** An idle worker stays open while
  anything is queued or in flight anywhere, polling every
  ``SKILLGRAPH_DISTRIBUTED_POLL_INTERVAL``.
* **Leaving.** Unfinished requests go back; the last worker out clears the
  frontier (unless ``SCHEDULER_PERSIST``); a graph that other workers shared
  is marked ``partial``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from redis.exceptions import RedisError
from scrapy.exceptions import DontCloseSpider
from scrapy.utils.asyncio import CallLaterResult, call_later

from skillgraph.compat.scrapy import requests_in_progress, wake_engine
from skillgraph.signals import build_warning

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from skillgraph.distributed.frontier import Frontier

logger = logging.getLogger("skillgraph.distributed.scheduler")  # the scheduler's log lines, as before the split
_T = TypeVar("_T")

STAT = "skillgraph/distributed/"


class FrontierWorker:
    """Mixin of the distributed scheduler; its attributes are set in ``DistributedScheduler.from_crawler``."""

    crawler: Crawler
    stats: StatsCollector
    queue: Frontier
    persist: bool
    worker: str
    worker_timeout: float
    poll_interval: float
    others: set[str]
    resumed: int
    waiting: bool
    wake_call: CallLaterResult | None
    beat: Any
    retry_seconds: float
    down_until: float
    outage_logged: bool

    def guarded(self, call: Callable[[], _T], default: _T) -> _T:
        """Run a Redis call; during an outage answer ``default`` and go on with the local queue.

        The crawl does not stop when Redis does (like the state and the dual
        write): the worker keeps its new requests locally, finishes what it
        holds and closes; what it had in flight is requeued by the next worker.
        """
        if time.monotonic() < self.down_until:
            return default
        try:
            result = call()
        except (RedisError, OSError) as exc:
            self.down_until = time.monotonic() + self.retry_seconds
            self.stats.inc_value(STAT + "redis_error")
            if not self.outage_logged:
                self.outage_logged = True
                logger.warning("Shared frontier unreachable (%s): this worker goes on with its local requests", exc)
            return default
        self.outage_logged = False
        return result

    def acknowledge(self) -> None:
        """Acknowledge popped requests the engine has finished with (left its in-progress set).

        The engine keeps a request in progress from download through callback
        and item pipelines, but exposes no signal for that last step, so its
        in-progress set is read (a private attribute,
        :func:`skillgraph.compat.scrapy.requests_in_progress`; the downloader's
        public ``active`` set, which ends before the callback, is the fallback).
        """
        if not self.queue.tokens:
            return
        busy = requests_in_progress(self.crawler.engine)
        done = [request for request in self.queue.tokens if request not in busy]
        if done:  # on an outage the tokens stay, acknowledged on a later call
            self.stats.inc_value(STAT + "acked", self.guarded(lambda: self.queue.ack(done), 0))

    def heartbeat(self) -> None:
        workers: list[str] = self.guarded(self.queue.heartbeat, [])
        self.others.update(w for w in workers if w != self.worker)
        self.reap()

    def reap(self) -> None:
        moved, dead = self.guarded(lambda: self.queue.reap(self.worker_timeout), (0, 0))
        if dead:
            self.stats.inc_value(STAT + "reaped_workers", dead)
            self.stats.inc_value(STAT + "reaped", moved)
            logger.warning("%d worker(s) silent for %.0fs: %d in-flight requests returned to the frontier",
                           dead, self.worker_timeout, moved)

    def spider_idle(self) -> None:
        """Keep an idle worker open while any worker has requests queued or in flight."""
        self.acknowledge()
        self.reap()
        queued, inflight = self.guarded(self.queue.progress, (0, 0))  # unreachable: nothing to wait for
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
        if self.others or self.resumed:
            self.stats.set_value(STAT + "partial_graph", 1)
            why = (f"{len(self.others)} other worker(s) shared this crawl" if self.others
                   else f"this run resumed a shared frontier ({self.resumed} requests queued)")
            self.crawler.signals.send_catch_log(
                build_warning, kind="partial", url=None,
                message=f"distributed crawl: {why}; this graph holds only the pages worker {self.worker} "
                        "fetched (every document is in skillgraph:queue once)")
