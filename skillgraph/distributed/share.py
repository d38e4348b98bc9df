"""BuildShare: a fleet worker's part of the build, kept in Redis until one graph is assembled.

Each worker of a fleet fetches a part of the site, so it commits no graph of its
own: the graph writer hands every page it admits (markdown, title, ``sources.json``
fields) to this share; skips, warnings and a summary (profile, seeds, truncation)
follow. The last worker out, or ``scrapy assemble``, writes the one graph
(:mod:`skillgraph.distributed.assembly`).

Keys (:class:`~skillgraph.distributed.assemblykeys.AssemblyKeys`, ranked
records) under ``<frontier>:build:``: ``pages`` and ``skipped`` (hashes by URL),
``warnings`` (list), ``outside`` (links out of scope, counted only), ``shares``
(hash worker -> summary). Every write renews the build's TTL
(``SKILLGRAPH_FLEET_TTL``). A worker that opens a fresh frontier starts a new
build: the shares of an earlier one nobody assembled are deleted (a warning).

Writes use the asyncio client; a write that fails (Redis lost mid-crawl) stays
pending and is retried with the next one and at close (a warning once,
``skillgraph/assembly/redis_error``).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
import uuid
from typing import TYPE_CHECKING, Any

from scrapy import signals

from skillgraph.distributed import assemblykeys as ranks
from skillgraph.distributed import on_shared_frontier
from skillgraph.distributed.assemblykeys import FRESH, PUT, AssemblyKeys
from skillgraph.distributed.connection import redis_at_start, redis_unavailable_at_start

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from scrapy.crawler import Crawler

    from skillgraph.build import Build

logger = logging.getLogger(__name__)

STAT = "skillgraph/assembly/"
FLUSH_SECONDS = 1.0  # skips and warnings go to Redis at most this often while crawling (and at close)


def assembly_enabled(crawler: Crawler) -> bool:
    """Distributed mode with skillgraph's scheduler and assembly on: the fleet builds one graph."""
    return on_shared_frontier(crawler, "SKILLGRAPH_ASSEMBLY_ENABLED")


class BuildShare:
    """One worker's writes into the fleet's build; create with :meth:`for_crawler` once the spider is open."""

    def __init__(self, crawler: Crawler, keys: AssemblyKeys) -> None:
        self.crawler = crawler
        self.keys = keys
        self.ttl = max(crawler.settings.getint("SKILLGRAPH_FLEET_TTL", 86400), 1)  # one TTL for the build
        self.worker = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.redis: Redis | None = None
        self.pending_pages: dict[str, tuple[int, str]] = {}  # url -> (rank, json), not yet in Redis
        self.sent_skips: dict[str, tuple[int, str]] = {}
        self.sent_outside: set[str] = set()
        self.sent_warnings = 0
        self.kept_from_previous: set[str] = set()  # skips of the live graph this worker never met (the writer's)
        self.last_flush = 0.0
        self.outage_logged = False

    @classmethod
    def for_crawler(cls, crawler: Crawler) -> BuildShare | None:
        """The share of a fleet worker; None in local mode (or with ``SKILLGRAPH_ASSEMBLY_ENABLED`` off)."""
        from skillgraph.distributed.keys import frontier_name

        if crawler.spider is None or not assembly_enabled(crawler):
            return None
        share = cls(crawler, AssemblyKeys.for_frontier(frontier_name(crawler.spider)))
        crawler.signals.connect(share.spider_opened, signal=signals.spider_opened)
        return share

    async def spider_opened(self) -> None:
        """On a fresh frontier (nothing queued, seen or detected), drop the shares of an unassembled earlier build."""
        from redis.exceptions import RedisError  # here: a local crawl never loads redis-py

        if not await self.joined():
            return
        assert self.redis is not None
        frontier = self.keys.frontier(self.crawler.settings)
        try:
            stale = await self.redis.register_script(FRESH)(keys=[
                frontier.requests, frontier.dupefilter, frontier.profile, frontier.detect_lock, *self.keys.share_keys])
        except (RedisError, OSError):
            logger.debug("Could not look for an earlier build's shares", exc_info=True)
            return
        if int(stale) > 0:
            self.crawler.stats.set_value(STAT + "stale_deleted", int(stale))
            logger.warning("Frontier %s starts a new build: an earlier one nobody assembled (%d pages) is deleted; "
                           "run `scrapy assemble GRAPH` before a new crawl to keep such a build", frontier.requests,
                           int(stale))

    async def joined(self) -> bool:
        """True when Redis answered at start (else the crawl is a local one and commits its own graph)."""
        if self.redis is None:
            if await redis_at_start(self.crawler) is not None:
                return False
            self.connect()
        return True

    def connect(self) -> None:
        from skillgraph.build.state import connect_redis

        self.redis = connect_redis(self.crawler.settings["REDIS_URL"])

    def active(self) -> bool:
        """:meth:`joined`, for synchronous callers (Redis was asked when the scheduler opened)."""
        return self.redis is not None or not redis_unavailable_at_start(self.crawler)

    async def add_page(self, record: dict[str, Any]) -> None:
        """Hand a page (``url``, ``sha256``, ``fetched_at``, ``tier``, ``quality``, ``title``, ``markdown``) over.

        Awaited by the graph writer, so the page is in Redis before the
        scheduler acknowledges its request (a worker killed later loses nothing).
        """
        self.queue_page(record)
        await self.flush(build=None)

    def queue_page(self, record: dict[str, Any], carried: bool = False) -> None:
        """Hand a page over with the next write (a page carried over from the live graph)."""
        self.pending_pages[record["url"]] = (ranks.PAGE_CARRIED if carried else ranks.PAGE_FETCHED,
                                             json.dumps(record, ensure_ascii=False))
        self.crawler.stats.inc_value(STAT + ("carried" if carried else "handed_over"))

    async def flush(self, build: Build | None, final: bool = False) -> bool:
        """Send pending pages (and, every :data:`FLUSH_SECONDS` or when ``final``, skips and warnings)."""
        from redis.exceptions import RedisError  # here: a local crawl never loads redis-py

        if self.redis is None:
            self.connect()
        if build is None and time.monotonic() - self.last_flush >= FLUSH_SECONDS:
            from skillgraph.build import Build

            build = Build.of(self.crawler)
        batch, self.pending_pages = self.pending_pages, {}  # pages queued during the write go with the next one
        try:
            await self._put(self.keys.pages, batch)
            batch = {}
            if build is not None:
                self.last_flush = time.monotonic()
                await self._send_build(build, final)
        except (RedisError, OSError) as exc:
            self.pending_pages = {**batch, **self.pending_pages}
            self.crawler.stats.inc_value(STAT + "redis_error")
            if not self.outage_logged:
                self.outage_logged = True
                logger.warning("Could not hand this worker's pages to the fleet build %s (%s): retried with the "
                               "next page and at close", self.keys.prefix, exc)
            return False
        self.outage_logged = False
        return True

    async def _put(self, key: str, entries: dict[str, tuple[int, str]]) -> None:
        assert self.redis is not None
        if not entries:
            return
        args: list[Any] = [self.ttl]
        for field, (rank, value) in entries.items():
            args += [field, rank, value]
        await self.redis.register_script(PUT)(keys=[key], args=args)

    async def _send_build(self, build: Build, final: bool) -> None:
        assert self.redis is not None
        skips: dict[str, tuple[int, str]] = {}
        for entry in build.skipped():
            data = entry.skipped_json()
            alias = build.aliases.get(entry.url)
            rank = ranks.SKIP_FETCHED
            if entry.reason == "duplicate":
                rank = ranks.SKIP_ALIAS if alias else ranks.SKIP_DUPLICATE
                if alias:
                    data["alias"] = alias
            elif entry.url in self.kept_from_previous:
                rank = ranks.SKIP_PREVIOUS
            value = (rank, json.dumps(data, ensure_ascii=False))
            if self.sent_skips.get(entry.url) != value:
                skips[entry.url] = value
        await self._put(self.keys.skipped, skips)
        self.sent_skips.update(skips)
        outside = outside_links(build) - self.sent_outside
        warnings = build.warnings[self.sent_warnings:]
        pipe = self.redis.pipeline(transaction=False)
        if outside:
            pipe.sadd(self.keys.outside, *outside)
            pipe.expire(self.keys.outside, self.ttl)
        if warnings:
            pipe.rpush(self.keys.warnings, *(json.dumps(w, ensure_ascii=False) for w in warnings))
            pipe.expire(self.keys.warnings, self.ttl)
        pipe.hset(self.keys.shares, self.worker, json.dumps(self.summary(build, final), ensure_ascii=False))
        pipe.expire(self.keys.shares, self.ttl)
        await pipe.execute()
        self.sent_outside |= outside
        self.sent_warnings += len(warnings)

    def summary(self, build: Build, final: bool) -> dict[str, Any]:
        from skillgraph.graph.sources import scrape_profile

        seeds = [e.url for e in build.ledger.values() if e.via != "link"] if final else []  # the leader's
        return {"worker": self.worker, "graph": build.name, "profile": scrape_profile(build), "seeds": seeds,
                "sitemap_out_of_scope": build.out_of_scope, "truncated": build.truncation() if final else None,
                "closed": final}

    async def close(self, build: Build) -> bool:
        """The last writes (what changed since the flush before the scheduler left: truncation, carried pages).

        Not when the build was assembled meanwhile (its keys gone: they would be orphans). False: Redis is lost.
        """
        from redis.exceptions import RedisError  # here: a local crawl never loads redis-py

        assert self.redis is not None
        try:
            assembled = bool(self.last_flush) and not self.pending_pages and not await self.redis.exists(
                self.keys.shares)
        except (RedisError, OSError):
            assembled = False
        if assembled:
            logger.info("Build %s was assembled before this worker's last writes: nothing to add", self.keys.prefix)
            return True
        if await self.flush(build, final=True):
            return True
        self.crawler.stats.set_value(STAT + "lost", len(self.pending_pages))
        logger.error("Redis unreachable at close: %d pages of this worker, and its last skips and warnings, are not "
                     "in the fleet's build %s", len(self.pending_pages), self.keys.prefix)
        return False

    async def aclose(self) -> None:
        if self.redis is not None:
            await self.redis.aclose()
            self.redis = None


def outside_links(build: Build) -> set[str]:
    """The links out of scope the build counted."""
    return build.outside_links()
