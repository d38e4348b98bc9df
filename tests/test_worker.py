"""Store workers against a real redis-server: burst, exactly once, stale-claim reaping, dead letters, signals."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import redis
from scrapy.settings import BaseSettings

from skillgraph.commands.replay import push_sync
from skillgraph.items import sha256_text
from skillgraph.store.embed import HashingEmbedder
from skillgraph.store.queue import ATTEMPTS_KEY, CLAIMED_AT_KEY, DEAD_KEY, ClaimQueue, payload_id
from skillgraph.store.sqlite import SqliteStore
from skillgraph.store.worker import StoreWorker, WorkerConfig
from tests.conftest import ROOT, run_scrapy
from tests.redis_server import RedisServer, redis_server  # noqa: F401 - fixture
from tests.servers import SiteServer
from tests.test_store import python_docs_documents

QUEUE, PROCESSING = "skillgraph:queue", "skillgraph:processing"
SLOW = "tests.test_worker.SlowEmbedder"
FLAKY = "tests.test_worker.FlakyEmbedder"
HASHING = "SKILLGRAPH_STORE_EMBEDDER=skillgraph.store.embed.HashingEmbedder"  # fast; the model is tested elsewhere


class SlowEmbedder(HashingEmbedder):
    """The hashing embedder, sleeping ``TEST_EMBED_DELAY`` seconds per document: lets a signal land mid-document.

    With ``TEST_EMBED_HANG_AFTER`` = N, the document after the Nth never finishes embedding: a kill then lands
    mid-document for sure, however slow or fast the machine is.
    """

    def __init__(self, dimension: int, delay: float, hang_after: int = 0) -> None:
        super().__init__(dimension)
        self.name = f"hashing-v1-{dimension}"  # same vectors: stores stay compatible with the default embedder
        self.delay = delay
        self.hang_after = hang_after
        self.documents = 0

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> SlowEmbedder:
        return cls(settings.getint("SKILLGRAPH_STORE_EMBED_DIM", 1024), settings.getfloat("TEST_EMBED_DELAY", 0.5),
                   settings.getint("TEST_EMBED_HANG_AFTER", 0))

    def embed(self, texts: Sequence[str]) -> list[Sequence[float]]:
        time.sleep(self.delay)
        if list(texts) != ["embedder health check"]:
            self.documents += 1
            if self.hang_after and self.documents > self.hang_after:
                time.sleep(600)
        return super().embed(texts)


class PoisonEmbedder(HashingEmbedder):
    """Raises on any text containing POISON: a document whose processing always fails."""

    def embed(self, texts: Sequence[str]) -> list[Sequence[float]]:
        if any("POISON" in text for text in texts):
            raise RuntimeError("poisoned")
        return super().embed(texts)


class FlakyEmbedder(HashingEmbedder):
    """Works for ``TEST_EMBED_FAIL_AFTER`` calls, then raises for as long as the file ``TEST_EMBED_DOWN`` exists.

    An embedding engine that goes down mid-batch and comes back (seed ledger R6), chosen through
    ``SKILLGRAPH_STORE_EMBEDDER`` like any embedder; every call, probes included, is counted.
    """

    def __init__(self, dimension: int, fail_after: int, down: str) -> None:
        super().__init__(dimension)
        self.fail_after, self.down, self.calls = fail_after, Path(down), 0

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> FlakyEmbedder:
        return cls(settings.getint("SKILLGRAPH_STORE_EMBED_DIM", 1024), settings.getint("TEST_EMBED_FAIL_AFTER"),
                   settings["TEST_EMBED_DOWN"])

    def embed(self, texts: Sequence[str]) -> list[Sequence[float]]:
        self.calls += 1
        if self.calls > self.fail_after and self.down.exists():
            raise ConnectionError(f"embedding engine unreachable (call {self.calls})")
        return super().embed(texts)


def push_all(client: redis.Redis, docs: Sequence[dict[str, Any]]) -> None:
    for doc in docs:
        assert push_sync(client, doc)


def store_rows(path: Path) -> dict[str, tuple[str, int]]:
    """url -> (sha256, chunk rows) as stored."""
    db = sqlite3.connect(path)
    try:
        docs = dict(db.execute("SELECT url, sha256 FROM documents").fetchall())
        counts = dict(db.execute("SELECT url, count(*) FROM chunks GROUP BY url").fetchall())
        assert db.execute("SELECT count(*) FROM chunks_fts").fetchone()[0] == sum(counts.values())
    finally:
        db.close()
    return {url: (sha, counts.get(url, 0)) for url, sha in docs.items()}


def worker_args(tmp_path: Path, redis_url: str, name: str = "w", **settings: Any) -> list[str]:
    merged = {"REDIS_URL": redis_url, "SKILLGRAPH_STORE_URL": f"sqlite:///{tmp_path}/store.sqlite3",
              "SKILLGRAPH_STATS_FILE": str(tmp_path / f"stats-{name}.json"), "LOG_LEVEL": "INFO",
              "SKILLGRAPH_STORE_EMBEDDER": "skillgraph.store.embed.HashingEmbedder", **settings}
    args: list[str] = []
    for key, value in merged.items():
        args += ["-s", f"{key}={value}"]
    return args


def start_worker(tmp_path: Path, redis_url: str, name: str, *extra: str, **settings: Any) -> subprocess.Popen[str]:
    log = (tmp_path / f"{name}.log").open("w")
    return subprocess.Popen([sys.executable, "-m", "scrapy", "worker", *extra,
                             *worker_args(tmp_path, redis_url, name, **settings)],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log, text=True)


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def stats_of(tmp_path: Path, name: str) -> dict[str, int]:
    return json.loads((tmp_path / f"stats-{name}.json").read_text())


def stored_count(path: Path) -> int:
    if not path.exists():
        return 0
    db = sqlite3.connect(path, timeout=30)
    try:
        return int(db.execute("SELECT count(*) FROM documents").fetchone()[0])
    except sqlite3.OperationalError:
        return 0
    finally:
        db.close()


def test_burst_worker_stores_every_document_then_search_finds_them(tmp_path: Path, redis_server: RedisServer  # noqa: F811
                                                                   ) -> None:
    client = redis_server.client()
    docs = python_docs_documents(30)
    push_all(client, docs)
    proc = run_scrapy(["worker", "--burst", *worker_args(tmp_path, redis_server.url)], timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert client.llen(QUEUE) == client.llen(PROCESSING) == 0
    assert not client.exists(CLAIMED_AT_KEY) and not client.exists(ATTEMPTS_KEY)
    rows = store_rows(tmp_path / "store.sqlite3")
    assert {url: sha for url, (sha, _) in rows.items()} == {d["url"]: d["sha256"] for d in docs}
    assert all(n > 0 for _, n in rows.values())
    stats = stats_of(tmp_path, "w")
    assert stats["skillgraph/worker/stored"] == 30 and stats["skillgraph/worker/claimed"] == 30
    assert stats["skillgraph/worker/chunks"] == sum(n for _, n in rows.values())
    assert "Store worker done: 30 documents stored (30 new, 0 replaced)" in proc.stderr

    # the search command over that store
    store_url = f"SKILLGRAPH_STORE_URL=sqlite:///{tmp_path}/store.sqlite3"
    found = run_scrapy(["search", "array.frombytes", "-n", "3", "--json", "-s", store_url, "-s", HASHING],
                       timeout=60)
    assert found.returncode == 0, found.stderr
    hits = [json.loads(line) for line in found.stdout.splitlines()]
    # at most 3: the relevance floor keeps pages that do not match out, even with -n 3
    assert 1 <= len(hits) <= 3 and hits[0]["url"].endswith("library/array.html") and hits[0]["rank"] == 1
    assert set(hits[0]) == {"rank", "score", "url", "title", "heading", "snippet", "lexical_rank", "semantic_rank",
                            "similarity", "graph", "file", "coverage"}
    text = run_scrapy(["search", "array.frombytes", "-n", "1", "-s", store_url, "-s", HASHING], timeout=60)
    assert text.stdout.startswith(" 1. ") and "library/array.html" in text.stdout
    assert "embedder hashing-v1-1024 (hashing fallback, words only)" in text.stderr
    missing = run_scrapy(["search", "x", "-s", f"SKILLGRAPH_STORE_URL=sqlite:///{tmp_path}/none.sqlite3"])
    assert missing.returncode == 1 and "run `scrapy worker` first" in missing.stderr
    assert not (tmp_path / "none.sqlite3").exists()

    # re-pushing an unchanged document is a no-op; a changed one replaces its chunks
    unchanged = docs[0]
    changed = {**docs[1], "markdown": "# Changed\n\nquetzalcoatlus feathers\n"}
    changed["sha256"] = sha256_text(changed["markdown"])
    client.rpush(QUEUE, json.dumps(unchanged), json.dumps(changed))
    again = run_scrapy(["worker", "--burst", *worker_args(tmp_path, redis_server.url, "again")], timeout=120)
    assert again.returncode == 0, again.stderr[-3000:]
    stats = stats_of(tmp_path, "again")
    assert stats["skillgraph/worker/unchanged"] == 1 and stats["skillgraph/worker/replaced"] == 1
    after = store_rows(tmp_path / "store.sqlite3")
    assert after[unchanged["url"]] == rows[unchanged["url"]]
    assert after[changed["url"]] == (changed["sha256"], 1)
    hit = run_scrapy(["search", "quetzalcoatlus", "-n", "1", "--json", "-s", store_url, "-s", HASHING]).stdout
    assert json.loads(hit)["url"] == changed["url"]


def test_worker_needs_redis_url_and_a_supported_store(tmp_path: Path) -> None:
    proc = run_scrapy(["worker", "--burst", "-s", f"SKILLGRAPH_STORE_URL=sqlite:///{tmp_path}/s.sqlite3"])
    assert proc.returncode == 2 and "REDIS_URL is not set" in proc.stderr
    proc = run_scrapy(["worker", "--burst", "-s", "REDIS_URL=redis://127.0.0.1:1",
                       "-s", "SKILLGRAPH_STORE_URL=postgresql://127.0.0.1/db"])
    assert proc.returncode == 2 and "'postgresql' is not supported; supported: sqlite:///" in proc.stderr


def test_local_mode_stores_disk_items(tmp_path: Path) -> None:
    items = tmp_path / "items" / "docs"
    items.mkdir(parents=True)
    for doc in python_docs_documents(5):
        (items / f"{doc['sha256']}.json").write_text(json.dumps(doc))
    (items / "pending").mkdir()
    (items / "pending" / "abc").touch()  # a dual-write marker, not a document
    proc = run_scrapy(["worker", "--from-items", str(tmp_path / "items"), "-s", HASHING,
                       "-s", f"SKILLGRAPH_STORE_URL=sqlite:///{tmp_path}/store.sqlite3",
                       "-s", f"SKILLGRAPH_STATS_FILE={tmp_path}/stats-local.json"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert len(store_rows(tmp_path / "store.sqlite3")) == 5
    assert stats_of(tmp_path, "local")["skillgraph/worker/stored"] == 5
    (items / "broken.json").write_text("{not json")
    proc = run_scrapy(["worker", "--from-items", str(tmp_path / "items"), "-s", HASHING,
                       "-s", f"SKILLGRAPH_STORE_URL=sqlite:///{tmp_path}/store.sqlite3"])
    assert proc.returncode == 1 and "Could not store" in proc.stderr and "5 skipped unchanged" in proc.stderr


def snapshot(path: Path) -> list[tuple[Any, ...]]:
    """Every stored document and chunk row, ids and store times included: what a no-op run must not touch."""
    db = sqlite3.connect(path)
    try:
        return (db.execute("SELECT * FROM documents ORDER BY url").fetchall()
                + db.execute("SELECT id, url, ordinal, embedding FROM chunks ORDER BY id").fetchall())
    finally:
        db.close()


def test_after_a_crawl_one_command_makes_the_graph_searchable_and_a_rerun_changes_nothing(
        crawl: Any, python_docs: SiteServer, tmp_path: Path) -> None:
    """README's local use, no Redis: ``scrapy crawl docs`` then ``scrapy worker --from-items items``."""
    result = crawl("docs", url=python_docs.url + "library/json.html",
                   settings={"SKILLGRAPH_MAX_PAGES": 3, "SKILLGRAPH_RENDER_ENABLED": False})
    assert result.returncode == 0, result.log[-3000:]
    items = tmp_path / "items"
    crawled = [json.loads(p.read_text()) for p in items.rglob("*.json")]
    assert len(crawled) == 3
    # json.html as an earlier crawl saw it: its item stays in items/ (files are named by content hash)
    old = next(dict(doc) for doc in crawled if doc["url"].endswith("/library/json.html"))
    old.update(markdown="# json\n\nAn outdated page.\n", fetched_at="2020-01-01T00:00:00Z")
    old["sha256"] = sha256_text(old["markdown"])
    (items / "docs" / f"{old['sha256']}.json").write_text(json.dumps(old))
    store = tmp_path / "store.sqlite3"
    args = ["-s", f"SKILLGRAPH_STORE_URL=sqlite:///{store}", "-s", f"SKILLGRAPH_GRAPHS_DIR={result.graphs}"]

    first = run_scrapy(["worker", "--from-items", str(items), *args,
                        "-s", f"SKILLGRAPH_STATS_FILE={tmp_path}/stats-store.json"], timeout=300)
    assert first.returncode == 0, first.stderr[-2000:]
    assert store_rows(store).keys() == {doc["url"] for doc in crawled}
    assert {sha for sha, _ in store_rows(store).values()} == {doc["sha256"] for doc in crawled}, "newest version"
    stats = stats_of(tmp_path, "store")
    assert stats["skillgraph/worker/stored"] == 3 and stats["skillgraph/worker/superseded"] == 1
    found = run_scrapy(["search", "pretty print JSON with indentation", "--json", *args], timeout=120)
    assert found.returncode == 0, found.stderr[-2000:]
    hit = json.loads(found.stdout.splitlines()[0])
    assert hit["url"] == python_docs.url + "library/json.html"
    assert (hit["graph"], hit["file"]) == (result.name, "json.md")

    before = snapshot(store)
    again = run_scrapy(["worker", "--from-items", str(items), *args], timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "0 documents stored" in again.stderr and "3 skipped unchanged" in again.stderr
    assert snapshot(store) == before, "a second run changes nothing"


def test_killed_worker_leaves_a_claim_the_reaper_returns_and_a_second_worker_completes(
        tmp_path: Path, redis_server: RedisServer) -> None:  # noqa: F811
    client = redis_server.client()
    docs = python_docs_documents(8)
    push_all(client, docs)
    store = tmp_path / "store.sqlite3"
    slow = start_worker(tmp_path, redis_server.url, "killed", SKILLGRAPH_STORE_EMBEDDER=SLOW,
                        TEST_EMBED_DELAY=0.1, TEST_EMBED_HANG_AFTER=2, SKILLGRAPH_WORKER_CLAIM_TIMEOUT=2)
    try:
        def third_hangs() -> bool:
            claims = client.lrange(PROCESSING, 0, -1)
            return (stored_count(store) == 2 and len(claims) == 1
                    and json.loads(claims[0])["url"] not in store_rows(store))
        wait_for(third_hangs, "two stored, the third claimed and hanging")
    finally:
        slow.send_signal(signal.SIGKILL)
        slow.wait(timeout=10)
    in_flight = client.lrange(PROCESSING, 0, -1)
    assert len(in_flight) == 1, "the killed worker's claim is left in processing"
    orphan = json.loads(in_flight[0])["url"]
    assert orphan not in store_rows(store), "it died before storing it"
    done_before = stored_count(store)

    time.sleep(2.2)  # the claim is now older than SKILLGRAPH_WORKER_CLAIM_TIMEOUT
    proc = run_scrapy(["worker", "--burst", *worker_args(tmp_path, redis_server.url, "second",
                                                         SKILLGRAPH_WORKER_CLAIM_TIMEOUT=2)], timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    stats = stats_of(tmp_path, "second")
    assert stats["skillgraph/worker/reaped"] == 1
    assert "Returned 1 stale claim(s)" in proc.stderr
    assert stats["skillgraph/worker/stored"] == len(docs) - done_before, "each document stored exactly once"
    assert stats.get("skillgraph/worker/unchanged", 0) == 0
    rows = store_rows(store)
    assert {url: sha for url, (sha, _) in rows.items()} == {d["url"]: d["sha256"] for d in docs}
    assert client.llen(QUEUE) == client.llen(PROCESSING) == 0 and not client.exists(CLAIMED_AT_KEY)


def test_reaper_is_safe_with_workers_racing(redis_server: RedisServer) -> None:  # noqa: F811
    client = redis_server.client()
    client.rpush(PROCESSING, b"a", b"b", b"c")  # claims whose workers died before recording them
    queues = [ClaimQueue(redis_server.client()) for _ in range(4)]
    assert sum(q.reap(0.5) for q in queues) == 0, "unrecorded claims get a claim time first"
    time.sleep(0.6)
    assert sum(q.reap(0.5) for q in queues) == 3, "reaped once in all, however many workers reap"
    assert sorted(client.lrange(QUEUE, 0, -1)) == [b"a", b"b", b"c"] and client.llen(PROCESSING) == 0


def test_poison_documents_go_to_dead_letter(tmp_path: Path, redis_server: RedisServer,  # noqa: F811
                                            caplog: pytest.LogCaptureFixture) -> None:
    client = redis_server.client()
    embedder = PoisonEmbedder(64)
    worker = StoreWorker(SqliteStore(tmp_path / "s.sqlite3", embedder.name, 64), embedder,
                         WorkerConfig(max_attempts=3), ClaimQueue(client))
    good = {"url": "http://127.0.0.1:1/good", "markdown": "# Good\n\nfine text"}
    poison = {"url": "http://127.0.0.1:1/poison", "markdown": "# Bad\n\nPOISON here"}
    client.rpush(QUEUE, b"{not json", json.dumps(poison), json.dumps(good), json.dumps({"url": 3}))
    stats = worker.run(burst=True)
    assert client.llen(QUEUE) == client.llen(PROCESSING) == 0
    dead = client.lrange(DEAD_KEY, 0, -1)
    assert sorted(dead) == sorted([b"{not json", json.dumps(poison).encode(), json.dumps({"url": 3}).encode()])
    assert stats["skillgraph/worker/dead_letter/invalid"] == 2, "bad JSON is never retried"
    assert stats["skillgraph/worker/failed"] == 3 and stats["skillgraph/worker/retried"] == 2
    assert stats["skillgraph/worker/dead_letter/failed"] == 1
    assert stats["skillgraph/worker/stored"] == 1 and worker.store.counts() == (1, 1)
    assert "Dead-lettering a document after 3 failed attempts" in caplog.text
    assert "Dead-lettering an invalid document (not JSON" in caplog.text
    assert not client.exists(ATTEMPTS_KEY) and not client.exists(CLAIMED_AT_KEY)

    # a document claimed more often than allowed (it killed its workers) is not processed again
    client.rpush(QUEUE, json.dumps(good))
    client.hset(ATTEMPTS_KEY, payload_id(json.dumps(good).encode()), 3)
    worker.run(burst=True)
    assert worker.stats["skillgraph/worker/dead_letter/too_many_claims"] == 1 and client.llen(DEAD_KEY) == 4


def test_sigterm_finishes_the_current_document_then_exits_zero(tmp_path: Path, redis_server: RedisServer  # noqa: F811
                                                               ) -> None:
    client = redis_server.client()
    docs = python_docs_documents(6)
    push_all(client, docs)
    proc = start_worker(tmp_path, redis_server.url, "term", SKILLGRAPH_STORE_EMBEDDER=SLOW,
                        TEST_EMBED_DELAY=1.0)
    wait_for(lambda: client.llen(PROCESSING) == 1, "a document claimed")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    stats = stats_of(tmp_path, "term")
    assert stats["skillgraph/worker/stored"] == stats["skillgraph/worker/claimed"] >= 1, "the claim was finished"
    assert client.llen(PROCESSING) == 0
    assert client.llen(QUEUE) == len(docs) - stats["skillgraph/worker/stored"] > 0
    assert "finishing the current document" in (tmp_path / "term.log").read_text()


def test_two_workers_share_a_queue_of_200_documents_each_stored_once(tmp_path: Path,
                                                                     redis_server: RedisServer) -> None:  # noqa: F811
    client = redis_server.client()
    docs = python_docs_documents(200)
    workers = [start_worker(tmp_path, redis_server.url, name, SKILLGRAPH_STORE_EMBEDDER=SLOW,
                            TEST_EMBED_DELAY=0.01) for name in ("one", "two")]
    try:
        # both idle workers wait in BLMOVE before the first document arrives: both take part
        wait_for(lambda: sum(c.get("cmd") == "blmove" for c in client.client_list()) == 2, "two blocked workers")
        push_all(client, docs)
        wait_for(lambda: client.llen(QUEUE) + client.llen(PROCESSING) == 0, "the queue drained", timeout=240)
    finally:
        for proc in workers:
            proc.send_signal(signal.SIGTERM)
        codes = [proc.wait(timeout=30) for proc in workers]
    assert codes == [0, 0]
    one, two = stats_of(tmp_path, "one"), stats_of(tmp_path, "two")
    assert one["skillgraph/worker/stored"] > 0 and two["skillgraph/worker/stored"] > 0
    assert one["skillgraph/worker/stored"] + two["skillgraph/worker/stored"] == 200
    assert one.get("skillgraph/worker/unchanged", 0) + two.get("skillgraph/worker/unchanged", 0) == 0
    rows = store_rows(tmp_path / "store.sqlite3")
    assert {url: sha for url, (sha, _) in rows.items()} == {d["url"]: d["sha256"] for d in docs}


def test_redis_down_is_retried_with_backoff_until_it_returns(tmp_path: Path, redis_server: RedisServer  # noqa: F811
                                                              ) -> None:
    push_all(redis_server.client(), python_docs_documents(4))
    redis_server.stop()  # saved to disk with the documents; nothing listens on the port now
    proc = start_worker(tmp_path, redis_server.url, "down")
    log = tmp_path / "down.log"
    try:
        wait_for(lambda: "Redis unreachable" in log.read_text(), "the outage logged")
        redis_server.start()
        wait_for(lambda: stored_count(tmp_path / "store.sqlite3") == 4, "the documents stored once Redis is back")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    stats = stats_of(tmp_path, "down")
    assert stats["skillgraph/worker/redis_error"] >= 1 and stats["skillgraph/worker/stored"] == 4
    assert "Redis reachable again" in log.read_text()

    redis_server.stop()
    idle = start_worker(tmp_path, redis_server.url, "stopped")
    wait_for(lambda: "Redis unreachable" in (tmp_path / "stopped.log").read_text(), "the outage logged")
    idle.send_signal(signal.SIGTERM)
    assert idle.wait(timeout=10) == 0, "a stop request ends the backoff"


def test_burst_with_redis_down_fails_fast_with_one_line(tmp_path: Path) -> None:
    from tests.servers import free_port

    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    proc = run_scrapy(["worker", "--burst", *worker_args(tmp_path, url)], timeout=60)
    assert proc.returncode == 1
    lines = [line for line in proc.stderr.splitlines() if line.startswith("scrapy worker:")]
    assert len(lines) == 1 and "is unreachable" in lines[0] and "Traceback" not in proc.stderr
    assert proc.stdout == ""


def queue_state(client: redis.Redis) -> tuple[int, int, int]:
    return client.llen(QUEUE), client.llen(PROCESSING), client.llen(DEAD_KEY)


def test_embedder_health_gate_pauses_claims_drops_nothing_and_resumes(tmp_path: Path,
                                                                      redis_server: RedisServer  # noqa: F811
                                                                      ) -> None:
    client = redis_server.client()
    docs = python_docs_documents(10)
    push_all(client, docs)
    down = tmp_path / "embedder-down"
    down.touch()
    store = tmp_path / "store.sqlite3"
    proc = start_worker(tmp_path, redis_server.url, "flaky", SKILLGRAPH_STORE_EMBEDDER=FLAKY,
                        TEST_EMBED_FAIL_AFTER=3, TEST_EMBED_DOWN=str(down), SKILLGRAPH_WORKER_BACKOFF_MAX=0.5,
                        SKILLGRAPH_WORKER_MAX_ATTEMPTS=1)
    log = tmp_path / "flaky.log"
    try:
        wait_for(lambda: "The embedder failed" in log.read_text(), "the embedder failure logged")
        wait_for(lambda: log.read_text().count("The embedder still fails") >= 3, "three failed probes")
        # paused: three documents stored, the fourth released untried, none claimed, none dead
        assert stored_count(store) == 3
        assert queue_state(client) == (7, 0, 0)
        assert not client.exists(ATTEMPTS_KEY), "a released claim costs the document no attempt"
        assert client.lindex(QUEUE, 0) == json.dumps(docs[3], ensure_ascii=False).encode(), "back at the head"
        down.unlink()  # the engine is back
        wait_for(lambda: stored_count(store) == 10, "the worker to resume by itself and store the rest")
        wait_for(lambda: queue_state(client) == (0, 0, 0), "the queue drained")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    text = log.read_text()
    assert "The embedder works again" in text and "Dead-lettering" not in text
    stats = stats_of(tmp_path, "flaky")
    assert stats["skillgraph/worker/embedder_down"] == 1 and stats["skillgraph/worker/embedder_recovered"] == 1
    assert stats["skillgraph/worker/released"] == 1 and stats["skillgraph/worker/stored"] == 10
    assert "skillgraph/worker/failed" not in stats and "skillgraph/worker/retried" not in stats

    # a burst run stops at the failure instead: exit 1, one line, the document still queued
    push_all(client, python_docs_documents(14)[10:])
    down.touch()
    burst = run_scrapy(["worker", "--burst", *worker_args(tmp_path, redis_server.url, "flaky-burst",
                                                          SKILLGRAPH_STORE_EMBEDDER=FLAKY, TEST_EMBED_FAIL_AFTER=1,
                                                          TEST_EMBED_DOWN=str(down))], timeout=60)
    assert burst.returncode == 1 and "the embedder" in burst.stderr.splitlines()[-1]
    assert stored_count(store) == 11 and queue_state(client) == (3, 0, 0)
