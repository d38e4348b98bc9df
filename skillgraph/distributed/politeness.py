"""FleetPolitenessMiddleware: one host's delay and Retry-After, kept by every worker of a distributed build.

Scrapy's download slots space requests per process: N workers on one frontier
hit a host N times as hard, and a ``Crawl-delay`` or a ``Retry-After`` was
honoured by each worker alone. Scrapy has no shared slot, so this middleware
reserves each request's send time in Redis, on the host's key
``<frontier>:build:slot:<host>`` (:class:`~skillgraph.distributed.keys.BuildKeys`):

* **Delay.** One Lua script, atomic across the fleet: ``at = max(now, last + delay,
  hold)``; ``last = at``; the worker waits ``at - now`` (``asyncio.sleep``: the
  reactor runs on) before the request goes on to its download slot. ``delay`` is
  this worker's delay for the host as the slot has it: ``DOWNLOAD_DELAY``, raised by
  a robots.txt ``Crawl-delay`` (:mod:`skillgraph.middlewares.politeness`) or by
  AutoThrottle, whichever is larger, as locally. Times are Redis's clock.
* **Retry-After.** A 429/503 with ``Retry-After`` seen by one worker sets the host's
  ``hold`` (capped by ``SKILLGRAPH_POLITENESS_MAX_RETRY_AFTER``): no worker sends to
  it before then. The local middleware still holds the retry itself.
* **Concurrency.** Before its turn, a request takes a lease on the host
  (:mod:`skillgraph.distributed.hostleases`, one script with the reservation): the
  fleet, not each worker, has at most ``CONCURRENT_REQUESTS_PER_DOMAIN`` requests in
  flight at the host (a ``DOWNLOAD_SLOTS`` ``concurrency`` of the host wins, as in
  Scrapy). The lease is given back when the request leaves the downloader, or when it
  ends before (an exception, a response from a later middleware, the spider closing);
  a dead worker's leases expire. Each worker also holds at most that many
  reservations per host at a time (so it does not book the host's next minute).

After the wait the local slot adds no delay of its own (its last-seen time is
moved back): the reservation is the request's delay, the lease its place among the
host's requests in flight (Scrapy 2.19's slot does not bound them without a delay:
under the asyncio reactor it starts every request queued in it at once). A worker
whose reactor was busy when its turn came (it woke more than half a delay late)
takes a new turn rather than go out on top of the next worker's
(``skillgraph/fleet/politeness/late``). Keys expire after ``SKILLGRAPH_FLEET_TTL``,
refreshed on every request.
Redis unreachable: the request goes on under this worker's own slot alone
(:mod:`skillgraph.distributed.limits` warns once). Placed at 945: after retries,
redirects and the proxy, just before the SSRF guard; responses reach it first.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from skillgraph.compat.scrapy import per_slot_settings, set_slot_last_seen, slot_delay, slot_of
from skillgraph.distributed.hostleases import HostLeases
from skillgraph.distributed.limits import fleet_link
from skillgraph.middlewares.politeness import parse_retry_after

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

#: KEYS: the host's slot. ARGV: seconds, ttl seconds. No worker sends to the host for that long.
HOLD = """
local t = redis.call('TIME')
local hold = tonumber(t[1]) + tonumber(t[2]) / 1000000 + tonumber(ARGV[1])
local held = redis.call('HGET', KEYS[1], 'hold')
if not held or tonumber(held) < hold then redis.call('HSET', KEYS[1], 'hold', string.format('%.6f', hold)) end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1
"""

_BACK_OFF_CODES = (429, 503)
#: A worker that woke more than half a delay after its turn (the reactor was busy) takes a new turn, this often.
LATE_RETRIES = 2


class FleetPolitenessMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.getbool("SKILLGRAPH_POLITENESS_ENABLED", True):
            raise NotConfigured("SKILLGRAPH_POLITENESS_ENABLED is False")
        link = fleet_link(crawler)
        if link is None:
            raise NotConfigured("fleet-wide politeness needs distributed mode (REDIS_URL) and SKILLGRAPH_FLEET_ENABLED")
        self.crawler = crawler
        self.link = link
        self.download_delay = settings.getfloat("DOWNLOAD_DELAY")
        self.concurrency = max(settings.getint("CONCURRENT_REQUESTS_PER_IP")
                               or settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN", 8), 1)
        self.leases = HostLeases(crawler, link)
        self.max_retry_after = settings.getfloat("SKILLGRAPH_POLITENESS_MAX_RETRY_AFTER", 120.0)
        self.gates: dict[str, asyncio.Semaphore] = {}  # slot key -> this worker's reservations in progress
        self._logged: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def slot_key(self, request: Request) -> str:
        assert self.crawler.engine is not None
        return str(self.crawler.engine.downloader.get_slot_key(request))

    def delay(self, key: str) -> float:
        """This worker's delay for the host: its live slot's (Crawl-delay, AutoThrottle), else the slot settings'."""
        assert self.crawler.engine is not None
        downloader = self.crawler.engine.downloader
        slot = slot_of(downloader, key)
        if slot is not None:
            return slot_delay(slot)
        return float(per_slot_settings(downloader).get(key, {}).get("delay", self.download_delay))

    def bound(self, key: str) -> int:
        """The host's concurrency, as Scrapy gives its slot: ``DOWNLOAD_SLOTS`` ``concurrency``, else the setting."""
        assert self.crawler.engine is not None
        found = per_slot_settings(self.crawler.engine.downloader).get(key, {}).get("concurrency")
        return max(int(found), 1) if found is not None else self.concurrency

    async def process_request(self, request: Request) -> None:
        if not self.link.active:
            return
        key = self.slot_key(request)
        gate = self.gates.setdefault(key, asyncio.Semaphore(self.bound(key)))
        try:
            async with gate:
                for attempt in range(1, LATE_RETRIES + 2):
                    late = await self.reserve_and_wait(request, key)
                    if late is None:
                        return  # Redis is down: this worker's own slot spaces the request
                    if late <= self.delay(key) / 2 or self.delay(key) <= 0 or attempt > LATE_RETRIES:
                        break
                    self.link.stat("politeness/late")  # its turn passed while the reactor was busy: take the next one
                self.clear_slot_delay(key)
        except BaseException:  # cancelled while waiting: its lease goes back (process_exception sees no cancel)
            self.leases.release(request)
            raise

    async def reserve_and_wait(self, request: Request, key: str) -> float | None:
        """A lease on the host and its next send time, fleet-wide, then the wait; how late this worker woke."""
        turn = await self.leases.take(request, key, self.bound(key), self.delay(key))
        if turn is None:
            return None
        self.link.stat("politeness/reserved")
        loop = asyncio.get_running_loop()
        wait = turn - loop.time()
        if wait > 0:
            self.link.stat("politeness/waited")
            self.link.stat("politeness/wait_ms", round(wait * 1000))
            await asyncio.sleep(wait)
        return loop.time() - turn

    def clear_slot_delay(self, key: str) -> None:
        """The reservation was this request's delay: the slot must not add its own (jittered) one on top.

        Left alone, the slot waited up to 1.5 x its delay after the reserved time, and requests of two
        workers reserved one delay apart went out together (15% of gaps under half the delay, measured).
        """
        assert self.crawler.engine is not None
        slot = slot_of(self.crawler.engine.downloader, key)
        if slot is not None and slot_delay(slot) > 0:
            set_slot_last_seen(slot, time.monotonic() - 2 * slot_delay(slot))

    def process_exception(self, request: Request, exception: Exception) -> None:
        """A request that failed or was refused after its lease (a later middleware, the download): lease back."""
        self.leases.release(request)

    async def process_response(self, request: Request, response: Response) -> Response:
        self.leases.release(request)  # usually given back already as the request left the downloader
        if response.status not in _BACK_OFF_CODES or b"Retry-After" not in response.headers:
            return response
        wait = parse_retry_after((response.headers.get(b"Retry-After") or b"").decode("latin-1"))
        keys = self.link.keys
        if not wait or keys is None:
            return response
        wait = min(wait, self.max_retry_after)
        key = self.slot_key(request)
        if await self.link.call(lambda: self.link.script(HOLD, [keys.slot(key)], [wait, self.link.ttl])) is None:
            return response
        self.link.stat("politeness/retry_after")
        level = logging.DEBUG if key in self._logged else logging.INFO
        self._logged.add(key)
        logger.log(level, "%s answered %d with Retry-After: every worker holds off it for %.1f s", key,
                   response.status, wait)
        return response
