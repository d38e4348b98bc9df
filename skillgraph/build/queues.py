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

``Request.to_dict`` finds a callback's name with ``inspect.getmembers`` of the
whole spider, twice a request (callback and errback): a tenth of a millisecond
a page. :func:`request_dict` gives the same dict with the names remembered per
function, checked against the spider each time, and asks ``to_dict`` for any
it has not met.
"""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Any, Self

from queuelib import queue
from scrapy import Request
from scrapy.utils.request import request_from_dict

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Spider
    from scrapy.crawler import Crawler

_UNKNOWN = object()


def request_dict(request: Request, spider: Spider | None, names: dict[Any, str]) -> dict[str, Any]:
    """``request.to_dict(spider=spider)``, callback and errback named from ``names`` (function -> name), which
    learns the names ``to_dict`` finds."""
    callback, errback = _known_name(request.callback, spider, names), _known_name(request.errback, spider, names)
    if callback is _UNKNOWN or errback is _UNKNOWN:
        data = request.to_dict(spider=spider)  # raises as to_dict does for what is no spider method
        for method, key in ((request.callback, "callback"), (request.errback, "errback")):
            if callable(method) and hasattr(method, "__func__"):
                names[method.__func__] = data[key]
        return data
    data = {"url": request.url, "callback": callback, "errback": errback, "headers": dict(request.headers)}
    for attr in request.attributes:
        data.setdefault(attr, getattr(request, attr))
    if type(request) is not Request:
        data["_class"] = request.__module__ + "." + request.__class__.__name__
    return data


def _known_name(method: Callable[..., Any] | str | None, spider: Spider | None, names: dict[Any, str]) -> Any:
    """The spider attribute naming ``method`` if remembered and still true, the value itself if it is no
    callable (as ``to_dict``), else ``_UNKNOWN``."""
    if not callable(method):
        return method
    function = getattr(method, "__func__", None)
    name = names.get(function) if function is not None else None
    if name is None or getattr(getattr(spider, name, None), "__func__", None) is not function:
        return _UNKNOWN
    return name


class _CompactMemoryQueue:
    storage: type[queue.FifoMemoryQueue] | type[queue.LifoMemoryQueue] = queue.FifoMemoryQueue

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.queue = self.storage()
        self.names: dict[Any, str] = {}  # callback function -> its spider attribute (request_dict)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        return cls(crawler)

    def push(self, request: Request) -> None:
        try:
            data = request_dict(request, self.crawler.spider, self.names)
            entry: Any = pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
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
