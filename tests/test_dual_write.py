"""Content dedup + dual write against a real redis-server: disk first, queue once, pending on outage."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest
from scrapy import Spider
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from skillgraph.extract import extract_html
from skillgraph.items import DocumentItem, sha256_text
from skillgraph.pipelines.dedup import ContentDedupPipeline, OrderedExit
from skillgraph.pipelines.dual_write import DualWritePipeline
from tests.conftest import SITES
from tests.redis_server import RedisServer, redis_server  # noqa: F401 - fixture


def document(markdown: str, url: str = "http://127.0.0.1:1/docs/a.html") -> DocumentItem:
    return DocumentItem(url=url, title="A", markdown=markdown, fetched_at="2026-11-29T12:00:00Z",
                        source=url, domain="127.0.0.1", strategy="crawl", tier="html")


def pipelines(tmp_path: Path, redis_url: str) -> tuple[ContentDedupPipeline, DualWritePipeline]:
    crawler = get_crawler(Spider, {"REDIS_URL": redis_url, "SKILLGRAPH_ITEMS_DIR": str(tmp_path / "items"),
                                   "SKILLGRAPH_STATE_PATH": str(tmp_path / "state.sqlite3"),
                                   "SKILLGRAPH_REDIS_RETRY_SECONDS": 0})
    crawler.spider = Spider(name="unit")
    dedup = build_from_crawler(ContentDedupPipeline, crawler)
    write = build_from_crawler(DualWritePipeline, crawler)
    write.open_spider()
    return dedup, write


async def through(dedup: ContentDedupPipeline, write: DualWritePipeline, item: DocumentItem) -> DocumentItem:
    return await write.process_item(await dedup.process_item(item))  # type: ignore[no-any-return]


def test_hash_is_of_the_extracted_markdown_not_the_raw_body() -> None:
    page = (SITES / "recrawl_site" / "docs" / "c.html").read_text()
    again = page.replace("TOKEN-0001", "TOKEN-0002")
    assert page != again
    url = "http://127.0.0.1:1/docs/c.html"
    first, second = extract_html(page, url).markdown, extract_html(again, url).markdown
    assert "TOKEN" not in first and sha256_text(first) == sha256_text(second)


def test_disk_first_then_queue_once_then_pending_on_outage(tmp_path: Path, redis_server: RedisServer,  # noqa: F811
                                                           caplog: pytest.LogCaptureFixture) -> None:
    dedup, write = pipelines(tmp_path, redis_server.url)
    stats = write.crawler.stats
    client = redis_server.client()
    items = tmp_path / "items" / "unit"

    async def scenario() -> None:
        first = await through(dedup, write, document("# A\n\nversion one\n"))
        assert not first.meta.get("unchanged")
        again = await through(dedup, write, document("# A\n\nversion one\n"))
        assert again.meta["unchanged"] is True, "same URL, same content: marked, not dropped"
        redis_server.stop()
        with caplog.at_level(logging.WARNING):
            await through(dedup, write, document("# A\n\nversion two\n"))
            await through(dedup, write, document("# B\n\nother\n", url="http://127.0.0.1:1/docs/b.html"))

    asyncio.run(scenario())
    one, two = sha256_text("# A\n\nversion one\n"), sha256_text("# A\n\nversion two\n")
    assert json.loads((items / f"{one}.json").read_text())["markdown"] == "# A\n\nversion one\n"
    assert set(json.loads((items / f"{one}.json").read_text())) == {
        "url", "title", "markdown", "sha256", "fetched_at", "source", "domain", "strategy", "tier", "quality"}
    assert (items / f"{two}.json").exists(), "on disk although Redis is down"
    assert sorted(p.name for p in (items / "pending").iterdir()) == sorted([two, sha256_text("# B\n\nother\n")])
    assert stats.get_value("skillgraph/dual_write/pushed") == 1
    assert stats.get_value("skillgraph/dual_write/skipped_unchanged") == 1
    assert stats.get_value("skillgraph/dual_write/pending") == 2
    assert stats.get_value("skillgraph/dedup/unknown") == 2, "hash unknown while Redis is down: written anyway"
    warnings = [r for r in caplog.records if "Redis queue unreachable" in r.getMessage()]
    assert len(warnings) == 1, "warned once, counted every time"
    redis_server.start()
    assert client.llen("skillgraph:queue") == 1
    assert json.loads(client.lindex("skillgraph:queue", 0))["sha256"] == one  # type: ignore[arg-type]
    assert client.get("skillgraph:content_hash:http://127.0.0.1:1/docs/a.html") == one.encode()


def test_items_leave_a_stage_in_the_order_they_entered() -> None:
    order, out = OrderedExit(), []

    async def one(i: int) -> None:
        async with order.turn():
            await asyncio.sleep((20 - i) / 1000)  # later items finish their awaits first
        out.append(i)

    async def scenario() -> None:
        await asyncio.gather(*(one(i) for i in range(20)))

    asyncio.run(scenario())
    assert out == list(range(20))


def test_same_content_under_many_urls_at_once_is_saved_once(tmp_path: Path) -> None:
    crawler = get_crawler(Spider, {"SKILLGRAPH_ITEMS_DIR": str(tmp_path / "items"),
                                   "SKILLGRAPH_STATE_PATH": str(tmp_path / "state.sqlite3")})
    crawler.spider = Spider(name="unit")
    write = build_from_crawler(DualWritePipeline, crawler)
    write.open_spider()
    docs = [document("# Same\n\nbody\n", url=f"http://127.0.0.1:1/docs/p{i}.html") for i in range(8)]

    async def scenario() -> list[DocumentItem]:
        return await asyncio.gather(*(write.process_item(d) for d in docs))

    assert asyncio.run(scenario()) == docs, "every item goes on to the graph writer"
    assert [p.name for p in (tmp_path / "items" / "unit").iterdir()] == [sha256_text("# Same\n\nbody\n") + ".json"]
    assert crawler.stats.get_value("skillgraph/dual_write/disk_written") == 1
    assert crawler.stats.get_value("skillgraph/dual_write/already_saved") == 7


def test_item_store_writes_json_dumps_once_and_remakes_a_removed_folder(tmp_path: Path) -> None:
    import json
    import shutil

    from skillgraph.files import Batch
    from skillgraph.pipelines.dual_write import ItemStore

    store = ItemStore(tmp_path / "items", "docs")
    doc = {"url": "http://docs.test/é", "title": "Ünïcode", "markdown": "# Ü\n", "sha256": "a" * 64}
    assert store.save(doc, pending=False) is True
    assert store.path(doc["sha256"]).read_text("utf-8") == json.dumps(doc, ensure_ascii=False)
    assert store.save(doc, pending=False) is False, "already on disk"
    shutil.rmtree(store.dir)  # removed under the crawl: the next document makes it again
    batch = Batch()
    assert store.save({**doc, "sha256": "b" * 64}, pending=False, batch=batch) is True
    batch.finish()
    assert store.load("b" * 64) == {**doc, "sha256": "b" * 64}
    assert oct(store.path("b" * 64).stat().st_mode & 0o777) == oct(0o644)
