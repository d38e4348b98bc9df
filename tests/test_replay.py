"""Redis goes down mid-crawl: the crawl finishes, every document is on disk, replay pushes each once."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from skillgraph.commands.replay import replay as replay_pending
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
    watcher = threading.Thread(target=stop_when_queued, args=(redis_server, 3, stopped), daemon=True)
    watcher.start()
    result = crawl("docs", url=slow_docs.url + "library/index.html", graph="pydocs", settings={
        "REDIS_URL": redis_server.url, "SKILLGRAPH_MAX_PAGES": 16, "CONCURRENT_REQUESTS_PER_DOMAIN": 2,
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
    assert stats["skillgraph/dual_write/pending"] == len(pending) >= 6
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
    assert lines == [{"spider": "docs", "pushed": len(pending), "already_queued": 1, "missing": 0}]
    queued = [json.loads(raw)["sha256"] for raw in client.lrange("skillgraph:queue", 0, -1)]
    assert sorted(queued) == sorted(docs), "the queue holds each document exactly once"
    assert not list((items / "pending").iterdir())

    assert replay_pending(client, ItemStore(tmp_path / "items", "docs")) == {
        "pushed": 0, "already_queued": 0, "missing": 0}, "replaying again pushes nothing"
    assert client.llen("skillgraph:queue") == 16
