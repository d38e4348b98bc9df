"""scrapy-redis internals: how a queue stores a request.

Checked against scrapy-redis 0.9.1 (:data:`skillgraph.compat.CHECKED_VERSIONS`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy_redis.queue import Base

__all__ = ["decode_request", "encode_request"]


def encode_request(queue: Base, request: Request) -> Any:
    """``request`` as ``queue`` stores it: ``scrapy_redis.queue.Base._encode_request`` (private).

    ``request.to_dict(spider=...)`` through the queue's serializer
    (``SCHEDULER_SERIALIZER``): the shared frontier keeps scrapy-redis's
    encoding, so its keys stay readable by scrapy-redis. Raises what the
    serializer raises (TypeError/ValueError for a request JSON cannot hold).
    Checked against scrapy-redis 0.9.1.
    """
    return queue._encode_request(request)


def decode_request(queue: Base, data: Any) -> Request:
    """A request stored by ``queue``: ``scrapy_redis.queue.Base._decode_request`` (private).

    The inverse of :func:`encode_request`; callbacks are looked up on the
    queue's spider. Checked against scrapy-redis 0.9.1.
    """
    request: Request = queue._decode_request(data)
    return request
