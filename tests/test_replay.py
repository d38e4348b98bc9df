"""``scrapy replay``: every disk item whose hash Redis does not hold is queued, each once.

Redis down mid-crawl (pending markers), and items written while Redis was not configured at all
(no markers); Redis down at start is in tests/test_redis_start.py.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from skillgraph.commands.replay import replay as replay_pending
from skillgraph.items import sha256_text
from skillgraph.pipelines.dual_write import ItemStore
from tests.conftest import run_scrapy
from tests.redis_server import RedisServer, redis_server  # noqa: F401 - fixture
from tests.servers import SiteServer


def stop_when_queued(server: RedisServer, count: int, stopped: threading.Event) -> None:
    client = server.client()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if client.llen("skillgraph:queue") >= count:
            server.stop()
            stopped.set()
            return
        time.sleep(0.02)


def replay(redis_url: str, items: Path) -> tuple[int, list[dict]]:
    proc = run_scrapy(["replay", "docs", "-s", f"REDIS_URL={redis_url}", "-s", f"SKILLGRAPH_ITEMS_DIR={items}"],
                      timeout=120)
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def test_outage_mid_crawl_then_replay_exactly_once(crawl, slow_docs: SiteServer, redis_server: RedisServer,  # noqa: F811
                                                   tmp_path: Path) -> None:
    stopped = threading.Event()
    watcher = threading.Thread(target=stop_when_queued, args=(redis_server, 1, stopped), daemon=True)
    watcher.start()
    result = crawl("docs", url=slow_docs.url + "library/index.html", graph="pydocs", settings={
        "REDIS_URL": redis_server.url, "SKILLGRAPH_MAX_PAGES": 16, "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "SKILLGRAPH_DISTRIBUTED_ENABLED": False,  # Redis for state and queue only: the queue's outage; one page at a
        # time (0.15 s each): Redis is stopped once the first document is queued, so that a late stop still leaves
        # several pending (one CI run pushed 12 of 16 when it was stopped at the third; locally 3-4 are pushed)
        "SKILLGRAPH_RECENCY_HOURS": 0, "SKILLGRAPH_RENDER_ENABLED": False,
        "SKILLGRAPH_SSRF_ALLOWLIST": f"127.0.0.1:{slow_docs.port}"})
    watcher.join(timeout=5)
    assert stopped.is_set(), "Redis was stopped during the crawl"
    assert result.returncode == 0, result.log[-3000:]
    stats = result.stats
    assert stats["skillgraph/graph/committed"] == 1, "the crawl finished and built its graph"
    pages = result.sources["pages"]
    assert len(pages) == 16
    items = tmp_path / "items" / "docs"
    docs = {p.stem: json.loads(p.read_text()) for p in items.glob("*.json")}
    assert {d["url"] for d in docs.values()} == {p["url"] for p in pages}, "every document is on disk"
    assert all(sha == doc["sha256"] and doc["markdown"] for sha, doc in docs.items())
    pending = sorted(p.name for p in (items / "pending").iterdir())
    assert stats["skillgraph/dual_write/pending"] == len(pending) >= 2, "several documents left pending"
    assert stats["skillgraph/dual_write/pushed"] + len(pending) == 16
    assert stats["skillgraph/state/redis_error"] >= 1
    assert "Redis queue unreachable" in result.log
    assert not list(tmp_path.rglob("*.tmp")), "no half-written file"

    code, _ = replay(redis_server.url, tmp_path / "items")
    assert code == 1, "replay with Redis still down fails and keeps the markers"
    assert len(list((items / "pending").iterdir())) == len(pending)

    redis_server.start()  # loads the data saved at shutdown
    client = redis_server.client()
    before = client.llen("skillgraph:queue")
    assert before == stats["skillgraph/dual_write/pushed"]
    already = next(sha for sha in docs if sha not in pending)
    (items / "pending" / already).touch()  # a marker that outlived its push (killed right after RPUSH)
    code, lines = replay(redis_server.url, tmp_path / "items")
    assert code == 0
    assert lines == [{"spider": "docs", "pushed": len(pending), "already_queued": 16 - len(pending), "superseded": 0,
                      "missing": 0, "unreadable": 0}], "every disk item looked at; the pushed ones not again"
    queued = [json.loads(raw)["sha256"] for raw in client.lrange("skillgraph:queue", 0, -1)]
    assert sorted(queued) == sorted(docs), "the queue holds each document exactly once"
    assert not list((items / "pending").iterdir())

    assert replay_pending(client, ItemStore(tmp_path / "items", "docs")) == {
        "pushed": 0, "already_queued": 16, "superseded": 0, "missing": 0, "unreadable": 0}, "again: nothing pushed"
    assert client.llen("skillgraph:queue") == 16


def write_item(store: ItemStore, url: str, markdown: str, fetched_at: str, pending: bool = False) -> dict[str, Any]:
    doc = {"url": url, "title": "T", "markdown": markdown, "sha256": sha256_text(markdown), "fetched_at": fetched_at,
           "source": url, "domain": "127.0.0.1", "strategy": "crawl", "tier": "html", "quality": 1.0}
    assert store.save(doc, pending=pending)
    return doc


def test_replay_pushes_items_written_without_redis_newest_version_once(tmp_path: Path,
                                                                       redis_server: RedisServer) -> None:  # noqa: F811
    store = ItemStore(tmp_path / "items", "docs")
    base = "http://127.0.0.1:1/docs/"
    old = write_item(store, base + "a.html", "# A\n\nold\n", "2026-11-01T00:00:00Z")
    new = write_item(store, base + "a.html", "# A\n\nnew\n", "2026-11-02T00:00:00Z")
    b = write_item(store, base + "b.html", "# B\n", "2026-11-01T12:00:00Z")
    held = write_item(store, base + "c.html", "# C\n", "2026-11-01T06:00:00Z", pending=True)
    stale_hash = write_item(store, base + "d.html", "# D\n\nv2\n", "2026-11-03T00:00:00Z")
    client = redis_server.client()
    client.set("skillgraph:content_hash:" + held["url"], held["sha256"])  # pushed; its marker outlived the push
    client.set("skillgraph:content_hash:" + stale_hash["url"], sha256_text("# D\n\nv1\n"))  # the store has v1
    (store.dir / "f00d.json").write_text("{not json")
    store.marker("0" * 64).parent.mkdir(exist_ok=True)
    store.marker("0" * 64).touch()  # a marker whose document never reached the disk
    assert replay_pending(client, store) == {"pushed": 3, "already_queued": 1, "superseded": 1, "missing": 1,
                                             "unreadable": 1}
    queued = [json.loads(raw) for raw in client.lrange("skillgraph:queue", 0, -1)]
    assert [d["sha256"] for d in queued] == [b["sha256"], new["sha256"], stale_hash["sha256"]], "in fetch order"
    assert old["sha256"] not in {d["sha256"] for d in queued}, "the older version of a.html is superseded"
    assert queued[1] == new, "the disk document as written"
    assert client.get("skillgraph:content_hash:" + new["url"]) == new["sha256"].encode()
    assert store.pending() == []
    assert replay_pending(client, store) == {"pushed": 0, "already_queued": 4, "superseded": 1, "missing": 0,
                                             "unreadable": 1}, "a second replay pushes nothing"
    assert client.llen("skillgraph:queue") == 3
