"""The store worker loop: claim -> store -> chunk -> embed -> complete, until stopped or drained.

A plain blocking loop in its own process (``scrapy worker``): no reactor, no
crawler — nothing here is a crawl, and several worker processes scale it out.
Decisions are counted in ``stats`` (``skillgraph/worker/<event>``) and logged:

* a document whose url + sha256 is already stored is skipped before chunking
  and embedding (``unchanged``); a changed one replaces its chunks;
* bad JSON or a document without ``url``/``markdown`` can never succeed: it
  goes to ``skillgraph:dead`` at once (``invalid``);
* a document whose processing raises goes back to the queue, and to
  ``skillgraph:dead`` on its ``SKILLGRAPH_WORKER_MAX_ATTEMPTS``-th failure; a
  document claimed more often than that (it keeps killing its workers) is
  dead-lettered without being processed again;
* every worker reaps stale claims (older than ``SKILLGRAPH_WORKER_CLAIM_TIMEOUT``)
  every half timeout, and once more before a ``--burst`` run exits;
* Redis errors never end the loop: the worker backs off (0.5 s doubling up to
  ``SKILLGRAPH_WORKER_BACKOFF_MAX``), logs, and keeps checking for a stop request;
* :meth:`request_stop` (SIGINT/SIGTERM) lets the current document finish;
* **embedder health gate**: when the embedder raises, the document is not at
  fault (seed ledger R6: a batch stored nothing because the embedding engine
  had failed mid-batch). Its claim is released to the head of the queue
  untried (no attempt counted, never dead-lettered), the worker stops
  claiming and probes the embedder with backoff (0.5 s doubling up to
  ``SKILLGRAPH_WORKER_BACKOFF_MAX``), and resumes by itself once a probe
  succeeds. A document that fails again right after a successful probe is the
  document's fault: it takes the ordinary retry / dead-letter path. A
  ``--burst`` or local run stops instead (exit 1), leaving the document queued.

Every wait (Redis backoff, embedder probes) sleeps in short steps and raises
:class:`StopRequestedError` once :meth:`WorkerBase.request_stop` was called.
The shared state and waits (:class:`WorkerBase`) and the documents and loops
(:class:`StoreWorker`) are one module: they are one worker, and as two modules
they imported each other.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from skillgraph.items import sha256_text
from skillgraph.store.chunk import chunk_markdown, plain_text
from skillgraph.store.queue import Claim

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from skillgraph.store.embed import Embedder
    from skillgraph.store.queue import ClaimQueue
    from skillgraph.store.sqlite import SqliteStore

__all__ = ["BLOCK_SECONDS", "PREFIX", "EmbedderDownError", "InvalidDocumentError", "StopRequestedError",
           "StoreWorker", "WorkerConfig", "parse_document"]

logger = logging.getLogger(__name__)
_T = TypeVar("_T")
PREFIX = "skillgraph/worker/"
BLOCK_SECONDS = 1.0  # BLMOVE wait: bounds how long a stop request waits for an idle worker


class InvalidDocumentError(ValueError):
    """A payload that no retry can store (not JSON, no url or markdown)."""


@dataclass
class WorkerConfig:
    chunk_chars: int = 1500
    chunk_overlap: int = 0
    claim_timeout: float = 300.0
    max_attempts: int = 3
    backoff_max: float = 30.0

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> WorkerConfig:
        return cls(chunk_chars=settings.getint("SKILLGRAPH_STORE_CHUNK_CHARS", 1500),
                   chunk_overlap=settings.getint("SKILLGRAPH_STORE_CHUNK_OVERLAP", 0),
                   claim_timeout=settings.getfloat("SKILLGRAPH_WORKER_CLAIM_TIMEOUT", 300.0),
                   max_attempts=max(1, settings.getint("SKILLGRAPH_WORKER_MAX_ATTEMPTS", 3)),
                   backoff_max=settings.getfloat("SKILLGRAPH_WORKER_BACKOFF_MAX", 30.0))


def parse_document(payload: bytes | str) -> dict[str, Any]:
    try:
        doc = json.loads(payload)
    except ValueError as exc:
        raise InvalidDocumentError(f"not JSON: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("url"), str) or not isinstance(doc.get("markdown"), str):
        raise InvalidDocumentError("not a document: needs string url and markdown")
    if not doc.get("sha256"):
        doc["sha256"] = sha256_text(doc["markdown"])
    return doc


class StopRequestedError(Exception):
    """Raised out of a Redis retry loop when the worker is asked to stop."""


class EmbedderDownError(RuntimeError):
    """The embedder raised: the worker, not the document, is failing."""


class WorkerBase:
    """What every part of the worker shares, and the waits that ride out an outage (StoreWorker's base)."""

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


class StoreWorker(WorkerBase):
    """Claims, stores and settles documents; state, Redis backoff and the embedder gate are in :class:`WorkerBase`."""

    # -- one document -------------------------------------------------------------------------------

    def store_document(self, doc: dict[str, Any]) -> str:
        """Chunk, embed and store; ``stored``, ``replaced`` or ``unchanged`` (counted)."""
        if self.store.stored_sha(doc["url"]) == doc["sha256"]:
            outcome = "unchanged"
        else:
            chunks = chunk_markdown(doc["markdown"], doc.get("title") or "", self.config.chunk_chars,
                                    self.config.chunk_overlap)
            texts = [f"{c.heading}\n{plain_text(c.text)}" for c in chunks]
            try:
                vectors = self.embedder.embed(texts) if texts else []
            except Exception as exc:
                raise EmbedderDownError(f"{type(exc).__name__}: {exc}") from exc
            outcome = self.store.put(doc, chunks, vectors)
            if outcome != "unchanged":
                self.inc("chunks", len(chunks))
        self.inc(outcome)
        logger.debug("%s: %s", doc["url"], outcome)
        return outcome

    def handle(self, claim: Claim) -> str:
        """Store a claimed payload and settle its claim (complete, retry or dead-letter)."""
        assert self.queue is not None
        self.inc("claimed")
        if claim.attempts > self.config.max_attempts:
            logger.error("Dead-lettering a document claimed %d times (it keeps stopping its workers): %.200r",
                         claim.attempts, claim.payload)
            self.inc("dead_letter/too_many_claims")
            self._redis(lambda: self.queue.dead_letter(claim))  # type: ignore[union-attr]
            return "dead_letter"
        try:
            doc = parse_document(claim.payload)
            outcome = self.store_document(doc)
        except EmbedderDownError as exc:
            if self.embedder_works():  # it embeds other text: this document is at fault
                return self._failed(claim)
            self.embedder_failed(exc, claim)
            self._redis(lambda: self.queue.release(claim))  # type: ignore[union-attr]
            return "released"
        except InvalidDocumentError as exc:
            logger.error("Dead-lettering an invalid document (%s): %.200r", exc, claim.payload)
            self.inc("invalid")
            self.inc("dead_letter/invalid")
            self._redis(lambda: self.queue.dead_letter(claim))  # type: ignore[union-attr]
            return "dead_letter"
        except Exception:
            return self._failed(claim)
        if not self._redis(lambda: self.queue.complete(claim)):  # type: ignore[union-attr]
            self.inc("completed_after_reap")  # it was reaped while being stored: storing it again is a no-op
        return outcome

    def _failed(self, claim: Claim) -> str:
        """Processing raised: back to the queue, or dead-lettered on the last attempt."""
        self.inc("failed")
        if claim.attempts >= self.config.max_attempts:
            logger.error("Dead-lettering a document after %d failed attempts: %.200r", claim.attempts,
                         claim.payload, exc_info=True)
            self.inc("dead_letter/failed")
            self._redis(lambda: self.queue.dead_letter(claim))  # type: ignore[union-attr]
            return "dead_letter"
        logger.warning("Storing a document failed (attempt %d of %d); back to the queue: %.200r",
                       claim.attempts, self.config.max_attempts, claim.payload, exc_info=True)
        self.inc("retried")
        self._redis(lambda: self.queue.retry(claim))  # type: ignore[union-attr]
        return "retried"

    # -- the loops ----------------------------------------------------------------------------------

    def run(self, burst: bool = False) -> Counter[str]:
        """Process the queue until stopped (or, with ``burst``, until it is empty and nothing is stale)."""
        assert self.queue is not None
        logger.info("Store worker started (%s; claim timeout %ss)", "burst" if burst else "waiting for documents",
                    self.config.claim_timeout)
        try:
            while not self.stopping:
                if self.embedder_down_since is not None:
                    if burst:
                        break
                    self.wait_for_embedder()
                self._reap_when_due()
                claim = self._redis(lambda: self.queue.claim(None if burst else BLOCK_SECONDS))  # type: ignore
                if claim is not None:
                    self.handle(claim)
                elif burst and not self._reap_when_due(force=True):
                    break
        except StopRequestedError:
            pass
        self.log_summary()
        return self.stats

    def run_local(self, paths: Iterable[Path]) -> Counter[str]:
        """Store disk items (``items/<spider>/*.json``) without Redis: local mode."""
        for path in paths:
            if self.stopping:
                break
            try:
                self.store_document(parse_document(path.read_bytes()))
            except EmbedderDownError as exc:
                self.embedder_failed(exc)
                break
            except Exception:
                self.inc("failed")
                logger.error("Could not store %s", path, exc_info=True)
        self.log_summary()
        return self.stats

    def _reap_when_due(self, force: bool = False) -> int:
        assert self.queue is not None
        now = time.monotonic()
        if not force and now < self.next_reap:
            return 0
        self.next_reap = now + max(0.5, self.config.claim_timeout / 2)
        reaped = self._redis(lambda: self.queue.reap(self.config.claim_timeout))  # type: ignore[union-attr]
        if reaped:
            self.inc("reaped", reaped)
            logger.warning("Returned %d stale claim(s) older than %ss to the queue", reaped,
                           self.config.claim_timeout)
        return reaped

    def summary(self) -> dict[str, int]:
        names = ("stored", "replaced", "unchanged", "chunks", "failed", "invalid", "retried", "reaped",
                 "redis_error", "released", "embedder_error")
        dead = sum(v for k, v in self.stats.items() if k.startswith(PREFIX + "dead_letter/"))
        return {**{name: self.stats[PREFIX + name] for name in names}, "dead_letter": dead}

    def log_summary(self) -> None:
        s = self.summary()
        logger.info("Store worker done: %d documents stored (%d new, %d replaced), %d chunks, %d skipped unchanged, "
                    "%d failed, %d dead-lettered, %d stale claims reaped", s["stored"] + s["replaced"], s["stored"],
                    s["replaced"], s["chunks"], s["unchanged"], s["failed"], s["dead_letter"], s["reaped"])
