"""Store workers: throughput, search latency and retrieval quality, each against a baseline in the same run.

1. throughput: N Python-docs documents (Debian python3.11-doc, extracted with
   skillgraph.extract) pushed to a real redis-server, drained by one in-process
   StoreWorker (claim -> store -> chunk -> embed -> complete) against a baseline
   of plain LPOP + one SQLite INSERT of the raw document per commit (WAL).
2. search latency: median of HybridSearch.search over 100 queries, and of BM25 alone.
3. retrieval quality, recall@5 of the right page, hybrid vs FTS5 BM25 alone (and
   embeddings alone), for two query sets over 100 pages: the page's H1 title, and
   5 random content words of one of its paragraphs (order lost).

Usage: .venv/bin/python bench/store.py [--pages 300] [--embedder auto|hashing] [--dim 1024]
(``auto``, the default: the neural embedder when installed; search quality on questions is
bench/search_eval.py's job.)
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scrapy.settings import Settings  # noqa: E402

from skillgraph.commands.replay import push_sync  # noqa: E402
from skillgraph.extract import html_to_markdown  # noqa: E402
from skillgraph.items import sha256_text  # noqa: E402
from skillgraph.store.chunk import parse_blocks, plain_text  # noqa: E402
from skillgraph.store.embed import Embedder, HashingEmbedder, describe, load_embedder, tokens  # noqa: E402
from skillgraph.store.queue import ClaimQueue  # noqa: E402
from skillgraph.store.search import HybridSearch  # noqa: E402
from skillgraph.store.sqlite import SqliteStore  # noqa: E402
from skillgraph.store.worker import StoreWorker, WorkerConfig  # noqa: E402
from tests.conftest import PYTHON_DOCS  # noqa: E402
from tests.redis_server import RedisServer  # noqa: E402


def documents(count: int) -> list[dict[str, Any]]:
    docs = []
    for page in sorted(PYTHON_DOCS.glob("library/*.html")):
        url = f"http://127.0.0.1:1/{page.relative_to(PYTHON_DOCS)}"
        markdown = html_to_markdown(page.read_text("utf-8"), url)
        if len(markdown) >= 500:
            docs.append({"url": url, "title": page.stem, "markdown": markdown, "sha256": sha256_text(markdown)})
        if len(docs) == count:
            break
    return docs


def baseline(redis: Any, docs: list[dict[str, Any]], path: Path) -> float:
    for doc in docs:
        redis.rpush("bench:raw", json.dumps(doc))
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE raw (url TEXT PRIMARY KEY, payload TEXT)")
    start = time.perf_counter()
    while (payload := redis.lpop("bench:raw")) is not None:
        db.execute("INSERT OR REPLACE INTO raw VALUES (?, ?)", (json.loads(payload)["url"], payload))
    elapsed = time.perf_counter() - start
    db.close()
    return elapsed


def worker_run(redis: Any, docs: list[dict[str, Any]], store: SqliteStore, embedder: Embedder) -> float:
    for doc in docs:
        push_sync(redis, doc)
    worker = StoreWorker(store, embedder, WorkerConfig(), ClaimQueue(redis))
    start = time.perf_counter()
    stats = worker.run(burst=True)
    elapsed = time.perf_counter() - start
    assert stats["skillgraph/worker/stored"] == len(docs), stats
    return elapsed


def h1(markdown: str) -> str:
    for line in markdown.splitlines():
        if line.startswith("# "):
            return plain_text(line[2:]).strip()
    return ""


def recall(search: HybridSearch, full: HybridSearch, queries: list[tuple[str, str]]) -> dict[str, float]:
    found = {"hybrid": 0, "hybrid_w1": 0, "bm25": 0, "embedding": 0}
    for query, url in queries:
        found["hybrid"] += url in [h.url for h in search.search(query, 5)]
        found["hybrid_w1"] += url in [h.url for h in full.search(query, 5)]
        for name, ranking in (("bm25", search.lexical(query)), ("embedding", search.semantic(query))):
            rows = search.store.chunk_rows(ranking)
            urls = list(dict.fromkeys(rows[c][0] for c in ranking if c in rows))[:5]
            found[name] += url in urls
    return {name: count / len(queries) for name, count in found.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--dim", type=int, default=1024, help="hashing embedder's dimension")
    parser.add_argument("--embedder", default="auto", help="auto, hashing, or an import path")
    parser.add_argument("--semantic-weight", type=float, default=None, help="SKILLGRAPH_STORE_SEMANTIC_WEIGHT")
    args = parser.parse_args()
    docs = documents(args.pages)
    print(f"{len(docs)} Python docs pages extracted")
    with tempfile.TemporaryDirectory(prefix="skillgraph-bench-store-") as tmp:
        work = Path(tmp)
        server = RedisServer(work)
        server.start()
        try:
            redis = server.client()
            base = baseline(redis, docs, work / "raw.sqlite3")
            embedder = (HashingEmbedder(args.dim) if args.embedder == "hashing" else
                        load_embedder(Settings({"SKILLGRAPH_STORE_EMBEDDER": args.embedder})))
            print(f"embedder {describe(embedder)}")
            store = SqliteStore(work / "store.sqlite3", embedder.name, embedder.dimension)
            full = worker_run(redis, docs, store, embedder)
        finally:
            server.stop()
        n = len(docs)
        print(f"\nthroughput, {n} documents, one worker process")
        print(f"  baseline LPOP + raw INSERT : {n / base:8.1f} docs/s")
        print(f"  store worker (full path)   : {n / full:8.1f} docs/s  ({store.counts()[1]} chunks, "
              f"{store.counts()[1] / full:.1f} chunks/s, {3600 * n / full:,.0f} docs/hour)")
        print(f"  ratio worker / baseline    : {base / full:8.3f}  (worker costs {full / base:.0f}x the baseline)")

        search = HybridSearch(store, embedder, semantic_weight=args.semantic_weight)
        full = HybridSearch(store, embedder, semantic_weight=1.0)
        sample = random.Random(1).sample(docs, min(100, n))
        titles = [(h1(d["markdown"]), d["url"]) for d in sample if h1(d["markdown"])]
        rng = random.Random(2)
        bags = []
        for doc in sample:
            paras = [b.text for b in parse_blocks(doc["markdown"])
                     if b.kind == "text" and len(tokens(plain_text(b.text))) >= 25]
            if paras:
                bags.append((" ".join(rng.sample(tokens(plain_text(rng.choice(paras))), 5)), doc["url"]))
        search.search("warm the vector cache", 1)
        hybrid_ms, bm25_ms = [], []
        for query, _ in titles:
            start = time.perf_counter()
            search.search(query, 10)
            hybrid_ms.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            search.lexical(query)
            bm25_ms.append((time.perf_counter() - start) * 1000)
        print(f"\nsearch latency, {len(titles)} title queries, {store.counts()[1]} chunks")
        print(f"  BM25 alone median : {statistics.median(bm25_ms):7.2f} ms")
        print(f"  hybrid median     : {statistics.median(hybrid_ms):7.2f} ms  "
              f"(ratio {statistics.median(hybrid_ms) / statistics.median(bm25_ms):.1f}x)")
        for label, queries in (("H1 title", titles), ("5 words of a paragraph", bags)):
            r = recall(search, full, queries)
            print(f"\nrecall@5, {len(queries)} queries: {label}")
            print(f"  BM25 alone {r['bm25']:.2f}  embedding alone {r['embedding']:.2f}  "
                  f"hybrid (embedding weight {args.semantic_weight}) {r['hybrid']:.2f}  "
                  f"hybrid (weight 1) {r['hybrid_w1']:.2f}  (hybrid / BM25 {r['hybrid'] / r['bm25']:.3f})")
        store.close()


if __name__ == "__main__":
    main()
