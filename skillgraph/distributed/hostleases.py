"""HostLeases: a host's concurrency bound kept by the whole fleet, a semaphore in Redis.

Scrapy's download slot bounds the requests in flight to a host per process: with N
workers on one frontier a host had N x ``CONCURRENT_REQUESTS_PER_DOMAIN`` requests at
once (4 at a bound of 2 with two workers, measured in tests/test_fleet_concurrency.py).
Scrapy has no shared slot and scrapy-redis shares only the frontier, so a request here
takes a *lease* on its host before it goes to its download slot, and gives it back when
it leaves the downloader. Keys (:class:`~skillgraph.distributed.keys.BuildKeys`):

* ``<frontier>:build:leases:<host>``, sorted set ``lease id -> expiry`` (Redis's clock).
  :data:`ACQUIRE` is one Lua script: expired leases are dropped, and when fewer than the
  bound remain the lease is added *and* the request's send time is reserved on the host's
  slot (delay, Crawl-delay, Retry-After hold: :mod:`skillgraph.distributed.politeness`),
  so that the lease covers its wait. A lease ends at its send time plus twice
  ``DOWNLOAD_TIMEOUT``: a SIGKILLed worker never gives its leases back, and they expire.
* ``<frontier>:build:wake:<host>``, list: :data:`RELEASE` pushes a token when a lease is
  given back, and a request waiting for a lease ``BLPOP``s it on the asyncio client (the
  reactor runs on; no polling loop). The wait times out after :data:`WAKE_SECONDS` to see
  leases that expired without a release. Tokens nobody took are kept up to the bound.

A release Redis did not answer is kept and sent again with the next lease taken here,
so a short outage does not shrink the host's bound until the leases expire. Redis
unreachable: :meth:`HostLeases.take` answers None and the request goes on under this
worker's own slot (:mod:`skillgraph.distributed.limits` warns once).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import uuid
from typing import TYPE_CHECKING, cast

from scrapy import signals

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from skillgraph.distributed.limits import FleetLink

logger = logging.getLogger("skillgraph.distributed.politeness")

#: Seconds a request waits for a released lease before it looks again (leases of a dead worker only expire).
WAKE_SECONDS = 1.0

_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
"""

#: The host's next send time, ``at = max(now, last + delay, hold)``; KEYS[1] slot, ARGV[1] delay, ARGV[2] ttl.
_TURN = """
local at = now
local last = redis.call('HGET', KEYS[1], 'last')
if last then at = math.max(at, tonumber(last) + tonumber(ARGV[1])) end
local hold = redis.call('HGET', KEYS[1], 'hold')
if hold then at = math.max(at, tonumber(hold)) end
redis.call('HSET', KEYS[1], 'last', string.format('%.6f', at))
redis.call('EXPIRE', KEYS[1], ARGV[2])
"""

#: KEYS: the host's slot, its leases. ARGV: delay, ttl, lease id, bound, lease seconds.
#: Returns {1, leases, seconds to wait} with the lease taken (or kept: a lease id already there is renewed),
#: or {0, leases, ''} when the fleet has the bound in flight.
ACQUIRE = _NOW + """
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if not redis.call('ZSCORE', KEYS[2], ARGV[3]) then
  local n = redis.call('ZCARD', KEYS[2])
  if n >= tonumber(ARGV[4]) then return {0, n, ''} end
end
""" + _TURN + """
redis.call('ZADD', KEYS[2], at + tonumber(ARGV[5]), ARGV[3])
redis.call('EXPIRE', KEYS[2], ARGV[2])
return {1, redis.call('ZCARD', KEYS[2]), string.format('%.6f', at - now)}
"""

#: KEYS: the host's leases, its wake list. ARGV: lease id, bound, ttl. Returns 1 when the lease was there.
RELEASE = """
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('LPUSH', KEYS[2], '1')
redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[2]) - 1)
redis.call('EXPIRE', KEYS[2], ARGV[3])
return 1
"""


class HostLeases:
    """This worker's leases on hosts of the build: taken before a request's slot, given back when it leaves."""

    def __init__(self, crawler: Crawler, link: FleetLink) -> None:
        self.link = link
        self.prefix = uuid.uuid4().hex[:12]  # lease ids: unique per worker, so a release never frees another's
        self.ids = itertools.count(1)
        self.held: dict[Request, tuple[str, str, int]] = {}  # request -> (host, lease id, bound)
        self.unreleased: list[tuple[str, str, int]] = []  # releases Redis did not answer: sent again later
        self.releasing: set[asyncio.Future[None]] = set()
        self.waiting_logged: set[str] = set()
        crawler.signals.connect(self.left_downloader, signal=signals.request_left_downloader)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    async def take(self, request: Request, host: str, bound: int, delay: float) -> float | None:
        """A lease on ``host`` (waiting for one while the fleet has ``bound`` in flight) and the send time reserved.

        The send time on the event loop's clock; None when Redis does not answer (the worker's own slot decides).
        Called again for a request that holds its lease, it renews the lease and takes a new turn.
        """
        keys = self.link.keys
        if keys is None:
            return None
        self.retry_releases()
        held = self.held.get(request)
        lease = held[1] if held else f"{self.prefix}:{next(self.ids)}"
        loop = asyncio.get_running_loop()
        since: float | None = None
        while True:
            asked = loop.time()
            found = await self.link.call(lambda: self.link.script(
                ACQUIRE, [keys.slot(host), keys.leases(host)], [delay, self.link.ttl, lease, bound, self.link.lease]))
            if found is None:
                return None
            ok, in_flight, wait = (x.decode() if isinstance(x, bytes) else str(x) for x in cast("list[object]", found))
            if ok == "1":
                break
            if since is None:
                since = loop.time()
                self.link.stat("concurrency/waited")
                level = logging.DEBUG if host in self.waiting_logged else logging.INFO
                self.waiting_logged.add(host)
                logger.log(level, "%s has %s requests in flight across the fleet (bound %d): waiting for one to end",
                           host, in_flight, bound)
            await self.link.call(lambda: self.woken(keys.wake(host)))
        if held is None:
            self.held[request] = (host, lease, bound)
            self.link.stat("concurrency/acquired")
        if since is not None:
            self.link.stat("concurrency/wait_ms", round((loop.time() - since) * 1000))
        return asked + float(wait)

    async def woken(self, wake: str) -> object:
        """Wait for a released lease's token on the asyncio client, :data:`WAKE_SECONDS` at most."""
        assert self.link.redis is not None
        return await self.link.redis.blpop([wake], timeout=WAKE_SECONDS)

    def release(self, request: Request) -> None:
        """Give the request's lease back (once; nothing when it holds none) and wake a waiter of the fleet."""
        held = self.held.pop(request, None)
        if held is not None:
            self.send_release(held)

    def left_downloader(self, request: Request) -> None:
        """The download is over (a response or a failure): the host's place is free for the fleet."""
        self.release(request)

    def send_release(self, held: tuple[str, str, int]) -> None:
        task = asyncio.ensure_future(self.released(held))
        self.releasing.add(task)
        task.add_done_callback(self.releasing.discard)

    async def released(self, held: tuple[str, str, int]) -> None:
        host, lease, bound = held
        keys = self.link.keys
        if keys is None:
            return
        done = await self.link.call(lambda: self.link.script(RELEASE, [keys.leases(host), keys.wake(host)],
                                                             [lease, bound, self.link.ttl]))
        if done is None:
            self.unreleased.append(held)
            self.link.stat("concurrency/release_failed")
        else:
            self.link.stat("concurrency/released")

    def retry_releases(self) -> None:
        """Releases Redis missed (an outage): send them now that a lease is asked for (Redis answers again)."""
        if self.unreleased and self.link.active:
            pending, self.unreleased = self.unreleased, []
            for held in pending:
                self.send_release(held)

    async def spider_closed(self) -> None:
        """Leases still held at close (requests that never reached the downloader) go back; the rest expire."""
        for request in list(self.held):
            self.release(request)
        self.retry_releases()
        if self.releasing:
            await asyncio.gather(*self.releasing)
