"""The store worker's footing: its counters, stop request, and how it rides out outages.

:class:`WorkerBase` holds what every part of the worker shares (the store, the
embedder, the queue, the ``skillgraph/worker/<event>`` counters, the stop
flag) and the two ways it waits instead of failing; :class:`~skillgraph.store.worker.StoreWorker`
adds the documents and the loops.

* **Redis**: a connection or timeout error never ends the loop; the call is
  retried with backoff (0.5 s doubling up to ``SKILLGRAPH_WORKER_BACKOFF_MAX``).
* **The embedder health gate**: when the embedder fails, the worker stops
  claiming and probes it with the same backoff until it embeds a short known
  text again (seed ledger R6: a batch stored nothing because the embedding
  engine had failed mid-batch; see the worker's docstring for what happens to
  the document).

Every wait sleeps in short steps and raises :class:`StopRequestedError` once
:meth:`WorkerBase.request_stop` was called.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from skillgraph.store.embed import Embedder
    from skillgraph.store.queue import Claim, ClaimQueue
    from skillgraph.store.sqlite import SqliteStore
    from skillgraph.store.worker import WorkerConfig

logger = logging.getLogger("skillgraph.store.worker")  # one log for the whole worker
_T = TypeVar("_T")
PREFIX = "skillgraph/worker/"


class StopRequestedError(Exception):
    """Raised out of a Redis retry loop when the worker is asked to stop."""


class EmbedderDownError(RuntimeError):
    """The embedder raised: the worker, not the document, is failing."""


class WorkerBase:
    """What every part of the worker shares, and the waits that ride out an outage."""

    def __init__(self, store: SqliteStore, embedder: Embedder, config: WorkerConfig,
                 queue: ClaimQueue | None = None) -> None:
        self.store = store
        self.embedder = embedder
        self.config = config
        self.queue = queue
        self.stats: Counter[str] = Counter()
        self.stopping = False
        self.redis_down_since: float | None = None
        self.next_reap = 0.0
        self.embedder_down_since: float | None = None
        if not store.fts:
            self.stats[PREFIX + "no_fts"] = 1

    def request_stop(self) -> None:
        self.stopping = True

    def inc(self, event: str, count: int = 1) -> None:
        self.stats[PREFIX + event] += count

    # -- the embedder health gate -----------------------------------------------------------------------

    def embedder_failed(self, exc: Exception, claim: Claim | None = None) -> None:
        self.inc("embedder_error")
        if self.embedder_down_since is None:
            self.embedder_down_since = time.monotonic()
            self.inc("embedder_down")
            logger.error("The embedder failed (%s): not claiming until it works again; the document goes "
                         "back to the queue untried", exc, exc_info=True)
        if claim is not None:
            self.inc("released")

    def embedder_works(self) -> bool:
        """One probe: does the embedder embed a short known text? (A failure of one document is not an outage.)"""
        try:
            self.embedder.embed(["embedder health check"])
        except Exception:
            self.inc("embedder_error")
            return False
        return True

    def wait_for_embedder(self) -> None:
        """Probe the embedder with backoff until it embeds again (StopRequestedError when asked to stop)."""
        delay = 0.5
        while self.embedder_down_since is not None:
            self._sleep(delay)
            try:
                self.embedder.embed(["embedder health check"])
            except Exception as exc:
                self.inc("embedder_error")
                logger.info("The embedder still fails (%s); next probe in %.1fs", exc, delay)
                delay = min(delay * 2, self.config.backoff_max)
                continue
            logger.warning("The embedder works again after %.1fs: claiming documents again",
                           time.monotonic() - self.embedder_down_since)
            self.inc("embedder_recovered")
            self.embedder_down_since = None

    # -- Redis, and waiting ---------------------------------------------------------------------------

    def _redis(self, call: Callable[[], _T]) -> _T:
        """``call()``, retried with backoff while Redis is unreachable; StopRequestedError when asked to stop."""
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError

        delay = 0.5
        while True:
            try:
                result = call()
            except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
                self.inc("redis_error")
                if self.redis_down_since is None:
                    self.redis_down_since = time.monotonic()
                    logger.warning("Redis unreachable (%s); retrying with backoff (up to %ss)", exc,
                                   self.config.backoff_max)
                else:
                    logger.info("Redis still unreachable (%s); next try in %.1fs", exc, delay)
                self._sleep(delay)
                delay = min(delay * 2, self.config.backoff_max)
                continue
            if self.redis_down_since is not None:
                logger.info("Redis reachable again after %.1fs", time.monotonic() - self.redis_down_since)
                self.redis_down_since = None
            return result

    def _sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.stopping:
                raise StopRequestedError
            time.sleep(min(0.1, deadline - time.monotonic()))
        if self.stopping:
            raise StopRequestedError
