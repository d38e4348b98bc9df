"""Requests made while Redis was away, held in the worker until the shared frontier answers again.

During an outage a callback's new requests can pass neither the shared
dupefilter nor the shared queue. Fetching them here would take pages another
worker may fetch too, and a worker that never sees Redis again would take its
links with it; so they wait (:class:`HeldRequests`), and the pages that made
them stay unacknowledged in Redis meanwhile. When Redis is back,
:meth:`HeldRequests.flush` sends them through the dupefilter (one pipelined
``SADD`` round trip) and into the frontier (one pipelined ``ZADD``), before
those pages are acknowledged.

A request whose dupefilter call failed mid-air (the ``SADD`` may have run, its
reply lost) is pushed without asking the dupefilter again: it would be
filtered as a duplicate of itself. The worst case is a page fetched twice; its
document is still queued once (the dual write's hash check). A ``ZADD`` that
runs twice stores one member.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from skillgraph.compat.scrapy_redis import encode_request

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy_redis.dupefilter import RFPDupeFilter

    from skillgraph.distributed.frontier import Frontier


@dataclass(eq=False)
class Held:
    request: Request
    ask: bool  # ask the dupefilter when flushing (False: asked already, or must not be)
    was_asked: bool = False


@dataclass
class Flushed:
    """What a flush did with the held requests."""

    pushed: int
    seen: list[Request]  # another worker (or an earlier copy) had them: filtered
    local: list[Request]  # cannot be stored as JSON: they stay in this worker


class HeldRequests:
    def __init__(self) -> None:
        self.entries: list[Held] = []

    def __len__(self) -> int:
        return len(self.entries)

    def add(self, request: Request, ask: bool) -> None:
        self.entries.append(Held(request, ask and not request.dont_filter))

    def flush(self, df: RFPDupeFilter, frontier: Frontier) -> Flushed:
        """Dupefilter, then frontier, in two round trips; raises RedisError/OSError with the rest still held."""
        entries, self.entries = self.entries, []
        try:
            seen = set(self._record(df, entries))
            entries = [e for e in entries if e not in seen]
            encoded = {e: self._encoded(frontier, e.request) for e in entries}
            local = [e for e, data in encoded.items() if data is None]
            entries = [e for e in entries if encoded[e] is not None]
            if entries:
                pipe = frontier.server.pipeline(transaction=False)
                for entry in entries:
                    pipe.execute_command("ZADD", frontier.key, -entry.request.priority, encoded[entry])
                pipe.execute()
        except BaseException:
            self.entries = entries + self.entries
            raise
        return Flushed(len(entries), [e.request for e in seen], [e.request for e in local])

    @staticmethod
    def _record(df: RFPDupeFilter, entries: list[Held]) -> list[Held]:
        """``SADD`` every fingerprint; the entries the dupefilter had already seen (and were to be asked)."""
        filtered = [e for e in entries if not e.request.dont_filter]
        if not filtered:
            return []
        pipe = df.server.pipeline(transaction=False)
        for entry in filtered:
            pipe.sadd(df.key, df.request_fingerprint(entry.request))
        try:
            added = pipe.execute()
        finally:
            for entry in filtered:  # recorded now, or maybe (a reply lost): asking again could filter it as itself
                entry.ask, entry.was_asked = False, entry.ask
        return [e for e, new in zip(filtered, added, strict=True) if e.was_asked and not new]

    @staticmethod
    def _encoded(frontier: Frontier, request: Request) -> Any:
        """The request as the frontier stores it; None when JSON cannot hold it (a follow-up only this worker runs)."""
        try:
            return encode_request(frontier, request)
        except (TypeError, ValueError):
            return None
