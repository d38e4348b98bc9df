"""Redis lost mid-crawl: pause the shared frontier, reconnect with backoff, resume, or give up and say why.

A worker that lost Redis used to go on with its local requests, close as
``finished`` when it ran out of them and never come back to the frontier
(measured on the Python ``library/`` docs: 107 of 317 pages queued, Redis back
2 s after its crash). A Redis restart is an outage to sit out, not the end of
the crawl. :class:`Reconnect` is one worker's view of it:

* **The first failed frontier call starts the outage** (:meth:`Reconnect.begin`:
  one warning, ``skillgraph/distributed/outage/started``). The scheduler then
  calls Redis no more: requests in flight finish, the requests they make are
  held in the worker (:mod:`skillgraph.distributed.held`), their acknowledgements
  wait (so a worker that never sees Redis again leaves them in its in-flight
  hash, for another worker to requeue), their documents go pending on disk.
  An idle worker stays open (``DontCloseSpider``): the frontier is not drained,
  only out of sight.
* **Reconnect with backoff**: one asyncio PING (off the reactor's blocking
  path) after ``FIRST_DELAY`` seconds, then after twice that, up to
  ``SKILLGRAPH_DISTRIBUTED_RECONNECT_BACKOFF_MAX``. The waits are
  ``call_later`` timers; the reactor runs on.
* **Back**: ``on_back`` (the scheduler's resume: heartbeat, held requests into
  the frontier, acknowledgements) runs first; then the :data:`~skillgraph.signals.redis_back`
  signal tells the dual write to push the documents the outage left pending,
  and the engine is woken to take requests from the frontier again.
* **Gone for good**: after ``SKILLGRAPH_DISTRIBUTED_RECONNECT_TIMEOUT`` seconds
  without an answer the worker gives up: one error line that says why, the
  spider closed with reason :data:`GAVE_UP` (not a success: the build is not
  committed, exit 1), and Redis untouched, so the frontier is intact for the
  next run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError
from scrapy.utils.asyncio import CallLaterResult, call_later
from scrapy.utils.defer import deferred_from_coro

from skillgraph.compat.scrapy import wake_engine
from skillgraph.distributed.connection import redis_location, wait_for_redis
from skillgraph.signals import redis_back

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from twisted.python.failure import Failure

logger = logging.getLogger("skillgraph.distributed.scheduler")  # the scheduler's log lines


OUTAGE = "skillgraph/distributed/outage/"
GAVE_UP = "redis_unreachable"  #: close reason of a worker that waited for Redis in vain
FIRST_DELAY = 0.25  # seconds before the first reconnect attempt, doubled after each failure


class Reconnect:
    """One worker's Redis outage: when it began, the next attempt, and what to do when it ends."""

    def __init__(self, crawler: Crawler, on_back: Callable[[], None]) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.url: str = settings.get("REDIS_URL") or ""
        self.timeout = settings.getfloat("SKILLGRAPH_DISTRIBUTED_RECONNECT_TIMEOUT", 300.0)
        self.backoff_max = max(settings.getfloat("SKILLGRAPH_DISTRIBUTED_RECONNECT_BACKOFF_MAX", 10.0), FIRST_DELAY)
        self.on_back = on_back
        self.since: float | None = None  # monotonic start of the outage under way
        self.delay = FIRST_DELAY
        self.call: CallLaterResult | None = None
        self.closed = False
        self.idle_logged = False

    @property
    def down(self) -> bool:
        """True from the first failed call until Redis answers again (and for good after giving up)."""
        return self.since is not None

    def begin(self, exc: BaseException) -> None:
        """A frontier call failed: stop calling Redis, and try to reach it again in a moment."""
        if self.since is not None or self.closed:
            return
        self.since = time.monotonic()
        self.delay = FIRST_DELAY
        self.idle_logged = False
        self.crawler.stats.inc_value(f"{OUTAGE}started")
        logger.warning("Shared frontier at %s unreachable (%s): this worker finishes what it has in flight, takes "
                       "no new requests and reconnects for up to %g s", redis_location(self.url), exc, self.timeout)
        self._schedule()

    def idle(self) -> None:
        """The worker ran out of work during the outage: it waits for Redis, it does not close."""
        if not self.idle_logged:
            self.idle_logged = True
            self.crawler.stats.inc_value(f"{OUTAGE}idle_waits")
            logger.info("Idle while Redis is unreachable: waiting for the shared frontier, not closing")

    def close(self) -> None:
        """The spider closes: no more attempts (an attempt under way finds :attr:`closed`)."""
        self.closed = True
        if self.call is not None:
            self.call.cancel()
            self.call = None

    def _schedule(self) -> None:
        self.call = call_later(self.delay, self._attempt)
        self.delay = min(self.delay * 2, self.backoff_max)

    def _attempt(self) -> None:
        self.call = None
        deferred_from_coro(self._try()).addErrback(self._crashed)

    def _crashed(self, failure: Failure) -> None:
        """A bug in an attempt must not end the reconnecting: log it, try again later."""
        logger.error("Reconnect attempt failed unexpectedly", exc_info=failure.value)
        if not self.closed and self.since is not None:
            self._schedule()

    async def _try(self) -> None:
        error = await wait_for_redis(self.url, 0)  # one PING, asyncio
        if self.closed or self.since is None:
            return
        if error is None:
            try:
                self.on_back()
            except (RedisConnectionError, RedisTimeoutError, OSError) as exc:  # answered the PING, then failed again
                error = str(exc) or type(exc).__name__
            except RedisError as exc:  # answers, but refuses the frontier's commands (ACL, ...): waiting won't help
                await self._give_up(f"Redis at {redis_location(self.url)} answers but refuses the frontier's "
                                    f"commands ({exc})")
                return
        if error is None:
            await self._back()
            return
        self.crawler.stats.inc_value(f"{OUTAGE}attempts")
        if time.monotonic() - self.since >= self.timeout:
            await self._give_up(f"Redis at {redis_location(self.url)} stayed unreachable for {self.timeout:g} s "
                                f"mid-crawl ({error})")
        else:
            self._schedule()

    async def _back(self) -> None:
        assert self.since is not None
        seconds = time.monotonic() - self.since
        self.since = None
        stats = self.crawler.stats
        stats.inc_value(f"{OUTAGE}recovered")
        stats.max_value(f"{OUTAGE}longest_seconds", round(seconds, 1))
        logger.info("Shared frontier at %s reachable again after %.1f s: this worker carries on from it",
                    redis_location(self.url), seconds)
        wake_engine(self.crawler.engine)  # take requests from the frontier again, now
        await self.crawler.signals.send_catch_log_async(redis_back)

    async def _give_up(self, why: str) -> None:
        """Close the spider as :data:`GAVE_UP`; Redis is left alone (``down`` stays True), so the frontier stays."""
        self.closed = True
        self.crawler.stats.set_value(f"{OUTAGE}gave_up", 1)
        spider = self.crawler.spider.name if self.crawler.spider is not None else "SPIDER"
        logger.error("%s: this worker stops (exit 1); the shared frontier stays in Redis for the next run of the same "
                     "command, and the documents written meanwhile stay pending on disk for `scrapy replay %s`",
                     why, spider)
        if self.crawler.engine is not None:
            await self.crawler.engine.close_spider_async(reason=GAVE_UP)
