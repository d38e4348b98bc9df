"""Search quality on real docs: recall@5 and MRR of BM25, embeddings and the hybrid, on our own question sets.

Corpus: the Python 3.11 ``library/`` pages (Debian python3.11-doc), extracted
with skillgraph.extract as a crawl would, stored by a StoreWorker (chunk ->
embed -> SQLite) with the configured embedder. Questions:
tests/fixtures/search/questions.json -- ``paraphrased`` (no key term of the
page: "benchmark which of two one-line expressions is faster" -> timeit),
``keyword`` (the page's own words) and ``nonsense`` (must find nothing).

For each ranking mode: recall@5 (a right page among the first 5 hits), MRR
(1 / rank of the first right page within 10, else 0), median ms/query. Modes:
``bm25`` (phrase + word BM25), ``embedding`` (cosine alone), and
``hybrid lex=W`` (cosine + W x BM25, reciprocal-rank fused) and ``hybrid@0.1``
(BM25 + 0.1 x cosine: the hashing embedder's fusion), each with the relevance
floor of the embedder; ``--no-floor`` shows them without it.

Usage: .venv/bin/python bench/search_eval.py [--store PATH] [--pages N] [--embedder auto|hashing]
(``--store`` keeps the store between runs: building it embeds ~5,700 chunks.)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scrapy.settings import Settings  # noqa: E402

from skillgraph.extract import html_to_markdown  # noqa: E402
from skillgraph.items import sha256_text  # noqa: E402
from skillgraph.store.embed import Embedder, describe, load_embedder  # noqa: E402
from skillgraph.store.search import HybridSearch  # noqa: E402
from skillgraph.store.sqlite import SqliteStore  # noqa: E402
from skillgraph.store.worker import StoreWorker, WorkerConfig  # noqa: E402

PYTHON_DOCS = Path("/usr/share/doc/python3.11/html")
QUESTIONS = ROOT / "tests" / "fixtures" / "search" / "questions.json"
BASE_URL = "http://127.0.0.1:1/"
LEXICAL_WEIGHTS = (1.0, 0.5, 0.25, 0.1)  # BM25's vote against the embedding's 1


def questions() -> dict[str, Any]:
    return json.loads(QUESTIONS.read_text("utf-8"))


def library_pages(names: Iterable[str] | None = None) -> list[Path]:
    """``library/*.html``, or only the named ones (``library/json.html``)."""
    if names is None:
        return sorted(PYTHON_DOCS.glob("library/*.html"))
    return [PYTHON_DOCS / n for n in sorted(set(names)) if (PYTHON_DOCS / n).is_file()]


def document(page: Path) -> dict[str, Any]:
    url = BASE_URL + str(page.relative_to(PYTHON_DOCS))
    markdown = html_to_markdown(page.read_text("utf-8"), url)
    return {"url": url, "title": page.stem, "markdown": markdown, "sha256": sha256_text(markdown)}


def build_store(path: Path, embedder: Embedder, pages: list[Path]) -> tuple[SqliteStore, dict[str, float]]:
    """Store the pages (an existing store at ``path`` is topped up: unchanged pages cost nothing)."""
    store = SqliteStore(path, embedder.name, embedder.dimension)
    worker = StoreWorker(store, embedder, WorkerConfig())
    docs = [document(p) for p in pages]
    start = time.perf_counter()
    for doc in docs:
        if doc["markdown"].strip():
            worker.store_document(doc)
    elapsed = time.perf_counter() - start
    stored = worker.stats["skillgraph/worker/stored"] + worker.stats["skillgraph/worker/replaced"]
    chunks = worker.stats["skillgraph/worker/chunks"]
    return store, {"seconds": elapsed, "docs": stored, "chunks": chunks,
                   "docs_per_s": stored / elapsed if stored else 0.0,
                   "chunks_per_s": chunks / elapsed if chunks else 0.0}


def modes(store: SqliteStore, embedder: Embedder, floor: bool = True) -> dict[str, HybridSearch]:
    kw: dict[str, Any] = {} if floor else {"min_similarity": -1.0}
    out = {"bm25": HybridSearch(store, embedder, semantic_weight=0.0, lexical_weight=1.0, **kw),
           "embedding": HybridSearch(store, embedder, semantic_weight=1.0, lexical_weight=0.0, **kw)}
    for weight in LEXICAL_WEIGHTS:
        out[f"hybrid lex={weight:g}"] = HybridSearch(store, embedder, semantic_weight=1.0, lexical_weight=weight,
                                                     **kw)
    out["hybrid@0.1"] = HybridSearch(store, embedder, semantic_weight=0.1, lexical_weight=1.0, **kw)
    return out


def score(search: HybridSearch, items: list[dict[str, Any]]) -> dict[str, float]:
    """recall@5, MRR@10 and median ms/query of one mode over one question set."""
    found, reciprocal, times = 0, 0.0, []
    for item in items:
        wanted = {BASE_URL + p for p in item["pages"]}
        start = time.perf_counter()
        hits = search.search(item["q"], 10)
        times.append((time.perf_counter() - start) * 1000)
        ranks = [h.rank for h in hits if h.url in wanted]
        found += bool(ranks) and ranks[0] <= 5
        reciprocal += 1 / ranks[0] if ranks else 0.0
    n = max(1, len(items))
    return {"recall@5": found / n, "mrr": reciprocal / n, "ms": statistics.median(times) if times else 0.0}


def nonsense_hits(search: HybridSearch, queries: list[str]) -> int:
    return sum(len(search.search(q, 10)) for q in queries)


def similarity_margin(search: HybridSearch, items: list[dict[str, Any]], nonsense: list[str]) -> dict[str, float]:
    """The right page's cosine for real questions (low end) against the best cosine any nonsense reaches."""
    right = []
    for item in items:
        wanted = {BASE_URL + p for p in item["pages"]}
        sims = [h.similarity for h in search.search(item["q"], 10) if h.url in wanted]
        if sims:
            right.append(max(sims))
    worst = []
    for query in nonsense:
        vector = search.query_vector(query)
        ids = search.semantic(query, 1, vector=vector)
        worst += [sum(a * b for a, b in zip(v, vector, strict=True)) for v in search.store.embeddings(ids).values()]
    right.sort()
    return {"right_p10": right[len(right) // 10] if right else 0.0, "right_min": right[0] if right else 0.0,
            "nonsense_max": max(worst) if worst else 0.0}


def scaled_copy(store: SqliteStore, path: Path, chunks: int) -> SqliteStore:
    """A copy of ``store`` with its documents repeated under new URLs until it holds ``chunks`` chunks."""
    name, dimension = (store.embedder_of() or "/0").rsplit("/", 1)
    big = SqliteStore(path, name, int(dimension))
    src = store.db.execute("SELECT url, ordinal, heading, text, embedding FROM chunks ORDER BY id").fetchall()
    copy = 0
    with big.transaction():
        while big.counts()[1] < chunks:
            for url, ordinal, heading, text, blob in src:
                u = f"{url}?copy={copy}"
                cur = big.db.execute("INSERT INTO chunks (url, ordinal, heading, text, embedding) VALUES (?,?,?,?,?)",
                                     (u, ordinal, heading, text, blob))
                big.db.execute("INSERT INTO chunks_fts (rowid, heading, body) VALUES (?, ?, ?)",
                               (cur.lastrowid, heading, text))
            big.db.execute("INSERT OR IGNORE INTO documents (url, sha256, title, stored_at, chunks) "
                           "SELECT url || '?copy=' || ?, sha256, title, stored_at, chunks FROM documents", (copy,))
            copy += 1
    return big


def latency(store: SqliteStore, embedder: Embedder, items: list[dict[str, Any]]) -> dict[str, float]:
    search = HybridSearch(store, embedder)
    search.search("warm up the vector matrix", 1)
    times = []
    for item in items:
        start = time.perf_counter()
        search.search(item["q"], 10)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return {"median": statistics.median(times), "p90": times[int(len(times) * 0.9)]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", type=Path, default=None, help="keep the store here (default: a temp file)")
    parser.add_argument("--pages", type=int, default=0, help="only the question pages + N others (0: all)")
    parser.add_argument("--embedder", default="auto", help="SKILLGRAPH_STORE_EMBEDDER (auto, or an import path)")
    parser.add_argument("--max-tokens", type=int, default=64, help="SKILLGRAPH_STORE_EMBED_MAX_TOKENS")
    parser.add_argument("--no-floor", action="store_true", help="also score every mode without the floor")
    parser.add_argument("--scale", type=int, default=0, help="also time the default search over N chunks "
                        "(the store's documents repeated under new URLs)")
    args = parser.parse_args()
    qs = questions()
    embedder = load_embedder(Settings({"SKILLGRAPH_STORE_EMBEDDER": args.embedder,
                                       "SKILLGRAPH_STORE_EMBED_MAX_TOKENS": args.max_tokens}))
    pages = library_pages()
    if args.pages:
        wanted = {p for s in ("paraphrased", "keyword") for item in qs[s] for p in item["pages"]}
        others = [p for p in pages if str(p.relative_to(PYTHON_DOCS)) not in wanted][:args.pages]
        pages = library_pages(wanted) + others
    import tempfile

    with tempfile.TemporaryDirectory(prefix="skillgraph-search-eval-") as tmp:
        path = args.store or Path(tmp) / "store.sqlite3"
        store, build = build_store(path, embedder, pages)
        docs, chunks = store.counts()
        print(f"embedder {describe(embedder)}; {docs} pages, {chunks} chunks; built now: {build['docs']} pages "
              f"in {build['seconds']:.1f}s ({build['docs_per_s']:.2f} docs/s, {build['chunks_per_s']:.1f} chunks/s)")
        for floor in (True, False) if args.no_floor else (True,):
            ranked = modes(store, embedder, floor)
            ranked["bm25"].search("warm up", 1)
            print(f"\n{'with' if floor else 'without'} the relevance floor "
                  f"({ranked['bm25'].min_similarity if floor else 'none'})")
            print(f"{'mode':<16}" + "".join(f"{s + ' R@5':>17}{'MRR':>7}" for s in ("paraphrased", "keyword"))
                  + f"{'ms/query':>10}{'nonsense hits':>15}")
            for name, search in ranked.items():
                para, key = score(search, qs["paraphrased"]), score(search, qs["keyword"])
                print(f"{name:<16}{para['recall@5']:>17.3f}{para['mrr']:>7.3f}{key['recall@5']:>17.3f}"
                      f"{key['mrr']:>7.3f}{(para['ms'] + key['ms']) / 2:>10.1f}"
                      f"{nonsense_hits(search, qs['nonsense']):>15}")
        margin = similarity_margin(modes(store, embedder, False)["hybrid lex=1"], qs["paraphrased"] + qs["keyword"],
                                   qs["nonsense"])
        print(f"\ncosine of the right page: 10th percentile {margin['right_p10']:.3f}, lowest "
              f"{margin['right_min']:.3f}; best cosine of a nonsense query {margin['nonsense_max']:.3f}")
        if args.scale:
            big = scaled_copy(store, Path(tmp) / "scaled.sqlite3", args.scale)
            lat = latency(big, embedder, qs["paraphrased"] + qs["keyword"])
            print(f"\ndefault search over {big.counts()[1]} chunks: median {lat['median']:.1f} ms, "
                  f"p90 {lat['p90']:.1f} ms per query (query embedding included)")
            big.close()
        store.close()


if __name__ == "__main__":
    main()
