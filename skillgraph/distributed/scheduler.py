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
  start it, so idle workers get the rest.
* **Detection first.** One worker detects and seeds, the others adopt its
  profile (:mod:`skillgraph.distributed.detection`); shared requests are
  handed to a spider only once its profile is known, since page callbacks
  need the scope.
* **Idle close that waits for the others.** Scrapy closes a spider as soon as
  *its* scheduler is empty; a worker would then quit while another still holds
  the pages whose links are the rest of the crawl (or, starting second, quit
  before the first page is parsed). An idle worker stays open while anything
  is queued or in flight anywhere, polling every ``POLL_INTERVAL``, and closes
  when the frontier is drained. A worker that died stops sending heartbeats; its
  requests are requeued after ``SKILLGRAPH_DISTRIBUTED_WORKER_TIMEOUT``.
* **Redis down at start: a local crawl.** scrapy-redis pings Redis in
  ``from_crawler`` and the crawl dies with a traceback. Here ``open`` waits for
  Redis (:func:`skillgraph.distributed.redis_at_start`, asyncio, up to
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
import os
import socket
import time
import uuid
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from redis.exceptions import RedisError
from scrapy import signals
from scrapy.core.scheduler import Scheduler as LocalScheduler
from scrapy.exceptions import DontCloseSpider
from scrapy.settings import default_settings
from scrapy.utils.asyncio import CallLaterResult, call_later, create_looping_call
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.job import job_dir
from scrapy.utils.misc import build_from_crawler, load_object
from scrapy_redis import connection
from scrapy_redis.dupefilter import RFPDupeFilter
from scrapy_redis.scheduler import Scheduler

from skillgraph.distributed import redis_at_start
from skillgraph.distributed.frontier import Frontier, FrontierKeys
from skillgraph.signals import build_warning

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from twisted.internet.defer import Deferred

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

STAT = "skillgraph/distributed/"


def frontier_name(spider: Spider) -> str:
    graph = getattr(spider, "graph_name", None)
    return spider.name if not graph or graph == spider.name else f"{spider.name}:{graph}"


def local_scheduler(crawler: Crawler) -> LocalScheduler:
    """Scrapy's scheduler as a local crawl builds it, with Scrapy's dupefilter instead of scrapy-redis's."""
    settings = crawler.settings
    return LocalScheduler(
        dupefilter=build_from_crawler(load_object(default_settings.DUPEFILTER_CLASS), crawler),
        jobdir=job_dir(settings),
        dqclass=load_object(settings["SCHEDULER_DISK_QUEUE"]),
        mqclass=load_object(settings["SCHEDULER_MEMORY_QUEUE"]),
        logunser=settings.getbool("SCHEDULER_DEBUG"),
        stats=crawler.stats,
        pqclass=load_object(settings["SCHEDULER_PRIORITY_QUEUE"]),
        crawler=crawler,
    )


class DistributedScheduler(Scheduler):
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
        settings = crawler.settings
        scheduler = cls.from_settings(settings)
        scheduler.stats = crawler.stats
        scheduler.crawler = crawler
        scheduler.fallback = None
        scheduler.worker_timeout = settings.getfloat("SKILLGRAPH_DISTRIBUTED_WORKER_TIMEOUT", 30.0)
        scheduler.poll_interval = settings.getfloat("SKILLGRAPH_DISTRIBUTED_POLL_INTERVAL", 0.5)
        scheduler.debug = settings.getbool("DUPEFILTER_DEBUG")
        scheduler.worker = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        scheduler.local = deque()
        scheduler.others = set()
        scheduler.resumed = 0
        scheduler.waiting = False
        scheduler.wake_call = None
        scheduler.beat = create_looping_call(scheduler.heartbeat)
        scheduler.warned = False
        scheduler.retry_seconds = settings.getfloat("SKILLGRAPH_REDIS_RETRY_SECONDS", 5.0)
        scheduler.down_until = 0.0
        scheduler.outage_logged = False
        return scheduler

    # these are set in from_crawler (scrapy-redis builds the instance in from_settings)
    worker_timeout: float
    poll_interval: float
    debug: bool
    worker: str
    local: deque[Request]
    others: set[str]
    resumed: int
    waiting: bool
    wake_call: CallLaterResult | None
    warned: bool
    beat: Any
    retry_seconds: float
    down_until: float
    outage_logged: bool
    fallback: LocalScheduler | None  # Redis was unreachable at start: a local crawl

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

    def open(self, spider: Spider) -> Deferred[None]:
        return deferred_from_coro(self._open(spider))

    async def _open(self, spider: Spider) -> None:
        self.spider = spider
        if await redis_at_start(self.crawler) is not None:
            self.fallback = local_scheduler(self.crawler)
            if (opened := self.fallback.open(spider)) is not None:
                await maybe_deferred_to_future(opened)
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
        if not request.dont_filter and self.guarded(lambda: self.df.request_seen(request), False):
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
            return self.local.popleft()
        if not self.spider_ready() or self.downloader_backlog():
            return None
        request: Request | None = self.guarded(self.queue.pop, None)
        if request is not None:
            self.stats.inc_value("scheduler/dequeued/redis")
        return request

    def spider_ready(self) -> bool:
        """A skillgraph spider parses pages only once ``profile`` is set (detected or adopted).

        Other workers' requests are in the frontier before this worker's
        ``start()`` has its profile: they wait until it has.
        """
        return getattr(self.spider, "profile", True) is not None

    def downloader_backlog(self) -> bool:
        """True while a popped request waits in a download slot: take no more from the frontier.

        Scrapy's engine pulls requests until ``CONCURRENT_REQUESTS`` are in the
        downloader, though a one-site crawl downloads only
        ``CONCURRENT_REQUESTS_PER_DOMAIN`` at a time; the rest would wait in this
        worker while other workers sit idle (bench/distributed.py measured it).
        """
        downloader = getattr(self.crawler.engine, "downloader", None)
        slots = getattr(downloader, "slots", None) or {}
        return any(slot.queue for slot in slots.values())

    def has_pending_requests(self) -> bool:
        if self.fallback is not None:
            return self.fallback.has_pending_requests()
        return bool(self.local) or self.guarded(self.queue.__len__, 0) > 0

    def __len__(self) -> int:
        if self.fallback is not None:
            return len(self.fallback)
        return len(self.local) + self.guarded(self.queue.__len__, 0)

    def acknowledge(self) -> None:
        """Acknowledge popped requests the engine has finished with (left its in-progress set).

        The engine keeps a request in progress from download through callback
        and item pipelines, but exposes no signal for that last step, so its
        slot is read (a private attribute; the downloader's public ``active``
        set, which ends before the callback, is the fallback).
        """
        if not self.queue.tokens:
            return
        engine = self.crawler.engine
        slot = getattr(engine, "_slot", None)
        busy = getattr(slot, "inprogress", None)
        if busy is None:
            busy = engine.downloader.active if engine is not None else set()
        done = [request for request in self.queue.tokens if request not in busy]
        if done:  # on an outage the tokens stay, acknowledged on a later call
            self.stats.inc_value(STAT + "acked", self.guarded(lambda: self.queue.ack(done), 0))

    # workers ------------------------------------------------------------------

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
        """Ask the engine for requests now, not at its 5 s heartbeat (private slot, as above)."""
        self.wake_call = None
        self.waiting = False
        nextcall = getattr(getattr(self.crawler.engine, "_slot", None), "nextcall", None)
        if nextcall is not None:
            nextcall.schedule()

    # closing ------------------------------------------------------------------

    def close(self, reason: str) -> Deferred[None] | None:
        if self.fallback is not None:
            return self.fallback.close(reason)
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
        return None
