"""Distributed mode: a scrapy-redis frontier shared by every worker (docs/distributed.md).

:func:`configure` is called by the add-on. It switches the scheduler only when
``REDIS_URL`` is set and ``SKILLGRAPH_DISTRIBUTED_ENABLED`` is true; otherwise
the crawl keeps Scrapy's own scheduler (and JOBDIR resume).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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


def enabled(settings: BaseSettings) -> bool:
    return bool(settings.get("REDIS_URL")) and settings.getbool("SKILLGRAPH_DISTRIBUTED_ENABLED", True)


def configure(settings: BaseSettings) -> None:
    """Use the shared frontier when distributed mode is on; a no-op otherwise."""
    if not enabled(settings):
        return
    for name, value in SETTINGS.items():
        settings.set(name, value, "addon")
