"""Fleet admission: the page budget and content dedup of a distributed build, decided in Redis.

Locally the Build admits a document (:meth:`skillgraph.build.Build.admit`): new, the
same content under another URL (a ``duplicate`` skip), or over the page bound (left
unreached); and it holds page requests while admissions plus pages in flight fill the
bound (:meth:`~skillgraph.build.Build.wait_for_budget`). With N workers on one frontier
each Build saw its own pages only: two workers at ``SKILLGRAPH_MAX_PAGES=100`` queued 200
documents, and a page fetched under two URLs by two workers was written twice. Here the
same rules run in Lua scripts on the build's keys, so the fleet decides as one Build:

* **A place per page in flight** (:meth:`FleetAdmission.hold`, before a page request is
  sent): ``<frontier>:build:budget`` (pages admitted) plus ``<frontier>:build:budget:held``
  (sorted set: page URL -> lease end) must stay under the bound. When they do not, the
  request waits (polling; the worker takes no more meanwhile) while places may free up, and is refused
  once the fleet admitted the bound. A place is freed when the page settles in this
  worker's Build (a document admitted, a skip, an error: ``Build.on_settle``), at close,
  or — its worker died — when its lease (twice ``DOWNLOAD_TIMEOUT``) ends.
* **Admission** (:meth:`FleetAdmission.admit`, one script): content already admitted
  under another URL (``<frontier>:build:hashes``, ``sha256 -> url``, first writer wins)
  is a duplicate, recorded in the Build exactly like a local one ("same content as URL");
  the same URL with the same content again (a page refetched after its worker died) is
  admitted without spending; otherwise the budget is incremented while under the bound,
  and past it the Build leaves the page unreached (``truncated.skipped``). Content before
  budget, as locally: a duplicate never spends, and no hash is kept for a page refused.

The fleet's admitted total is also the Build's (``Build.fleet_spent``). Corpus sections
(llms-full) are decided locally: the leader writes the whole corpus. When Redis does not
answer, the Build decides alone (the link warns once).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast
from weakref import WeakKeyDictionary

from scrapy import signals

from skillgraph.build import Build
from skillgraph.compat.scrapy import wake_engine
from skillgraph.distributed.limits import FleetLink, fleet_link
from skillgraph.urls import page_key

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: Seconds after which a page request waiting for a place in the fleet's budget stops holding back the frontier
#: (:mod:`skillgraph.distributed.backlog`): places are freed by pages in flight, which may need a request only
#: the frontier holds.
BUDGET_PATIENCE = 1.0

POLL_SECONDS = 0.1  # between looks at a full fleet budget while places may still free up

#: KEYS: budget, held. ARGV: page URL, bound, lease seconds, ttl. Returns {1 held or 0 full, admitted, held}.
HOLD = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local spent = tonumber(redis.call('GET', KEYS[1]) or '0')
local held = redis.call('ZCARD', KEYS[2])
if not redis.call('ZSCORE', KEYS[2], ARGV[1]) and spent + held >= tonumber(ARGV[2]) then return {0, spent, held} end
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[4])
return {1, spent, redis.call('ZCARD', KEYS[2])}
"""

#: KEYS: budget, hashes, held. ARGV: page URL, sha256, bound (0: none), ttl seconds.
#: Returns {verdict, URL first admitted with this content or '', pages admitted fleet-wide}.
ADMIT = """
redis.call('ZREM', KEYS[3], ARGV[1])
local first = redis.call('HGET', KEYS[2], ARGV[2])
local spent = tonumber(redis.call('GET', KEYS[1]) or '0')
if first == ARGV[1] then return {'again', first, spent} end
if first then return {'same-content', first, spent} end
local bound = tonumber(ARGV[3])
if bound > 0 and spent >= bound then return {'over-budget', '', spent} end
spent = redis.call('INCR', KEYS[1])
redis.call('HSET', KEYS[2], ARGV[2], ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[4])
redis.call('EXPIRE', KEYS[2], ARGV[4])
return {'new', '', spent}
"""


def held_key(budget: str) -> str:
    """The sorted set of pages in flight that hold a place in the budget (beside the budget's counter)."""
    return budget + ":held"


def decoded(reply: object) -> list[str]:
    return [x.decode() if isinstance(x, bytes) else str(x) for x in cast("list[object]", reply)]


@dataclass(frozen=True)
class Admitted:
    """The Build's verdict (``new``, ``same-url``, ``same-content``, ``over-budget``) and who decided it."""

    verdict: str
    elsewhere: bool = False  # the same content was admitted by another worker: its document is theirs


class FleetAdmission:
    """The fleet's page budget and content hashes for one crawler; get it with :meth:`of`."""

    def __init__(self, crawler: Crawler, link: FleetLink) -> None:
        self.crawler = crawler
        self.link = link
        self.build = Build.of(crawler)
        self.held: set[str] = set()  # page keys holding a place in the fleet's budget
        self.waits: list[float] = []  # when each page request waiting for a place started (time.monotonic)
        self.max_waiting = max(crawler.settings.getint("CONCURRENT_REQUESTS", 16) // 2, 1)
        self.releasing: set[asyncio.Future[int | None]] = set()
        self.build.on_settle = self.settled
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def of(cls, crawler: Crawler) -> FleetAdmission | None:
        """The crawler's one fleet admission in distributed mode (shared by the budget middleware and pipeline)."""
        link = fleet_link(crawler)
        if link is None:
            return None
        found = _ADMISSIONS.get(crawler)
        if found is None:
            found = _ADMISSIONS[crawler] = cls(crawler, link)
        return found

    @classmethod
    def existing(cls, crawler: Crawler) -> FleetAdmission | None:
        """The crawler's fleet admission if a component made one (the scheduler's backlog must not create it)."""
        return _ADMISSIONS.get(crawler)

    def long_waits(self, seconds: float) -> int:
        """Page requests that have waited for a place more than ``seconds`` (:mod:`~skillgraph.distributed.backlog`)."""
        now = time.monotonic()
        return sum(now - since > seconds for since in self.waits)

    # a place per page in flight --------------------------------------------------------------------------

    async def hold(self, url: str, patience: float) -> bool | None:
        """A place in the fleet's budget for this page: True, False once the fleet admitted the bound.

        None: the Build decides alone (not bounded, Redis down, or no place freed within ``patience``).
        While places are held by pages in flight (here or elsewhere) the request waits for one. A waiter
        holds the worker back from the frontier (:mod:`~skillgraph.distributed.backlog`) for 1 s, then
        no longer: a tier-ladder request there may be what frees a place. At most half of
        ``CONCURRENT_REQUESTS`` wait at a time (waiters filling the engine stalled a crawl 30 s); the
        others go on under the local rule, and may be fetched past the bound and refused at admission
        (15-19 of 100 in tests/test_fleet_limits.py's crawl before waiters held the worker back, 0 since).
        """
        build, keys = self.build, self.link.keys
        if not build.bounded or keys is None:
            return None
        key, loop = page_key(url), asyncio.get_running_loop()
        deadline, waiting, since, long = loop.time() + patience, False, 0.0, False
        try:
            while True:
                found = await self.link.call(lambda: self.link.script(
                    HOLD, [keys.budget, held_key(keys.budget)], [key, build.max_pages, self.link.lease, self.link.ttl]))
                if found is None:
                    return None
                ok, spent, held = (int(x) for x in decoded(found))
                build.fleet_spent = spent
                if ok:
                    self.held.add(key)
                    return True
                if spent >= build.max_pages:
                    self.link.stat("budget/full")
                    return False
                if loop.time() >= deadline or (not waiting and len(self.waits) >= self.max_waiting):
                    self.link.stat("budget/impatient")
                    logger.debug("No place in the fleet's budget (%d held): the local rule decides on %s", held, url)
                    return None
                if not waiting:
                    waiting, since = True, time.monotonic()
                    self.waits.append(since)
                    self.link.stat("budget/waits")
                elif not long and time.monotonic() - since > BUDGET_PATIENCE:
                    long = True  # the worker may take requests again (a tier request may free a place)
                    self.link.stat("budget/long_waits")
                    wake_engine(self.crawler.engine)
                await asyncio.sleep(POLL_SECONDS)
        finally:
            if waiting:
                self.waits.remove(since)

    def settled(self, key: str) -> None:
        """The Build settled a page in flight (``Build.on_settle``): free its place for the whole fleet."""
        if key in self.held:
            self.release([key])

    def release(self, urls: list[str]) -> None:
        keys = self.link.keys
        urls = [page_key(url) for url in urls if page_key(url) in self.held]
        if not urls or keys is None:
            return
        self.held.difference_update(urls)
        redis = self.link.redis
        assert redis is not None
        task = asyncio.ensure_future(self.link.call(lambda: redis.zrem(held_key(keys.budget), *urls)))
        self.releasing.add(task)
        task.add_done_callback(self.releasing.discard)

    async def spider_closed(self) -> None:
        """Pages still holding a place were not finished here: free them (a dead worker's expire with the lease)."""
        if self.held:
            logger.debug("%d pages still held a place in the fleet's budget at close: %s", len(self.held),
                         sorted(self.held)[:20])
        self.release(sorted(self.held))
        if self.releasing:
            await asyncio.gather(*self.releasing)

    # admission -------------------------------------------------------------------------------------------

    async def admit(self, url: str, sha256: str) -> Admitted:
        """The Build's verdict on a page document (not a corpus section), decided fleet-wide when Redis answers."""
        build, keys = self.build, self.link.keys
        key = page_key(url)
        if key in build.admitted or sha256 in build.by_hash or keys is None:
            return Admitted(build.admit(url, sha256))  # known here already (or no fleet): the local rule
        bound = build.max_pages if build.bounded else 0
        found = await self.link.call(lambda: self.link.script(
            ADMIT, [keys.budget, keys.hashes, held_key(keys.budget)], [key, sha256, bound, self.link.ttl]))
        if found is None:
            return Admitted(build.admit(url, sha256))
        verdict, first, spent = decoded(found)
        had_place = key in self.held
        self.held.discard(key)  # the script freed its place
        build.fleet_spent = int(spent)
        if verdict == "same-content":
            self.link.stat("dedup/duplicate")
            logger.debug("%s has the same content as %s, admitted by another worker", key, first)
            build.aliases[key] = first
            build.skip(key, "duplicate", detail=f"same content as {first}")
            return Admitted("same-content", elsewhere=True)
        if verdict == "over-budget":
            self.link.stat("budget/refused")
            logger.debug("%s over the fleet's page budget (%s admitted; it held a place: %s)", key, spent,
                         had_place)
            return Admitted(build.admit(url, sha256))  # the Build sees the fleet's total: over budget, unreached
        self.link.stat("budget/admitted" if verdict == "new" else "dedup/again")
        return Admitted(build.admit(url, sha256, spend=False))


_ADMISSIONS: WeakKeyDictionary[Crawler, FleetAdmission] = WeakKeyDictionary()
