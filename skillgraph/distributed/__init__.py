"""Distributed mode: a scrapy-redis frontier shared by every worker (docs/distributed.md).

Owns the shared frontier and scheduler, the fleet's build in Redis (budget, dedup, politeness, assembly of
one graph from every worker's pages), and the Redis connection at start (:mod:`.connection`).

:func:`configure` is called by the add-on. It switches the scheduler only when
``REDIS_URL`` is set and ``SKILLGRAPH_DISTRIBUTED_ENABLED`` is true; otherwise
the crawl keeps Scrapy's own scheduler (and JOBDIR resume). The one look at
Redis when a crawl opens, and what an outage or a refusal at start means, are
:mod:`skillgraph.distributed.connection`'s (re-exported here).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skillgraph.distributed.connection import (
    REFUSED_STAT,
    RETRY_INTERVAL,
    UNAVAILABLE_STAT,
    redis_at_start,
    redis_location,
    redis_refused,
    redis_unavailable_at_start,
    wait_for_redis,
)

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

__all__ = ["REFUSED_STAT", "RETRY_INTERVAL", "SCHEDULER", "SETTINGS", "UNAVAILABLE_STAT", "configure", "enabled",
           "on_shared_frontier", "redis_at_start", "redis_location", "redis_refused", "redis_unavailable_at_start",
           "wait_for_redis"]

SCHEDULER = "skillgraph.distributed.scheduler.DistributedScheduler"

#: Scrapy and scrapy-redis settings of distributed mode (addon priority: ``-s`` still wins).
SETTINGS: dict[str, object] = {
    "SCHEDULER": SCHEDULER,
    "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
    "SCHEDULER_SERIALIZER": "skillgraph.distributed.serializer",  # JSON, never pickle
    # scrapy-redis's client blocks the reactor: fail fast instead of its 30 s defaults
    "REDIS_PARAMS": {"socket_connect_timeout": 2, "socket_timeout": 5, "retry_on_timeout": False},
}


def enabled(settings: BaseSettings) -> bool:
    return bool(settings.get("REDIS_URL")) and settings.getbool("SKILLGRAPH_DISTRIBUTED_ENABLED", True)


def on_shared_frontier(crawler: Crawler, switch: str) -> bool:
    """Distributed mode with skillgraph's own scheduler (its frontier is the build) and the ``switch`` setting on.

    The one test behind shared detection, the fleet-wide limits and the fleet's assembly.
    """
    from scrapy.utils.misc import load_object

    settings = crawler.settings
    if not enabled(settings) or not settings.getbool(switch, True):
        return False
    # skillgraph's scheduler (or a subclass) says so: this package's modules then need not import the scheduler
    return bool(getattr(load_object(settings["SCHEDULER"]), "shares_build_frontier", False))


def configure(settings: BaseSettings) -> None:
    """Use the shared frontier when distributed mode is on; a no-op otherwise."""
    if not enabled(settings):
        return
    for name, value in SETTINGS.items():
        settings.set(name, value, "addon")
