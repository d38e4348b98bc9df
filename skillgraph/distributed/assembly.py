"""Assembly: the one graph of a distributed build, written from the workers' shares in Redis.

The last worker out runs it (the graph writer calls :func:`assemble` on a
thread once this worker's scheduler cleared the frontier), and so does
``scrapy assemble GRAPH`` when that worker died before it could. It writes with
the graph writer's own parts, never a second writer: a
:class:`~skillgraph.graph.folder.GraphFolder` staging build (file names,
links between pages, ``llms.txt``, the atomic switch), ``sources_document``
and the shrink guard. So the pages a fleet fetched give the files a local
crawl of the site gives.

* **Committed**: the build keys are deleted; the build is over.
* **Failed** (no pages, the shrink guard): the live graph stays,
  ``graphs/<name>.failed.json`` says why, and the build keys stay until their
  TTL, so ``scrapy assemble`` can run again (``-s SKILLGRAPH_ALLOW_SHRINK=True``).
* **One assembler at a time**: ``<frontier>:build:assembling`` (``SET NX PX``,
  ``SKILLGRAPH_ASSEMBLY_LOCK_TIMEOUT``). Another assembler waits while it is
  held: if the holder finishes, the keys are gone and there is nothing left
  to do; if it dies, the lock expires and the waiting one takes over.

Blocking redis-py and disk writes: this runs on a thread of its own (or in a
command, where no reactor runs).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from redis.exceptions import RedisError

from skillgraph.distributed.fleetbuild import FleetBuild, Merged, merge, page_entry
from skillgraph.graph.folder import GraphFolder
from skillgraph.graph.sources import failure_document, llms_summary, shrink_guard, sources_document

if TYPE_CHECKING:
    from redis import Redis
    from scrapy.crawler import Crawler

    from skillgraph.distributed.assemblykeys import AssemblyKeys
    from skillgraph.distributed.keys import FrontierKeys
    from skillgraph.distributed.share import BuildShare
    from skillgraph.graph.previous import PreviousBuild

logger = logging.getLogger(__name__)

STAT = "skillgraph/assembly/"
CLEARED = "skillgraph/distributed/frontier_cleared"  # set by the scheduler of the last worker out
POLL_SECONDS = 0.2  # between looks at a lock another assembler holds
#: KEYS[1]: the lock. ARGV[1]: its holder. Drops the lock only if it is still the holder's.
UNLOCK = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"


@dataclass
class Assembled:
    """How an assembly ended: ``committed``, ``failed``, ``nothing`` (no build keys) or ``done-elsewhere``."""

    outcome: str
    pages: int = 0
    path: str | None = None
    why: str | None = None
    duplicates: int = 0
    links: int = 0
    waited: bool = False


@dataclass
class Target:
    """Where and how the graph is written (settings of the process that assembles)."""

    graphs_dir: Path
    name: str
    previous: PreviousBuild
    allow_shrink: bool = False
    local_links: bool = True
    reason: str = "finished"  # ``finish_reason`` of a failed.json


def assemble(client: Redis, keys: AssemblyKeys, target: Target, holder: str, lock_seconds: float) -> Assembled:
    """Write the build's graph (holding the assembly lock); delete the build keys once committed."""
    waited = lock(client, keys, holder, lock_seconds)
    try:
        fleet = FleetBuild.read(client, keys)
        if fleet.empty:
            return Assembled("done-elsewhere" if waited else "nothing", waited=waited)
        result = write_graph(merge(fleet), target)
        result.waited = waited
        if result.outcome == "committed":
            deleted = delete_build(client, keys)
            logger.info("Build keys of %s deleted (%d keys)", keys.prefix, deleted)
        return result
    finally:
        client.eval(UNLOCK, 1, keys.lock, holder)


def lock(client: Redis, keys: AssemblyKeys, holder: str, lock_seconds: float) -> bool:
    """Take the assembly lock, waiting while another holds it; True when this had to wait."""
    ms = max(int(lock_seconds * 1000), 1000)
    waited = False
    while not client.set(keys.lock, holder, nx=True, px=ms):
        if not waited:
            waited = True
            other = client.get(keys.lock) or b"?"
            logger.info("Assembly of %s waits for %s, which holds %s", keys.prefix,
                        other.decode(errors="replace") if isinstance(other, bytes) else other, keys.lock)
        time.sleep(POLL_SECONDS)
    return waited


def write_graph(merged: Merged, target: Target) -> Assembled:
    """Write and commit the merged pages with the graph writer's parts; or fail, keeping the live graph."""
    account, name = merged.account, target.name
    previous = target.previous
    folder = GraphFolder(target.graphs_dir, name)
    scope = str(account.scrape_profile["scope"]) if account.scrape_profile else None
    pages, titles = [], {}
    for record in merged.pages:
        url = str(record["url"])
        file_name = folder.claim(url, scope or url)
        folder.write_now(file_name, str(record["markdown"]))
        pages.append(page_entry(record, file_name))
        titles[url] = str(record.get("title") or "")
    why = "no pages were written" if not pages else shrink_guard(previous.pages, pages, target.allow_shrink)
    if why is not None:
        folder.discard(failure_document(name, account, pages, why, target.reason, folder.live.exists()))
        logger.error("Assembly of graph %s failed (%s); the previous graph is kept", name, why)
        return Assembled("failed", len(pages), why=why, duplicates=merged.duplicates)
    old_files = {str(page["file"]): url for url, page in previous.pages.items()}
    links = folder.finish(pages, titles, merged.aliases, old_files, llms_summary(account.scrape_profile),
                          target.local_links)
    folder.commit(sources_document(name, account, pages, previous.pages))
    logger.info("Graph %s assembled: %d pages in %s (%d links between pages point at their files)", name,
                len(pages), folder.live, links)
    return Assembled("committed", len(pages), str(folder.live), duplicates=merged.duplicates, links=links)


def delete_build(client: Redis, keys: AssemblyKeys) -> int:
    """Delete every key of the build (``<frontier>:build:*``); how many there were."""
    names = list(client.scan_iter(match=keys.pattern, count=500))
    for start in range(0, len(names), 500):
        client.delete(*names[start:start + 500])
    return len(names)


def live_workers(client: Redis, frontier: str, timeout: float) -> set[str]:
    """Workers of ``frontier`` whose last heartbeat (Redis's clock) is within ``timeout`` seconds."""
    from skillgraph.distributed.keys import FrontierKeys

    seconds, micros = client.time()
    found = client.zrangebyscore(FrontierKeys.for_name(frontier).workers, seconds + micros / 1e6 - timeout, "+inf")
    return {w.decode() if isinstance(w, bytes) else str(w) for w in found}


def last_out(client: Redis, frontier: FrontierKeys, timeout: float, persist: bool) -> bool:
    """Must this worker assemble, though its scheduler did not clear the frontier?

    Everyone left: the worker that cleared the frontier assembles (with
    ``SCHEDULER_PERSIST`` nobody clears it, so each tries; the lock lets one
    write). Only silent workers left registered (killed a moment ago: one
    counts as alive until its heartbeat is ``timeout`` old, which kept the
    scheduler from clearing): yes, once they are silent that long on a drained
    frontier. A live worker with work, or still there after the wait: no, the
    last of them out assembles.
    """
    name = frontier.workers.removesuffix(":workers")
    deadline = time.monotonic() + timeout + 1.0
    while True:
        registered = {w.decode() if isinstance(w, bytes) else str(w) for w in client.zrange(frontier.workers, 0, -1)}
        if not registered:
            return persist
        if not live_workers(client, name, timeout) & registered:
            return True
        if time.monotonic() > deadline or not drained(client, frontier):
            return False
        time.sleep(POLL_SECONDS)


def drained(client: Redis, frontier: FrontierKeys) -> bool:
    """Nothing queued, nothing in flight in any registered worker."""
    workers = [w.decode() if isinstance(w, bytes) else str(w) for w in client.zrange(frontier.workers, 0, -1)]
    return not client.zcard(frontier.requests) and not any(client.hlen(frontier.inflight_prefix + w) for w in workers)


async def assemble_here(crawler: Crawler, share: BuildShare, target: Target) -> Assembled:
    """A fleet worker has closed: the last one out writes the graph (on a thread); the others leave it to it.

    Last out: this worker's scheduler cleared the frontier, or no other worker will
    (:func:`last_out`: ``SCHEDULER_PERSIST`` keeps the frontier; a worker killed a
    moment ago keeps the scheduler from clearing it).
    """
    import redis

    stats, settings = crawler.stats, crawler.settings
    frontier = share.keys.frontier(settings)
    client = redis.Redis.from_url(settings["REDIS_URL"], socket_connect_timeout=5, socket_timeout=30)
    timeout = settings.getfloat("SKILLGRAPH_DISTRIBUTED_WORKER_TIMEOUT", 30.0)
    lock_seconds = settings.getfloat("SKILLGRAPH_ASSEMBLY_LOCK_TIMEOUT", 120.0)
    persist = settings.getbool("SCHEDULER_PERSIST")

    def run() -> Assembled:
        if not stats.get_value(CLEARED) and not last_out(client, frontier, timeout, persist):
            return Assembled("handed-over")
        return assemble(client, share.keys, target, share.worker, lock_seconds)

    try:
        result = await asyncio.to_thread(run)
    except (RedisError, OSError) as exc:
        stats.inc_value(STAT + "redis_error")
        logger.error("Could not assemble graph %s (%s): the build stays in Redis; run `scrapy assemble %s`",
                     target.name, exc, target.name, exc_info=True)
        result = Assembled("failed", why=f"Redis failed while assembling ({exc}); run scrapy assemble {target.name}")
    finally:
        client.close()
    record(crawler, result, share)
    return result


def record(crawler: Crawler, result: Assembled, share: BuildShare) -> None:
    """Stats and a log line for what became of this worker's share."""
    stats = crawler.stats
    if result.outcome == "handed-over":
        stats.set_value(STAT + "left_to_last", 1)
        logger.info("Worker %s handed its pages to the fleet's build %s; the last worker out assembles the graph",
                    share.worker, share.keys.prefix)
        return
    if result.outcome == "done-elsewhere":
        stats.set_value(STAT + "done_elsewhere", 1)
        logger.info("Build %s was assembled by another process while this worker waited", share.keys.prefix)
        return
    if result.waited:
        stats.set_value(STAT + "waited", 1)
    stats.set_value(STAT + ("committed" if result.outcome == "committed" else "failed"), 1)
    stats.set_value(STAT + "pages", result.pages)
    if result.duplicates:
        stats.set_value(STAT + "duplicates", result.duplicates)
