"""The state backends: SQLite (local) and Redis (real redis-server), incl. an outage."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from scrapy import Spider
from scrapy.utils.test import get_crawler

from skillgraph.build.state import (
    HASH_PREFIX,
    SCRAPED_PREFIX,
    RedisState,
    SqliteState,
    StateUnavailableError,
    get_state,
)
from skillgraph.strategy.profiler import utc_now
from tests.redis_server import RedisServer, redis_server  # noqa: F401 - fixture

URL = "http://127.0.0.1:1/docs/a.html"


def test_sqlite_round_trip_survives_reopen(tmp_path: Path) -> None:
    async def scenario() -> None:
        state = SqliteState(tmp_path / "s" / "state.sqlite3")
        assert await state.content_hash(URL) is None
        assert await state.scraped_at(URL) is None
        assert await state.validators(URL) == (None, None)
        await state.set_content_hash(URL, "ab" * 32)
        await state.set_scraped(URL, "2026-11-29T12:00:00Z")
        await state.set_validators({URL: ('"v1"', "Sun, 29 Nov 2026 12:00:00 GMT")})
        await state.close()
        again = SqliteState(tmp_path / "s" / "state.sqlite3")
        assert await again.content_hash(URL) == "ab" * 32
        scraped = await again.scraped_at(URL)
        assert scraped is not None and scraped.isoformat() == "2026-11-29T12:00:00+00:00"
        assert await again.validators(URL) == ('"v1"', "Sun, 29 Nov 2026 12:00:00 GMT")
        await again.close()

    asyncio.run(scenario())


def test_sqlite_writes_are_read_back_at_once_and_written_together(tmp_path: Path) -> None:
    """A page's writes cost no thread round trip: buffered, read back from the buffer, flushed in one transaction."""
    from skillgraph.build.state import FLUSH_ROWS

    path = tmp_path / "state.sqlite3"

    def stored(table: str) -> int:
        import sqlite3

        with sqlite3.connect(path) as db:
            return int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])

    async def scenario() -> None:
        state = SqliteState(path)
        await state.set_validators({})  # the database exists
        urls = [f"http://127.0.0.1:1/docs/{n}.html" for n in range(FLUSH_ROWS + 10)]
        for n, url in enumerate(urls[:10]):
            await state.set_content_hash(url, f"{n:064x}")
        assert await state.content_hash(urls[3]) == f"{3:064x}", "read back before any flush"
        assert stored("content_hash") == 0, "nothing written row by row"
        for n, url in enumerate(urls[10:], 10):
            await state.set_content_hash(url, f"{n:064x}")
        await asyncio.sleep(0.2)  # the buffer filled: one transaction on the state's thread
        assert stored("content_hash") >= FLUSH_ROWS
        await state.set_scraped(urls[0], "2026-11-29T12:00:00Z")
        await state.set_content_hash(urls[0], "ff" * 32)  # a later value wins over the flushed one
        await state.close()
        assert stored("content_hash") == len(urls) and stored("scraped") == 1
        again = SqliteState(path)
        assert await again.content_hash(urls[0]) == "ff" * 32
        assert await again.content_hash(urls[-1]) == f"{len(urls) - 1:064x}"
        await again.close()

    asyncio.run(scenario())


def test_sqlite_point_reads_need_no_thread_round_trip_once_the_database_exists(tmp_path: Path) -> None:
    """Reads go through a read-only connection on the calling thread; the state thread only when that cannot read."""
    import sqlite3

    async def scenario() -> None:
        state = SqliteState(tmp_path / "state.sqlite3")
        hops: list[str] = []
        run = state._run

        async def counted(fn, *args):  # type: ignore[no-untyped-def]
            hops.append(fn.__name__)
            return await run(fn, *args)

        state._run = counted  # type: ignore[method-assign]
        assert await state.content_hash(URL) is None  # no database yet: the state thread makes it
        assert hops == ["_get_row"]
        await state.set_content_hash(URL, "ab" * 32)
        await state.set_scraped(URL, "2026-11-29T12:00:00Z")
        await state.set_validators({URL: ('"v1"', None)})
        await state.flush()
        hops.clear()
        assert await state.content_hash(URL) == "ab" * 32  # flushed: read from the database, on this thread
        scraped = await state.scraped_at(URL)
        assert scraped is not None and scraped.isoformat() == "2026-11-29T12:00:00+00:00"
        assert await state.validators(URL) == ('"v1"', None)
        assert await state.content_hash(URL + "?other") is None
        assert await state.validators(URL + "?other") == (None, None)
        assert hops == [], "no read went to the state thread"
        assert state._reader is not None
        state._reader.close()  # a read this thread cannot make goes to the state thread, with the same answer
        assert await state.content_hash(URL) == "ab" * 32
        assert hops == ["_get_row"]
        assert await state.content_hash(URL) == "ab" * 32  # and the next one opens the read-only connection again
        assert hops == ["_get_row"]
        with pytest.raises(sqlite3.OperationalError):  # read-only: nothing is written through it
            sqlite3.connect(f"{(tmp_path / 'state.sqlite3').as_uri()}?mode=ro", uri=True).execute(
                "DELETE FROM content_hash")
        await state.close()
        assert state._reader is None

    asyncio.run(scenario())


def test_redis_uses_design_keys_and_survives_an_outage(tmp_path: Path, redis_server: RedisServer) -> None:  # noqa: F811
    crawler = get_crawler(Spider, {"REDIS_URL": redis_server.url, "SKILLGRAPH_STATE_PATH": str(tmp_path / "v.db"),
                                   "SKILLGRAPH_REDIS_RETRY_SECONDS": 0.2})
    state = get_state(crawler)
    assert isinstance(state, RedisState)
    assert get_state(crawler) is state, "one state per crawler"
    now = utc_now()

    async def scenario() -> None:
        await state.set_content_hash(URL, "cd" * 32)
        await state.set_scraped(URL, now)
        assert await state.content_hash(URL) == "cd" * 32
        redis_server.stop()
        with pytest.raises(StateUnavailableError):
            await state.content_hash(URL)
        with pytest.raises(StateUnavailableError):
            await state.scraped_at(URL)  # marked down: not even tried
        redis_server.start()
        await asyncio.sleep(0.3)  # past SKILLGRAPH_REDIS_RETRY_SECONDS
        assert await state.content_hash(URL) == "cd" * 32, "data saved across the restart, client reconnects"
        await state.close()

    asyncio.run(scenario())
    client = redis_server.client()
    assert client.get(HASH_PREFIX + URL) == b"cd" * 32
    assert client.get(SCRAPED_PREFIX + URL) == now.encode()
    assert crawler.stats.get_value("skillgraph/state/redis_error") == 1, "counted once: then left alone a while"
