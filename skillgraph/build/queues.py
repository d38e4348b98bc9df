"""Scheduler memory queues that hold each waiting request as bytes (``SCHEDULER_MEMORY_QUEUE``).

A docs crawl learns URLs much faster than it fetches them: on a 20,000-page site
Scrapy's queue holds ~16,500 requests at 3,000 pages, and a 100,000-link index
puts 100,000 in it at once. As live objects (a ``Request``, its headers, meta and
callback references) they cost ~3.4 kB each; pickled the way ``JOBDIR``'s disk
queues store them (``Request.to_dict``) a few hundred bytes, and the frontier's
memory is proportional to its URLs, not to Python's object overhead.

The order is queuelib's (FIFO, or LIFO); a request that cannot be serialised (a
callback that is no spider method, a lambda in meta) is kept as the object
itself, counted in ``skillgraph/frontier/unserializable``, never dropped.
"""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Any, Self

from queuelib import queue
from scrapy.utils.request import request_from_dict

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler


class _CompactMemoryQueue:
    storage: type[queue.FifoMemoryQueue] | type[queue.LifoMemoryQueue] = queue.FifoMemoryQueue

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.queue = self.storage()

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        return cls(crawler)

    def push(self, request: Request) -> None:
        try:
            entry: Any = pickle.dumps(request.to_dict(spider=self.crawler.spider), protocol=pickle.HIGHEST_PROTOCOL)
        except (ValueError, TypeError, AttributeError, pickle.PicklingError):
            entry = request  # kept as it is: a request is never lost for being unserialisable
            if self.crawler.stats is not None:
                self.crawler.stats.inc_value("skillgraph/frontier/unserializable")
        self.queue.push(entry)

    def pop(self) -> Request | None:
        return self._restore(self.queue.pop())

    def peek(self) -> Request | None:
        return self._restore(self.queue.peek())

    def _restore(self, entry: Any) -> Request | None:
        if entry is None or not isinstance(entry, bytes):
            return entry
        return request_from_dict(pickle.loads(entry), spider=self.crawler.spider)

    def close(self) -> None:
        self.queue.close()

    def __len__(self) -> int:
        return len(self.queue)


class CompactFifoMemoryQueue(_CompactMemoryQueue):
    """First in, first out (breadth first with ``DEPTH_PRIORITY``): skillgraph's default."""

    storage = queue.FifoMemoryQueue


class CompactLifoMemoryQueue(_CompactMemoryQueue):
    """Last in, first out: Scrapy's own default order."""

    storage = queue.LifoMemoryQueue
