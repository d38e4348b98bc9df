"""DistributedScheduler: scrapy-redis's scheduler with a reliable, per-graph shared frontier.

What scrapy-redis gives as is: the request queue and the dupefilter in Redis,
shared by every worker, so each page is fetched once across workers. What this
subclass adds, and why:

* **Per-graph keys.** scrapy-redis names keys after the spider; every
  ``scrapy crawl docs -a url=...`` would then share one frontier whatever the
  site. The frontier is named after the spider, plus ``:<graph>`` when the
  graph name differs (``docs:docs.python.org``); a domain spider keeps
  ``<spider>:requests``.
* **Reliable pop** (:mod:`skillgraph.distributed.frontier`): a popped request is
  in flight under this worker until the engine is done with it.
* **No hoarding.** A worker takes a request only when its downloader can
  start it (nothing waits in a download slot, nor in a downloader middleware:
  :mod:`skillgraph.distributed.backlog`), so idle workers get the rest.
* **Detection first.** One worker detects and seeds, the others adopt its
  profile (:mod:`skillgraph.distributed.detection`); shared requests are
  handed to a spider only once its profile is known, since page callbacks
  need the scope.
* **Idle close that waits for the others** (:mod:`skillgraph.distributed.workers`,
  like heartbeats, acknowledgements, Redis outages and leaving). Scrapy closes
  a spider as soon as *its* scheduler is empty; a worker would then quit while
  another still holds the pages whose links are the rest of the crawl (or,
  starting second, quit before the first page is parsed). An idle worker stays
  open while anything is queued or in flight anywhere, polling every
  ``SKILLGRAPH_DISTRIBUTED_POLL_INTERVAL``, and closes when the frontier is
  drained. A worker that died stops sending heartbeats; its requests are
  requeued after ``SKILLGRAPH_DISTRIBUTED_WORKER_TIMEOUT``.
* **Redis down at start: a local crawl** (:mod:`skillgraph.distributed.fallback`).
  scrapy-redis pings Redis in ``from_crawler`` and the crawl dies with a
  traceback. Here ``open`` waits for Redis
  (:func:`skillgraph.distributed.redis_at_start`, asyncio, up to
  ``SKILLGRAPH_DISTRIBUTED_CONNECT_TIMEOUT``); if it does not answer, every
  call goes to Scrapy's own scheduler, built as in local mode (memory, disk
  and priority queues from the settings, ``JOBDIR``) with Scrapy's default
  dupefilter, and the crawl runs as a local one.
* **Clean slate.** The last worker out clears queue, dupefilter and shared profile (unless
  ``SCHEDULER_PERSIST``): a fresh crawl tomorrow is not filtered by today's.
  After a crash (no clean exit) the frontier stays and the next run resumes it.
* **Honest graphs.** Each worker's graph holds the pages *it* fetched. When
  other workers shared the crawl (or it resumed one), a ``partial`` warning
  goes into ``sources.json``; the queue and the items hold every document once.

Scrapy internals (the engine's in-progress set, its next call, the downloader's
slots) are read through :mod:`skillgraph.compat.scrapy` only.

Requests that cannot be stored as JSON (a render request's scrapy-playwright
``PageMethod``) stay in this worker's local queue: they are follow-ups of a page
it is processing.

The scheduler interface is synchronous, so this uses scrapy-redis's blocking
client on the reactor thread, as scrapy-redis does: one loopback or LAN round
trip per call, measured in bench/distributed.py.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.utils.defer import deferred_from_coro
from scrapy_redis import connection
from scrapy_redis.dupefilter import RFPDupeFilter
from scrapy_redis.scheduler import Scheduler

from skillgraph.compat.scrapy import download_slots, slot_backlog
from skillgraph.distributed.backlog import StartingRequests
from skillgraph.distributed.connection import redis_at_start
from skillgraph.distributed.fallback import local_scheduler, open_local_scheduler
from skillgraph.distributed.frontier import Frontier
from skillgraph.distributed.keys import FrontierKeys, frontier_name
from skillgraph.distributed.workers import STAT, FrontierWorker

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.core.scheduler import Scheduler as LocalScheduler
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from twisted.internet.defer import Deferred

__all__ = ["STAT", "DistributedScheduler", "frontier_name", "local_scheduler"]

logger = logging.getLogger(__name__)


class DistributedScheduler(FrontierWorker, Scheduler):
    #: what :func:`skillgraph.distributed.on_shared_frontier` asks of ``SCHEDULER``: this frontier is the build's
    shares_build_frontier = True
    crawler: Crawler
    queue: Frontier

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> DistributedScheduler:
        """scrapy-redis's settings, without its ping: :meth:`open` asks Redis, and may wait for it."""
        options: dict[str, Any] = {
            "persist": settings.getbool("SCHEDULER_PERSIST"),
            "flush_on_start": settings.getbool("SCHEDULER_FLUSH_ON_START"),
            "idle_before_close": settings.getint("SCHEDULER_IDLE_BEFORE_CLOSE"),
        }
        for option, name in (("queue_key", "SCHEDULER_QUEUE_KEY"), ("dupefilter_key", "SCHEDULER_DUPEFILTER_KEY"),
                             ("serializer", "SCHEDULER_SERIALIZER")):
            if settings.get(name):
                options[option] = settings.get(name)
        if isinstance(options.get("serializer"), str):
            options["serializer"] = importlib.import_module(options["serializer"])
        return cls(server=connection.from_settings(settings), **options)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DistributedScheduler:
        scheduler = cls.from_settings(crawler.settings)
        scheduler.init_worker(crawler)
        scheduler.fallback = None
        scheduler.debug = crawler.settings.getbool("DUPEFILTER_DEBUG")
        scheduler.warned = False
        scheduler.starting = StartingRequests(crawler)
        return scheduler

    # set in from_crawler (scrapy-redis builds the instance in from_settings), with FrontierWorker's
    debug: bool
    warned: bool
    starting: StartingRequests  # handed to the engine, not yet in a download slot
    fallback: LocalScheduler | None  # Redis was unreachable at start: a local crawl

    def open(self, spider: Spider) -> Deferred[None]:
        return deferred_from_coro(self._open(spider))

    async def _open(self, spider: Spider) -> None:
        self.spider = spider
        if await redis_at_start(self.crawler) is not None:
            self.fallback = local_scheduler(self.crawler)
            await open_local_scheduler(self.fallback, spider)
            return
        name = frontier_name(spider)
        keys = FrontierKeys.for_name(name, self.queue_key, self.dupefilter_key)
        self.queue = Frontier(self.server, spider, keys, self.worker, self.serializer)
        self.df = RFPDupeFilter(self.server, key=keys.dupefilter, debug=self.debug)
        if self.flush_on_start:
            self.flush()
        self.others.update(w for w in self.queue.heartbeat() if w != self.worker)
        self.reap()
        self.resumed = len(self.queue)
        if self.resumed:
            self.stats.set_value(STAT + "resumed", self.resumed)
            logger.info("Shared frontier %s: resuming %d queued requests", keys.requests, self.resumed)
        logger.info("Worker %s joined frontier %s (%d other workers registered)", self.worker, name,
                    len(self.others))
        self.crawler.signals.connect(self.spider_idle, signal=signals.spider_idle)
        self.beat.start(max(self.worker_timeout / 3, 0.1), now=False)

    # requests -----------------------------------------------------------------

    def enqueue_request(self, request: Request) -> bool:
        if self.fallback is not None:
            return self.fallback.enqueue_request(request)
        if self.reconnect.down:  # neither dupefilter nor queue until Redis is back
            return self.hold(request, ask=True)
        if not request.dont_filter:
            seen = self.guarded(lambda: self.df.request_seen(request), None)
            if seen is None:  # failed: the fingerprint may be recorded already
                return self.hold(request, ask=False)
            if seen:
                self.df.log(request, self.spider)
                return False
        try:
            shared = self.guarded(lambda: self.queue.push(request), False)
        except (TypeError, ValueError) as exc:  # not JSON, or a callback that is not a spider method
            shared = False
            self.stats.inc_value(STAT + "local_only")
            if not self.warned:
                self.warned = True
                logger.info("Kept %s in this worker, not in the shared frontier: %s", request, exc)
        if not shared and self.reconnect.down:
            return self.hold(request, ask=False)
        if not shared:
            self.local.append(request)
            return True
        self.stats.inc_value("scheduler/enqueued/redis")
        return True

    def next_request(self) -> Request | None:
        if self.fallback is not None:
            return self.fallback.next_request()
        self.acknowledge()
        if self.local:
            request: Request | None = self.local.popleft()
        elif self.reconnect.down or not self.spider_ready() or self.downloader_backlog():
            return None
        else:
            request = self.guarded(self.queue.pop, None)
            if request is not None:
                self.stats.inc_value("scheduler/dequeued/redis")
        if request is not None:
            self.starting.add(request)
        return request

    def spider_ready(self) -> bool:
        """A skillgraph spider parses pages only once ``profile`` is set (detected or adopted).

        Other workers' requests are in the frontier before this worker's
        ``start()`` has its profile: they wait until it has.
        """
        return getattr(self.spider, "profile", True) is not None

    def downloader_backlog(self) -> bool:
        """True while a popped request waits in a download slot or before it: take no more from the frontier.

        Scrapy's engine pulls requests until ``CONCURRENT_REQUESTS`` are in the
        downloader, though a one-site crawl downloads only
        ``CONCURRENT_REQUESTS_PER_DOMAIN`` at a time; the rest would wait in this
        worker while other workers sit idle (bench/distributed.py measured it).
        """
        downloader = getattr(self.crawler.engine, "downloader", None)
        return any(slot_backlog(slot) for slot in download_slots(downloader).values()) or self.starting.holding_back()

    def has_pending_requests(self) -> bool:
        if self.fallback is not None:
            return self.fallback.has_pending_requests()
        return bool(self.local) or self.guarded(self.queue.__len__, 0) > 0

    def __len__(self) -> int:
        if self.fallback is not None:
            return len(self.fallback)
        return len(self.local) + len(self.held) + self.guarded(self.queue.__len__, 0)

    # closing ------------------------------------------------------------------

    def close(self, reason: str) -> Deferred[None] | None:
        if self.fallback is not None:
            return self.fallback.close(reason)
        self.leave()
        return None
