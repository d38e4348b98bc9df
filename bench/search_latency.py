"""Search latency at scale: the default hybrid search over a synthesised 100,000-chunk store.

The store of bench/search_eval.py's four doc sets (Python ``library/`` and
``howto/``, the PostgreSQL manual, Flask, Requests: ~16,000 chunks, embedded
by the configured embedder) is copied with its documents repeated under new
URLs (``?copy=N``: vectors, FTS rows and documents as the worker writes them)
until it holds ``--chunks`` chunks. Then, for the dev and held-out questions
of tests/fixtures/search/:

* cold: opening the store and the first query in a fresh process (the vector
  matrix and the FTS5 vocabulary are read then), and ``scrapy search`` end to
  end (process start, model load, first query);
* warm: median and 90th percentile of ``HybridSearch.search`` (k = 10, the
  query's embedding included), and of its stages: query embedding, vector
  top-50 (:class:`skillgraph.store.vectors.VectorIndex`), BM25 of the words and
  of the phrase (:class:`skillgraph.store.lexical.LexicalIndex`).

Usage: .venv/bin/python bench/search_latency.py [--chunks 100000] [--store PATH] [--big PATH]
(``--store`` / ``--big`` keep the stores between runs.)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
if "--blas-threads" in sys.argv:  # numpy reads it when it is first imported (by the imports below)
    os.environ["OPENBLAS_NUM_THREADS"] = sys.argv[sys.argv.index("--blas-threads") + 1]

from scrapy.settings import Settings  # noqa: E402

from bench.search_eval import build_store, page_set, questions  # noqa: E402
from skillgraph.store.chunk import plain_text  # noqa: E402
from skillgraph.store.embed import describe, load_embedder  # noqa: E402
from skillgraph.store.search import HybridSearch  # noqa: E402
from skillgraph.store.sqlite import SqliteStore  # noqa: E402


def scaled_copy(store: SqliteStore, path: Path, chunks: int) -> SqliteStore:
    """A copy of ``store`` with its documents repeated under new URLs until it holds ``chunks`` chunks."""
    name, dimension = (store.embedder_of() or "/0").rsplit("/", 1)
    big = SqliteStore(path, name, int(dimension))
    src = store.db.execute("SELECT url, ordinal, heading, text, embedding FROM chunks ORDER BY id").fetchall()
    plain = [plain_text(text) for _, _, _, text, _ in src]
    docs = store.db.execute("SELECT * FROM documents").fetchall()
    copy = big.db.execute("SELECT count(*) FROM documents").fetchone()[0] // max(1, len(docs))
    while big.counts()[1] < chunks:
        with big.transaction():
            for (url, ordinal, heading, text, blob), body in zip(src, plain, strict=True):
                cur = big.db.execute("INSERT INTO chunks (url, ordinal, heading, text, embedding) VALUES (?,?,?,?,?)",
                                     (f"{url}?copy={copy}", ordinal, heading, text, blob))
                big.db.execute("INSERT INTO chunks_fts (rowid, heading, body) VALUES (?, ?, ?)",
                               (cur.lastrowid, heading, body))
            big.db.executemany(f"INSERT INTO documents VALUES ({','.join('?' * len(docs[0]))})",
                               [(f"{row[0]}?copy={copy}", *row[1:]) for row in docs])
        copy += 1
    return big


def timed(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000


def summary(times: list[float]) -> str:
    ordered = sorted(times)
    return f"median {statistics.median(ordered):7.1f} ms   p90 {ordered[int(len(ordered) * 0.9)]:7.1f} ms"


def cli_search(path: Path, query: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "scrapy", "search", query, "-s", f"SKILLGRAPH_STORE_URL=sqlite:///{path}",
                           "-s", f"SKILLGRAPH_GRAPHS_DIR={path.parent / 'no-graphs'}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"scrapy search failed: {proc.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--store", type=Path, default=None, help="the eval's store (built or topped up here)")
    parser.add_argument("--big", type=Path, default=None, help="the synthesised store (reused when big enough)")
    parser.add_argument("--blas-threads", type=int, default=None, help="OPENBLAS_NUM_THREADS (default: numpy's)")
    args = parser.parse_args()
    embedder = load_embedder(Settings())
    items = [item for split in ("dev", "heldout") for s in ("paraphrased", "keyword") for item in questions(split)[s]]
    with tempfile.TemporaryDirectory(prefix="skillgraph-search-latency-") as tmp:
        store, _ = build_store(args.store or Path(tmp) / "store.sqlite3", embedder, page_set("all"))
        big_path = args.big or Path(tmp) / "big.sqlite3"
        start = time.perf_counter()
        scaled_copy(store, big_path, args.chunks).close()
        store.close()
        print(f"embedder {describe(embedder)}; synthesised store ready in {time.perf_counter() - start:.1f}s")

        big = SqliteStore(big_path, embedder.name, embedder.dimension)
        docs, chunks = big.counts()
        search = HybridSearch(big, embedder)
        print(f"{docs} documents, {chunks} chunks, {big_path.stat().st_size / 1e6:.0f} MB; BLAS threads "
              f"{os.environ.get('OPENBLAS_NUM_THREADS', 'default')}; load average "
              f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
        load = timed(search.vectors.refresh)
        vocab = timed(search.text.common_words)
        first = timed(lambda: search.search(items[0]["q"], 10))
        print(f"\ncold, in process: vector matrix {load:.0f} ms ({search.vectors.matrix.nbytes / 1e6:.0f} MB), "
              f"common words {vocab:.0f} ms ({len(search.text.common_words())} words), first query {first:.0f} ms")
        cli = [cli_search(big_path, item["q"]) for item in items[:3]]
        print(f"cold, `scrapy search` end to end (process, model, matrix, query): median "
              f"{statistics.median(cli):.2f} s of 3")

        stages: dict[str, list[float]] = {"search (k=10), total": [], "query embedding": [], "vector top-50": [],
                                          "BM25 words": [], "BM25 phrase": []}
        for item in items:
            q = item["q"]
            stages["search (k=10), total"].append(timed(lambda q=q: search.search(q, 10)))  # type: ignore[misc]
            vector = search.query_vector(q)
            stages["query embedding"].append(timed(lambda q=q: search.query_vector(q)))  # type: ignore[misc]
            stages["vector top-50"].append(timed(lambda q=q, v=vector: search.semantic(q, vector=v)))  # type: ignore
            stages["BM25 words"].append(timed(lambda q=q: search.lexical(q)))  # type: ignore[misc]
            stages["BM25 phrase"].append(timed(lambda q=q: search.phrase(q)))  # type: ignore[misc]
        print(f"\nwarm, {len(items)} questions, {chunks} chunks")
        for name, times in stages.items():
            print(f"  {name:<22} {summary(times)}")
        big.close()


if __name__ == "__main__":
    main()
