"""Shared detection: one worker of a distributed crawl probes the site, the others reuse its profile.

Detection is about ten sequential probes (``llms*.txt`` at every scope, the
well-known index, the start URL's ``Link`` header, robots.txt, sitemaps) and,
for a sitemap site, every sitemap file. Probes go through
``engine.download_async``, not the frontier, so the shared dupefilter cannot
spare them: run by every worker they cost more than the extra workers saved
(bench/distributed.py). So the workers of one frontier elect a leader:

* **Election** per frontier: ``SET <frontier>:detect:lock <worker> NX PX <ttl>``
  (``SKILLGRAPH_DISTRIBUTED_DETECT_TIMEOUT``). The winner detects exactly as in
  local mode and emits the strategy's seeds (or, for ``llms-full``, the corpus
  items), refreshing the lock every third of its TTL meanwhile, so a slow site
  keeps its leader and a killed leader is replaced one TTL after its last refresh.
* **Publish after seeding.** The leader stores the public profile
  (``SiteProfile.to_json()`` plus the spider's :meth:`shared_state`) at
  ``<frontier>:profile`` once its seeds are in the frontier, then drops the
  lock. A follower that saw the profile earlier would find the frontier empty
  and close as drained before the seeds arrived.
* **Followers** poll every ``POLL_SECONDS`` (an asyncio sleep: the reactor runs
  on) until the profile appears, then adopt it: the spider's profile (no corpus,
  index or sitemap list: they are the leader's seeds), ``profile_detected`` with
  ``followed=True``, and no seeds of their own: they work from the frontier.
  While the lock is missing and no profile is there (the leader died or its
  detection failed) the first follower to ``SET NX`` takes over.
* The profile expires with the frontier (the last worker out deletes it, like
  the queue) and after ``SKILLGRAPH_DISTRIBUTED_PROFILE_TTL`` seconds, so a
  crawl that crashed does not pin an old profile forever.
* **Redis unreachable:** the worker detects on its own, as every worker did
  before (a warning, ``skillgraph/distributed/detect/redis_error``).
  ``SKILLGRAPH_DISTRIBUTED_SHARED_DETECTION=False`` makes every worker detect
  (bench/distributed.py's baseline).

Uses the asyncio Redis client (``skillgraph.build.state.connect_redis``): the waiting
and the lock refresh never block the reactor.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import uuid
from typing import TYPE_CHECKING, Any

from scrapy import signals

from skillgraph.build.state import connect_redis
from skillgraph.distributed import on_shared_frontier
from skillgraph.distributed.connection import redis_unavailable_at_start
from skillgraph.distributed.keys import FrontierKeys
from skillgraph.signals import profile_detected
from skillgraph.strategy.profiler import Probe, SiteProfile

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from scrapy import Spider
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

STAT = "skillgraph/distributed/detect/"
POLL_SECONDS = 0.2

#: KEYS: lock. ARGV: holder, ttl ms. Extend the lock only while this worker holds it.
REFRESH = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""

#: KEYS: lock. ARGV: holder. Drop the lock only if this worker holds it.
UNLOCK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def shared_detection_enabled(crawler: Crawler) -> bool:
    """On in distributed mode, unless switched off; followers rely on the distributed scheduler's idle wait."""
    return on_shared_frontier(crawler, "SKILLGRAPH_DISTRIBUTED_SHARED_DETECTION")


def profile_from_json(data: dict[str, Any]) -> SiteProfile:
    """A follower's profile: the public fields; corpus, index and page URLs stay the leader's."""
    return SiteProfile(str(data["url"]), str(data["strategy"]), str(data["scope"]), str(data["source"]),
                       str(data["detected_at"]), [Probe(**p) for p in data.get("probes", [])])


class SharedDetection:
    """Decides, for one spider of a distributed crawl, whether it detects (leads) or follows."""

    def __init__(self, crawler: Crawler, spider: Spider, redis: Redis, keys: FrontierKeys,
                 lock_seconds: float, profile_seconds: float) -> None:
        self.crawler = crawler
        self.spider = spider
        self.redis = redis
        self.keys = keys
        self.lock_ms = max(int(lock_seconds * 1000), 100)
        self.profile_seconds = max(int(profile_seconds), 1)
        self.worker = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.leading = False
        self.refresher: asyncio.Task[None] | None = None
        self.warned_unreadable = False
        crawler.signals.connect(self.close, signal=signals.spider_closed)

    @classmethod
    def for_spider(cls, spider: Spider) -> SharedDetection | None:
        """The coordinator of a distributed crawl; None in local mode."""
        from skillgraph.distributed.keys import frontier_name

        crawler = spider.crawler
        if not shared_detection_enabled(crawler) or redis_unavailable_at_start(crawler):  # a local crawl
            return None
        settings = crawler.settings
        return cls(crawler, spider, connect_redis(settings["REDIS_URL"]), FrontierKeys.for_name(frontier_name(spider)),
                   settings.getfloat("SKILLGRAPH_DISTRIBUTED_DETECT_TIMEOUT", 30.0),
                   settings.getfloat("SKILLGRAPH_DISTRIBUTED_PROFILE_TTL", 86400.0))

    def stat(self, event: str) -> None:
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(STAT + event)

    async def follow(self) -> SiteProfile | None:
        """The leader's profile, adopted (follow it); or None: this worker won the lock and detects."""
        from redis.exceptions import RedisError  # here: a local crawl never loads redis-py

        waited = False
        try:
            while True:
                raw = await self.redis.get(self.keys.profile)
                if raw is not None and (profile := await self.adopt(raw)) is not None:
                    return profile
                if await self.redis.set(self.keys.detect_lock, self.worker, nx=True, px=self.lock_ms):
                    self.lead(takeover=waited)
                    return None
                if not waited:
                    waited = True
                    holder = await self.redis.get(self.keys.detect_lock) or b"?"
                    logger.info("Worker %s waits for the detection of %s (lock %s)", self.worker,
                                holder.decode(errors="replace") if isinstance(holder, bytes) else holder,
                                self.keys.detect_lock)
                await asyncio.sleep(POLL_SECONDS)
        except (RedisError, OSError) as exc:
            self.stat("redis_error")
            logger.warning("Shared detection unavailable (%s): worker %s detects on its own", exc, self.worker)
            return None

    def lead(self, takeover: bool) -> None:
        self.leading = True
        self.stat("leader")
        if takeover:
            self.stat("takeover")
            logger.warning("No profile and no detecting worker on %s: worker %s takes over the detection",
                           self.keys.profile, self.worker)
        else:
            logger.info("Worker %s leads the detection of %s", self.worker, self.keys.profile)
        self.refresher = asyncio.ensure_future(self.keep_lock())

    async def keep_lock(self) -> None:
        """Refresh the lock every third of its TTL while detecting and seeding."""
        from redis.exceptions import RedisError  # here: a local crawl never loads redis-py

        refresh = self.redis.register_script(REFRESH)
        while True:
            await asyncio.sleep(self.lock_ms / 3000)
            try:
                if not await refresh(keys=[self.keys.detect_lock], args=[self.worker, self.lock_ms]):
                    logger.warning("Worker %s lost the detection lock %s (took longer than its TTL)", self.worker,
                                   self.keys.detect_lock)
                    return
            except (RedisError, OSError) as exc:
                logger.warning("Could not refresh the detection lock %s: %s", self.keys.detect_lock, exc)

    async def adopt(self, raw: bytes | str) -> SiteProfile | None:
        """Take the leader's profile (None when unreadable: this worker then tries to detect)."""
        try:
            data = json.loads(raw)
            profile = profile_from_json(data)
            adopt = getattr(self.spider, "adopt_shared_state", None)  # a spider's own state (MediaWiki's wiki)
            if adopt is not None:
                adopt(data.get("spider_state") or {})
        except (ValueError, KeyError, TypeError):
            if not self.warned_unreadable:  # until a detecting worker overwrites it
                self.warned_unreadable = True
                self.stat("unreadable")
                logger.warning("Unreadable shared profile %s: not used", self.keys.profile, exc_info=True)
            return None
        self.stat("follower")
        logger.info("Worker %s follows the shared profile of %s: strategy %s from %s (detected %s)", self.worker,
                    profile.url, profile.strategy, profile.source, profile.detected_at)
        await self.crawler.signals.send_catch_log_async(profile_detected, profile=profile, followed=True)
        return profile

    async def publish(self, profile: SiteProfile) -> None:
        """The leader's seeds are in the frontier: share the profile, drop the lock."""
        from redis.exceptions import RedisError  # here: a local crawl never loads redis-py

        if not self.leading:
            return
        own = getattr(self.spider, "shared_state", None)
        data = {**profile.to_json(), "spider_state": own() if own is not None else {}}
        try:
            await self.redis.set(self.keys.profile, json.dumps(data), ex=self.profile_seconds)
            self.stat("published")
            logger.info("Worker %s shared its profile of %s at %s", self.worker, profile.url, self.keys.profile)
        except (RedisError, OSError) as exc:
            self.stat("redis_error")
            logger.warning("Could not share the profile at %s: %s", self.keys.profile, exc)
        await self.unlock()

    async def unlock(self) -> None:
        from redis.exceptions import RedisError  # here: a local crawl never loads redis-py

        if self.refresher is not None:
            self.refresher.cancel()
            self.refresher = None
        if self.leading:
            self.leading = False
            with contextlib.suppress(RedisError, OSError):
                await self.redis.register_script(UNLOCK)(keys=[self.keys.detect_lock], args=[self.worker])

    async def close(self) -> None:
        """Spider closed (detection may have failed or been cut short): free the lock, close the client."""
        await self.unlock()
        await self.redis.aclose()
