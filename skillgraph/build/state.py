"""Crawl state that outlives a run: content hashes, scrape times, HTTP validators.

Scrapy's HttpCache stores whole responses and its dupefilter only fingerprints
requests; dedup across runs needs a small key-value state instead, shared by
the recency and conditional middlewares and the dedup and dual-write
pipelines. Two backends:

* ``SqliteState`` (local mode): stdlib ``sqlite3`` in ``SKILLGRAPH_STATE_PATH``,
  WAL journal, one indexed row per URL. A WAL checkpoint fsyncs (``bench/pipelines.py``
  measured stalls of hundreds of ms on a loaded machine), so the database is used from
  one worker thread, off the reactor. Writes (a page's content hash, its scrape time)
  are buffered and written together, one transaction per :data:`FLUSH_ROWS` rows or
  :data:`FLUSH_SECONDS` seconds and at close: a page's two writes cost the reactor no
  thread round trip. Reads see the buffer first, so a write is read back at once; a
  crash loses at most the last second's writes, which only makes the next run fetch
  or store those pages again. Point reads (a page's content hash, scrape time,
  validators) are answered on the calling thread through a second, read-only
  connection once that thread has made the database: a WAL reader neither takes
  the write lock nor checkpoints (no fsync), and with no busy timeout it never
  waits; a read it cannot make at once goes to the thread as before. A page's
  read cost the reactor a thread round trip (45 us of its CPU, and the state
  thread's) for a 5 us lookup.
* ``RedisState`` (``REDIS_URL`` set): the DESIGN.md keys
  ``skillgraph:content_hash:<url>`` and ``skillgraph:scraped:<url>`` through
  ``redis.asyncio`` (never blocking the reactor). When Redis is unreachable a
  call answers "unknown" (the page is fetched and written, not skipped), a
  warning is logged once and ``skillgraph/state/redis_error`` counted; Redis
  is then left alone for ``SKILLGRAPH_REDIS_RETRY_SECONDS``.

HTTP validators (ETag, Last-Modified) stay in SQLite in both modes: they only
mean something next to the local live graph whose files a 304 carries over.
One state per crawler (:func:`get_state`), closed on ``engine_stopped``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from weakref import WeakKeyDictionary

from scrapy import signals

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

QUEUE_KEY = "skillgraph:queue"
PROCESSING_KEY = "skillgraph:processing"
HASH_PREFIX = "skillgraph:content_hash:"
SCRAPED_PREFIX = "skillgraph:scraped:"
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS content_hash (url TEXT PRIMARY KEY, sha256 TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS scraped (url TEXT PRIMARY KEY, at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS validators (url TEXT PRIMARY KEY, etag TEXT, last_modified TEXT);
"""


def parse_time(value: str | bytes | None) -> datetime | None:
    if value is None:
        return None
    text = value.decode() if isinstance(value, bytes) else value
    try:
        return datetime.strptime(text, TIME_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return None


class StateUnavailableError(Exception):
    """The state backend cannot be reached; callers treat the answer as unknown."""


#: :meth:`SqliteState._read_now`'s answer when the read goes to the state thread (a row is a tuple or None).
_LATER: Any = object()

#: Buffered writes are flushed at this many rows, or this many seconds after the first one, and at close.
FLUSH_ROWS = 256
FLUSH_SECONDS = 1.0


class SqliteState:
    """The embedded store: one small table per kind of state, used from one worker thread."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None  # read-only, for point reads on the calling thread
        self._executor: ThreadPoolExecutor | None = None
        self._buffer: dict[str, dict[str, str]] = {"content_hash": {}, "scraped": {}}  # table -> url -> value
        self._buffered = 0
        self._flush_timer: asyncio.TimerHandle | None = None
        self._flushing: asyncio.Future[None] | None = None

    @property
    def db(self) -> sqlite3.Connection:
        """Opened on first use: a crawl that never needs state (``scrapy detect``) leaves no file."""
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
            self._db = db  # only now: the read-only connection opens a database with its tables
        return self._db

    def _read_now(self, sql: str, url: str) -> tuple[Any, ...] | None:
        """The row of a point read on this thread, read-only; :data:`_LATER` when the state thread must make it.

        Not before the state thread made the database (its file, WAL mode and tables); a busy database
        (no timeout: a WAL reader waits for nothing, and never checkpoints) or any error goes to the thread.
        """
        if self._reader is None:
            if self._db is None:
                return _LATER
            try:
                self._reader = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, timeout=0,
                                               isolation_level=None, check_same_thread=False)
            except sqlite3.Error:
                return _LATER
        try:  # fetchall: the statement runs to its end, so no read transaction stays open (it would hold checkpoints)
            rows = self._reader.execute(sql, (url,)).fetchall()
        except sqlite3.Error:  # busy, or the connection is unusable: this read on the thread, the next one afresh
            with contextlib.suppress(sqlite3.Error):
                self._reader.close()
            self._reader = None
            return _LATER
        return tuple(rows[0]) if rows else None

    async def _read(self, sql: str, url: str) -> tuple[Any, ...] | None:
        """A point read: on this thread when it can be made at once (:meth:`_read_now`), else on the state thread."""
        row = self._read_now(sql, url)
        if row is _LATER:
            row = await self._run(self._get_row, sql, url)
        return row

    async def _run(self, fn: Callable[..., _T], *args: Any) -> _T:
        """Run ``fn`` on the state's one worker thread (a checkpoint fsync must not stall the reactor)."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="skillgraph-state")
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    def _get_row(self, sql: str, url: str) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self.db.execute(sql, (url,)).fetchone()
        return row

    def _put(self, sql: str, *params: str | None) -> None:
        self.db.execute(sql, params)

    async def content_hash(self, url: str) -> str | None:
        buffered = self._buffer["content_hash"].get(url)
        if buffered is not None:
            return buffered
        row = await self._read("SELECT sha256 FROM content_hash WHERE url = ?", url)
        return row[0] if row else None

    async def set_content_hash(self, url: str, sha256: str) -> None:
        self._write("content_hash", url, sha256)

    async def scraped_at(self, url: str) -> datetime | None:
        buffered = self._buffer["scraped"].get(url)
        if buffered is not None:
            return parse_time(buffered)
        row = await self._read("SELECT at FROM scraped WHERE url = ?", url)
        return parse_time(row[0] if row else None)

    async def set_scraped(self, url: str, at: str) -> None:
        self._write("scraped", url, at)

    def _write(self, table: str, url: str, value: str) -> None:
        """Buffer a row; flushed when the buffer is full or a second after its first row."""
        self._buffer[table][url] = value
        self._buffered += 1
        if self._buffered >= FLUSH_ROWS:
            self._start_flush()
        elif self._flush_timer is None:
            self._flush_timer = asyncio.get_running_loop().call_later(FLUSH_SECONDS, self._start_flush)

    def _start_flush(self) -> None:
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        if not self._buffered:
            return
        rows = {table: list(values.items()) for table, values in self._buffer.items() if values}
        previous = self._flushing
        flushing = asyncio.ensure_future(self._flush(rows, previous))
        self._flushing = flushing
        self._buffered = 0

        def forget(done: asyncio.Future[None]) -> None:  # a flushed row is read from the database now
            if not done.cancelled() and done.exception() is None:
                for table, pairs in rows.items():
                    buffer = self._buffer[table]
                    for url, value in pairs:
                        if buffer.get(url) == value:
                            del buffer[url]

        flushing.add_done_callback(forget)

    async def _flush(self, rows: dict[str, list[tuple[str, str]]], previous: asyncio.Future[None] | None) -> None:
        if previous is not None:  # flushes land in order: a later value is never overwritten by an earlier one
            with contextlib.suppress(Exception):
                await previous
        await self._run(self._put_rows, rows)

    def _put_rows(self, rows: dict[str, list[tuple[str, str]]]) -> None:
        with self.db:
            self.db.execute("BEGIN")
            for table, pairs in rows.items():
                self.db.executemany(f"INSERT OR REPLACE INTO {table} VALUES (?, ?)", pairs)

    async def flush(self) -> None:
        """Write every buffered row now."""
        self._start_flush()
        if self._flushing is not None:
            await self._flushing

    async def validators(self, url: str) -> tuple[str | None, str | None]:
        row = await self._read("SELECT etag, last_modified FROM validators WHERE url = ?", url)
        return (row[0], row[1]) if row else (None, None)

    def _set_validators(self, items: dict[str, tuple[str | None, str | None]]) -> None:
        with self.db:
            self.db.execute("BEGIN")
            self.db.executemany("INSERT OR REPLACE INTO validators VALUES (?, ?, ?)",
                                [(url, etag, lm) for url, (etag, lm) in items.items()])

    async def set_validators(self, items: dict[str, tuple[str | None, str | None]]) -> None:
        await self._run(self._set_validators, items)

    def _close(self) -> None:
        if self._reader is not None:  # first: a read-only connection never checkpoints, the writer's close does
            self._reader.close()
            self._reader = None
        if self._db is not None:
            self._db.close()
            self._db = None

    async def close(self) -> None:
        await self.flush()
        if self._executor is not None:
            await self._run(self._close)
            self._executor.shutdown(wait=False)
            self._executor = None
        self._close()


class RedisState(SqliteState):
    """Content hashes and scrape times in Redis; validators in the local SQLite file."""

    def __init__(self, path: str | Path, redis_url: str, crawler: Crawler | None = None,
                 retry_seconds: float = 5.0) -> None:
        super().__init__(path)
        self.redis = connect_redis(redis_url)
        self.crawler = crawler
        self.retry_seconds = retry_seconds
        self.down_until = 0.0
        self.warned = False

    def available(self) -> bool:
        return time.monotonic() >= self.down_until

    def failed(self, exc: BaseException) -> StateUnavailableError:
        """Note an outage (warning once, stat always) and leave Redis alone for a while."""
        self.down_until = time.monotonic() + self.retry_seconds
        if self.crawler is not None and self.crawler.stats is not None:
            self.crawler.stats.inc_value("skillgraph/state/redis_error")
        if not self.warned:
            self.warned = True
            logger.warning("Redis unreachable (%s); going on without it", exc)
        return StateUnavailableError(str(exc))

    def recovered(self) -> None:
        self.warned = False

    async def _call(self, method: str, *args: Any) -> Any:
        from redis.exceptions import RedisError

        if not self.available():
            raise StateUnavailableError("redis marked down")
        try:
            result = await getattr(self.redis, method)(*args)
        except (RedisError, OSError) as exc:
            raise self.failed(exc) from exc
        self.recovered()
        return result

    async def content_hash(self, url: str) -> str | None:
        value = await self._call("get", HASH_PREFIX + url)
        return value.decode() if value is not None else None

    async def set_content_hash(self, url: str, sha256: str) -> None:
        await self._call("set", HASH_PREFIX + url, sha256)

    async def scraped_at(self, url: str) -> datetime | None:
        return parse_time(await self._call("get", SCRAPED_PREFIX + url))

    async def set_scraped(self, url: str, at: str) -> None:
        await self._call("set", SCRAPED_PREFIX + url, at)

    async def close(self) -> None:
        await self.redis.aclose()
        await super().close()


def connect_redis(url: str) -> Redis:
    """An asyncio client that fails fast: no retry loop, short timeouts.

    Maintenance notifications off: with them on (redis-py 8's "auto" under RESP3) the pool
    skips its check of a pooled connection before use, so after a Redis restart every
    pooled connection failed once ("Connection closed by server"); without a retry, each
    failure was an outage of its own (tests/test_redis_outage.py). Redis OSS sends none.
    """
    from redis.asyncio import Redis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.maint_notifications import MaintNotificationsConfig

    return Redis.from_url(url, socket_connect_timeout=2, socket_timeout=5, retry=Retry(NoBackoff(), 0),
                          maint_notifications_config=MaintNotificationsConfig(enabled=False))


_STATES: WeakKeyDictionary[Crawler, SqliteState] = WeakKeyDictionary()


def get_state(crawler: Crawler) -> SqliteState:
    """The crawler's one state backend (created on first use, closed when the engine stops)."""
    state = _STATES.get(crawler)
    if state is None:
        settings = crawler.settings
        path = settings.get("SKILLGRAPH_STATE_PATH") or ".scrapy/skillgraph/state.sqlite3"
        redis_url = settings.get("REDIS_URL")
        if redis_url:
            state = RedisState(path, redis_url, crawler, settings.getfloat("SKILLGRAPH_REDIS_RETRY_SECONDS", 5.0))
        else:
            state = SqliteState(path)
        _STATES[crawler] = state

        async def close() -> None:
            _STATES.pop(crawler, None)
            await state.close()

        crawler.signals.connect(close, signal=signals.engine_stopped, weak=False)
    return state
