"""Distributed mode: a scrapy-redis frontier shared by every worker (docs/distributed.md).

:func:`configure` is called by the add-on. It switches the scheduler only when
``REDIS_URL`` is set and ``SKILLGRAPH_DISTRIBUTED_ENABLED`` is true; otherwise
the crawl keeps Scrapy's own scheduler (and JOBDIR resume).

:func:`redis_at_start` is the one look at Redis when a crawl opens, shared by
every component that would use it (the scheduler, the dual write, shared
detection). It waits up to ``SKILLGRAPH_DISTRIBUTED_CONNECT_TIMEOUT`` seconds
(asyncio: the reactor runs on) for Redis to answer. If it does not, the crawl
runs as in local mode — Scrapy's scheduler, documents on disk only — and says
so once: one warning, ``skillgraph/distributed/redis_unavailable``, a
``sources.json`` warning. ``scrapy replay`` queues the documents later.
A refused password or ACL is no outage: it is not waited for, it is said in
one error line (:func:`redis_refused`), and ``scrapy crawl`` stops the crawl
before its first request and exits 1.
scrapy-redis itself pings once in ``from_crawler`` and fails the crawl.
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import TYPE_CHECKING
from urllib.parse import urlsplit
from weakref import WeakKeyDictionary

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

SCHEDULER = "skillgraph.distributed.scheduler.DistributedScheduler"

#: Scrapy and scrapy-redis settings of distributed mode (addon priority: ``-s`` still wins).
SETTINGS: dict[str, object] = {
    "SCHEDULER": SCHEDULER,
    "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
    "SCHEDULER_SERIALIZER": "skillgraph.distributed.serializer",  # JSON, never pickle
    # scrapy-redis's client blocks the reactor: fail fast instead of its 30 s defaults
    "REDIS_PARAMS": {"socket_connect_timeout": 2, "socket_timeout": 5, "retry_on_timeout": False},
}

UNAVAILABLE_STAT = "skillgraph/distributed/redis_unavailable"
REFUSED_STAT = "skillgraph/distributed/redis_refused"  # the password or the ACL refused at start
RETRY_INTERVAL = 0.25  # seconds between connection attempts while waiting at start

_AT_START: WeakKeyDictionary[Crawler, asyncio.Future[str | None]] = WeakKeyDictionary()


def enabled(settings: BaseSettings) -> bool:
    return bool(settings.get("REDIS_URL")) and settings.getbool("SKILLGRAPH_DISTRIBUTED_ENABLED", True)


def on_shared_frontier(crawler: Crawler, switch: str) -> bool:
    """Distributed mode with skillgraph's own scheduler (its frontier is the build) and the ``switch`` setting on.

    The one test behind shared detection, the fleet-wide limits and the fleet's assembly.
    """
    from scrapy.utils.misc import load_object

    from skillgraph.distributed.scheduler import DistributedScheduler

    settings = crawler.settings
    if not enabled(settings) or not settings.getbool(switch, True):
        return False
    scheduler = load_object(settings["SCHEDULER"])
    return isinstance(scheduler, type) and issubclass(scheduler, DistributedScheduler)


def configure(settings: BaseSettings) -> None:
    """Use the shared frontier when distributed mode is on; a no-op otherwise."""
    if not enabled(settings):
        return
    for name, value in SETTINGS.items():
        settings.set(name, value, "addon")


def redis_location(url: str) -> str:
    """``host:port/db`` of a Redis URL, without user or password (for logs)."""
    parts = urlsplit(url)
    if parts.scheme == "unix":
        return parts.path.rpartition("@")[2] or "?"  # an unescaped '/' in a password ends the netloc early
    try:
        port = parts.port or 6379
    except ValueError:  # not a port: more likely the piece of a password with an unescaped '/'
        return "?"
    db = parts.path.strip("/")
    return f"{parts.hostname or '?'}:{port}/{db if db.isdigit() else 0}"


async def wait_for_redis(url: str, timeout: float) -> str | None:
    """Ping Redis until it answers or ``timeout`` seconds have passed: None, or the last error.

    A refused password or ACL is not waited for: the answer is then a
    :class:`~skillgraph.distributed.redis_url.RedisRefused` at once (it will not heal by itself).
    """
    from redis.asyncio import Redis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.exceptions import RedisError

    from skillgraph.distributed.redis_url import RedisRefused, refusal, refusal_sentence

    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(timeout, 0.0)
    while True:
        attempt = max(deadline - loop.time(), 0.5)  # timeout 0: one attempt
        client = Redis.from_url(url, socket_connect_timeout=attempt, socket_timeout=attempt,
                                retry=Retry(NoBackoff(), 0))
        try:
            await asyncio.wait_for(client.ping(), attempt)
            return None
        except (TimeoutError, RedisError, OSError) as exc:
            if refusal(exc):
                return RedisRefused(refusal_sentence(url, exc))
            error = str(exc) or type(exc).__name__
        finally:
            await client.aclose()
        if loop.time() + RETRY_INTERVAL >= deadline:
            return error
        await asyncio.sleep(RETRY_INTERVAL)


async def redis_at_start(crawler: Crawler) -> str | None:
    """Whether this crawl may use Redis: None when it answered at start, else why not.

    Asked once per crawler (the first caller waits, the others share the
    answer). On a failure it warns once, counts the stat, puts the crawl's
    Redis state out of use for the whole run (no per-page retries, no second
    warning) and records the fallback in ``sources.json``.
    """
    found = _AT_START.get(crawler)
    if found is None:
        found = _AT_START[crawler] = asyncio.ensure_future(_look(crawler))
    return await asyncio.shield(found)


def redis_unavailable_at_start(crawler: Crawler) -> bool:
    """True once :func:`redis_at_start` found Redis unreachable (for components set up later)."""
    found = _AT_START.get(crawler)
    return found is not None and found.done() and not found.cancelled() and found.result() is not None


def redis_refused(crawler: Crawler) -> str | None:
    """The one sentence to say when Redis refused this crawl's credentials or ACL at start, else None."""
    from skillgraph.distributed.redis_url import RedisRefused

    found = _AT_START.get(crawler)
    answer = found.result() if found is not None and found.done() and not found.cancelled() else None
    return answer if isinstance(answer, RedisRefused) else None


async def _look(crawler: Crawler) -> str | None:
    settings = crawler.settings
    url = settings.get("REDIS_URL")
    if not url:
        return "REDIS_URL is not set"
    timeout = settings.getfloat("SKILLGRAPH_DISTRIBUTED_CONNECT_TIMEOUT", 5.0)
    error = await wait_for_redis(url, timeout)
    if error is None:
        return None
    from skillgraph.distributed.redis_url import RedisRefused
    from skillgraph.signals import build_warning
    from skillgraph.state import RedisState, get_state

    state = get_state(crawler)
    if isinstance(state, RedisState):  # answers "unknown" for the whole run, without a warning of its own
        state.down_until = math.inf
        state.warned = True
    if isinstance(error, RedisRefused):  # not an outage: the crawl command closes the spider and exits 1
        if crawler.stats is not None:
            crawler.stats.set_value(REFUSED_STAT, 1)
        logger.error("%s", error)
        return error
    if crawler.stats is not None:
        crawler.stats.set_value(UNAVAILABLE_STAT, 1)
    spider = crawler.spider.name if crawler.spider is not None else "SPIDER"
    where = redis_location(url)
    logger.warning("Redis at %s unreachable for %g s (%s): this crawl runs on a local frontier and keeps its "
                   "documents on disk only; run `scrapy replay %s` when Redis is back", where, timeout, error, spider)
    crawler.signals.send_catch_log(
        build_warning, kind="redis-unavailable", url=None,
        message=f"Redis at {where} was unreachable at start: local frontier; documents not queued for the store "
                f"until `scrapy replay {spider}`")
    return error
