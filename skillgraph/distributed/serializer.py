"""A JSON serializer for the shared frontier (scrapy-redis ``SCHEDULER_SERIALIZER``).

scrapy-redis pickles requests by default: any process that can write to Redis
could then run code in every worker. JSON carries only data. A request is
stored as ``Request.to_dict()`` — callbacks by name, meta and cb_kwargs as
they are — with ``bytes`` (headers, body) tagged as ``{"__b64__": "..."}``.
Anything else that is not JSON (a scrapy-playwright ``PageMethod`` in a render
request's meta) raises ``TypeError``; the scheduler keeps such a request in the
worker that made it instead of sharing it (``skillgraph/distributed/local_only``).
"""

from __future__ import annotations

import base64
import json
from typing import Any

_BYTES = "__b64__"


def _default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return {_BYTES: base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


def _hook(obj: dict[str, Any]) -> Any:
    if len(obj) == 1 and _BYTES in obj:
        return base64.b64decode(obj[_BYTES])
    return obj


def dumps(obj: dict[str, Any]) -> str:
    """The request dict as compact JSON (header names, bytes in ``Request.to_dict``, as latin-1 text)."""
    headers = obj.get("headers")
    if isinstance(headers, dict):
        obj = {**obj, "headers": {k.decode("latin-1") if isinstance(k, bytes) else k: v for k, v in headers.items()}}
    return json.dumps(obj, default=_default, separators=(",", ":"), ensure_ascii=False)


def loads(data: str | bytes) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(data, object_hook=_hook)
    return result
