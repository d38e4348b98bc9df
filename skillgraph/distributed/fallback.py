"""Redis down at start: the distributed scheduler hands every call to Scrapy's own, local scheduler.

scrapy-redis pings Redis in ``from_crawler`` and the crawl dies with a
traceback. :class:`~skillgraph.distributed.scheduler.DistributedScheduler`
instead waits for Redis when it opens
(:func:`skillgraph.distributed.redis_at_start`, asyncio, up to
``SKILLGRAPH_DISTRIBUTED_CONNECT_TIMEOUT``); if it does not answer,
:func:`open_local_scheduler` builds Scrapy's scheduler as a local crawl does
(memory, disk and priority queues from the settings, ``JOBDIR``) with Scrapy's
default dupefilter instead of scrapy-redis's, and the crawl runs as a local one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.core.scheduler import Scheduler as LocalScheduler
from scrapy.settings import default_settings
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.job import job_dir
from scrapy.utils.misc import build_from_crawler, load_object

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler


def local_scheduler(crawler: Crawler) -> LocalScheduler:
    """Scrapy's scheduler as a local crawl builds it, with Scrapy's dupefilter instead of scrapy-redis's."""
    settings = crawler.settings
    return LocalScheduler(
        dupefilter=build_from_crawler(load_object(default_settings.DUPEFILTER_CLASS), crawler),
        jobdir=job_dir(settings),
        dqclass=load_object(settings["SCHEDULER_DISK_QUEUE"]),
        mqclass=load_object(settings["SCHEDULER_MEMORY_QUEUE"]),
        logunser=settings.getbool("SCHEDULER_DEBUG"),
        stats=crawler.stats,
        pqclass=load_object(settings["SCHEDULER_PRIORITY_QUEUE"]),
        crawler=crawler,
    )


async def open_local_scheduler(scheduler: LocalScheduler, spider: Spider) -> None:
    """Open the local scheduler (``open`` may return a Deferred, or None)."""
    if (opened := scheduler.open(spider)) is not None:
        await maybe_deferred_to_future(opened)
