"""The link of a distributed build's shared limits in Redis: one asyncio client and the build's keys per crawler.

Page budget, content dedup and politeness are decided by each worker alone in
local mode; with N workers on one frontier that made the bound N times the
setting, a host N times as busy and a page under two URLs written twice. The
fleet-wide components (:mod:`skillgraph.distributed.admission`,
:mod:`skillgraph.distributed.politeness`) decide in Redis instead, under the
build's keys (:class:`~skillgraph.distributed.keys.BuildKeys`). They share
this link (:func:`fleet_link`), which:

* is there only in distributed mode with skillgraph's scheduler and
  ``SKILLGRAPH_FLEET_ENABLED``, and is *active* only once Redis answered at start
  (:func:`skillgraph.distributed.redis_at_start`); otherwise every limit is this
  worker's own, with one warning and ``skillgraph/fleet/unavailable``;
* starts a fresh build at zero: when this worker opens a frontier where nothing is
  queued, seen, detected or being detected, the budget and content hashes of an
  earlier build are deleted (a resumed frontier keeps counting);
* guards every call: a Redis error is logged once per outage, counted
  (``skillgraph/fleet/redis_error``), and Redis is left alone for
  ``SKILLGRAPH_REDIS_RETRY_SECONDS`` while the caller decides locally;
* leaves nothing forever: every key written gets ``SKILLGRAPH_FLEET_TTL``, refreshed
  on each write and at each worker's start.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar, cast
from weakref import WeakKeyDictionary

from scrapy import signals

from skillgraph.build.state import connect_redis
from skillgraph.distributed import on_shared_frontier
from skillgraph.distributed.connection import redis_at_start
from skillgraph.distributed.keys import BuildKeys, FrontierKeys

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

STAT = "skillgraph/fleet/"

#: KEYS: requests, dupefilter, profile, detection lock, budget, hashes. ARGV: ttl seconds.
#: A frontier with nothing queued, seen, detected or being detected starts a new build: its limits start at zero.
#: Returns {1 when fresh, keys deleted}.
OPEN = """
if redis.call('EXISTS', KEYS[1], KEYS[2], KEYS[3], KEYS[4]) > 0 then
  redis.call('EXPIRE', KEYS[5], ARGV[1])
  redis.call('EXPIRE', KEYS[6], ARGV[1])
  return {0, 0}
end
return {1, redis.call('DEL', KEYS[5], KEYS[6])}
"""


def fleet_configured(crawler: Crawler) -> bool:
    """Distributed mode with skillgraph's scheduler (its frontier is the build) and the fleet limits on."""
    return on_shared_frontier(crawler, "SKILLGRAPH_FLEET_ENABLED")


class FleetLink:
    """One crawler's connection to its build's shared limits; create with :func:`fleet_link`."""

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.url = str(settings["REDIS_URL"])
        self.ttl = max(settings.getint("SKILLGRAPH_FLEET_TTL", 86400), 1)
        #: how long a place a worker holds (in the page budget, among a host's requests) outlives a dead worker
        self.lease = 2 * max(settings.getfloat("DOWNLOAD_TIMEOUT"), 1.0)
        self.retry_seconds = settings.getfloat("SKILLGRAPH_REDIS_RETRY_SECONDS", 5.0)
        from scrapy_redis import defaults as redis_defaults  # built only in distributed mode: a local crawl skips it

        self.queue_key = str(settings.get("SCHEDULER_QUEUE_KEY") or redis_defaults.SCHEDULER_QUEUE_KEY)
        self.dupefilter_key = str(settings.get("SCHEDULER_DUPEFILTER_KEY") or redis_defaults.SCHEDULER_DUPEFILTER_KEY)
        self.redis: Redis | None = None
        self.keys: BuildKeys | None = None
        self.down_until = 0.0
        self.outage_logged = False
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.engine_stopped, signal=signals.engine_stopped)

    @property
    def active(self) -> bool:
        """Redis answered at start and is not known to be down: decide fleet-wide."""
        return self.keys is not None and time.monotonic() >= self.down_until

    def stat(self, event: str, value: int = 1) -> None:
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(STAT + event, value)

    async def spider_opened(self) -> None:
        """Ask Redis once (shared with the scheduler); name the build's keys; reset them for a fresh frontier."""
        from skillgraph.distributed.keys import frontier_name

        assert self.crawler.spider is not None and self.crawler.stats is not None
        if await redis_at_start(self.crawler) is not None:
            self.crawler.stats.set_value(STAT + "unavailable", 1)
            # info, not a second warning: the start-up look at Redis already said this crawl runs alone
            logger.info("Fleet-wide limits are off (Redis unreachable at start): the page budget, content dedup "
                        "and per-host politeness of this worker are its own")
            return
        name = frontier_name(self.crawler.spider)
        frontier = FrontierKeys.for_name(name, self.queue_key, self.dupefilter_key)
        keys = BuildKeys.for_frontier(name)
        self.redis = connect_redis(self.url)
        self.keys = keys
        opened = await self.call(lambda: self.script(OPEN, [frontier.requests, frontier.dupefilter, frontier.profile,
                                                            frontier.detect_lock, keys.budget, keys.hashes],
                                                     [self.ttl]))
        if opened is None:
            return
        fresh, deleted = (int(x) for x in cast("list[int]", opened))
        if deleted:
            self.crawler.stats.set_value(STAT + "reset", 1)
            logger.info("Fresh frontier %s: the page budget and content hashes of an earlier build were reset", name)
        elif not fresh:
            logger.info("Frontier %s is under way: this worker joins its fleet-wide page budget and content hashes",
                        name)

    async def script(self, source: str, keys: list[str], args: list[str | int | float]) -> object:
        assert self.redis is not None
        return await self.redis.register_script(source)(keys=keys, args=args)

    async def call(self, call: Callable[[], Awaitable[_T]]) -> _T | None:
        """Run a Redis call; None when the link is off or Redis fails (then the caller decides locally)."""
        from redis.exceptions import RedisError  # here: a local crawl never loads redis-py

        if not self.active:
            return None
        try:
            result = await call()
        except (RedisError, OSError, TimeoutError) as exc:
            self.down_until = time.monotonic() + self.retry_seconds
            self.stat("redis_error")
            if not self.outage_logged:
                self.outage_logged = True
                logger.warning("Fleet-wide limits unreachable in Redis (%s): this worker decides alone, trying "
                               "again every %g s", exc, self.retry_seconds, exc_info=True)
            return None
        self.outage_logged = False
        return result

    async def engine_stopped(self) -> None:
        if self.redis is not None:
            await self.redis.aclose()
            self.redis = None
        self.keys = None


_LINKS: WeakKeyDictionary[Crawler, FleetLink] = WeakKeyDictionary()


def fleet_link(crawler: Crawler) -> FleetLink | None:
    """The crawler's one link (created by the first component that asks), or None when fleet limits are off."""
    if not fleet_configured(crawler):
        return None
    link = _LINKS.get(crawler)
    if link is None:
        link = _LINKS[crawler] = FleetLink(crawler)
    return link
