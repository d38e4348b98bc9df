"""Search quality on real docs: recall@5 and MRR of BM25, embeddings and the hybrid, on our own question sets.

Corpus: the Python 3.11 ``library/`` pages (Debian python3.11-doc), extracted
with skillgraph.extract as a crawl would, stored by a StoreWorker (chunk ->
embed -> SQLite) with the configured embedder. Questions:
tests/fixtures/search/questions.json -- ``paraphrased`` (no key term of the
page: "benchmark which of two one-line expressions is faster" -> timeit),
``keyword`` (the page's own words) and ``nonsense`` (must find nothing).

For each ranking mode: recall@5 (a right page among the first 5 hits), MRR
(1 / rank of the first right page within 10, else 0), median ms/query. Modes:
``default`` (the embedder's own weights and floor: what ``scrapy search``
runs), ``bm25`` (phrase + word BM25), ``embedding`` (cosine alone),
``hybrid lex=W`` (cosine + W x BM25, reciprocal-rank fused) and
``hybrid@0.1`` (BM25 + 0.1 x cosine: the hashing embedder's fusion), each
with the relevance floor of the embedder; ``--no-floor`` shows them without it.

Page sets (``--pages``): ``all`` (every ``library/`` page: the acceptance
figures), ``ci`` (tests/fixtures/search/ci_pages.json: every question's pages
plus every page the default search ranked above a question's right page on
``all``, so the ranks that matter are the same at half the embedding cost;
written by ``--write-ci-pages`` from an ``all`` run), ``questions`` (only the
questions' pages). ``--check`` compares the figures with the minimums pinned
for that page set in tests/fixtures/search/thresholds.json and exits 1 when
one is below (tests/test_search.py runs it on ``ci``).

Usage: .venv/bin/python bench/search_eval.py [--pages all|ci|questions] [--store PATH] [--check]
(``--store`` keeps the store between runs: building ``all`` embeds ~5,500 chunks.)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
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
FIXTURES = ROOT / "tests" / "fixtures" / "search"
QUESTIONS = FIXTURES / "questions.json"
CI_PAGES = FIXTURES / "ci_pages.json"
THRESHOLDS = FIXTURES / "thresholds.json"
BASE_URL = "http://127.0.0.1:1/"
LEXICAL_WEIGHTS = (1.0, 0.5, 0.25, 0.1)  # BM25's vote against the embedding's 1
SETS = ("paraphrased", "keyword")


def questions() -> dict[str, Any]:
    return json.loads(QUESTIONS.read_text("utf-8"))


def question_pages(qs: dict[str, Any]) -> set[str]:
    return {p for s in SETS for item in qs[s] for p in item["pages"]}


def library_pages(names: Iterable[str] | None = None) -> list[Path]:
    """``library/*.html``, or only the named ones (``library/json.html``)."""
    if names is None:
        return sorted(PYTHON_DOCS.glob("library/*.html"))
    return [PYTHON_DOCS / n for n in sorted(set(names)) if (PYTHON_DOCS / n).is_file()]


def page_set(name: str) -> list[Path]:
    if name == "all":
        return library_pages()
    if name == "ci":
        return library_pages(json.loads(CI_PAGES.read_text("utf-8"))["pages"])
    return library_pages(question_pages(questions()))


def document(page: Path) -> dict[str, Any]:
    url = BASE_URL + str(page.relative_to(PYTHON_DOCS))
    markdown = html_to_markdown(page.read_text("utf-8"), url)
    return {"url": url, "title": page.stem, "markdown": markdown, "sha256": sha256_text(markdown)}


def build_store(path: Path, embedder: Embedder, pages: list[Path]) -> tuple[SqliteStore, dict[str, float]]:
    """Store the pages (an existing store at ``path`` is topped up: unchanged pages cost nothing)."""
    store = SqliteStore(path, embedder.name, embedder.dimension)
    worker = StoreWorker(store, embedder, WorkerConfig())
    docs = [document(p) for p in pages]
    start, cpu = time.perf_counter(), time.process_time()
    for doc in docs:
        if doc["markdown"].strip():
            worker.store_document(doc)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    stored = worker.stats["skillgraph/worker/stored"] + worker.stats["skillgraph/worker/replaced"]
    chunks = worker.stats["skillgraph/worker/chunks"]
    return store, {"seconds": elapsed, "cpu_seconds": cpu, "docs": stored, "chunks": chunks,
                   "docs_per_s": stored / elapsed if stored else 0.0,
                   "chunks_per_s": chunks / elapsed if chunks else 0.0}


def modes(store: SqliteStore, embedder: Embedder, floor: bool = True) -> dict[str, HybridSearch]:
    kw: dict[str, Any] = {} if floor else {"min_similarity": -1.0}
    out = {"default": HybridSearch(store, embedder, **kw),
           "bm25": HybridSearch(store, embedder, semantic_weight=0.0, lexical_weight=1.0, **kw),
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
    worst: list[float] = []
    for query in nonsense:
        vector = search.query_vector(query)
        worst += search.vectors.cosines(vector, search.semantic(query, 1, vector=vector)).values()
    right.sort()
    return {"right_p10": right[len(right) // 10] if right else 0.0, "right_min": right[0] if right else 0.0,
            "nonsense_max": max(worst) if worst else 0.0}


def evaluate(ranked: dict[str, HybridSearch], qs: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """mode -> {"paraphrased": figures, "keyword": figures, "nonsense_hits": n}."""
    return {name: {**{s: score(search, qs[s]) for s in SETS}, "nonsense_hits": nonsense_hits(search, qs["nonsense"])}
            for name, search in ranked.items()}


def check(figures: dict[str, dict[str, Any]], pinned: dict[str, Any]) -> list[str]:
    """Every figure below its pinned minimum, as a line; empty when all hold."""
    failures = []
    for mode, sets in pinned["minimums"].items():
        for qset, metrics in sets.items():
            for metric, minimum in metrics.items():
                got = figures[mode][qset][metric]
                if got < minimum:
                    failures.append(f"{mode} {qset} {metric}: {got:.3f} < pinned {minimum}")
    for qset, metrics in pinned.get("default_over_bm25", {}).items():  # what the model adds to BM25
        for metric, minimum in metrics.items():
            gain = figures["default"][qset][metric] - figures["bm25"][qset][metric]
            if gain < minimum:
                failures.append(f"default over bm25, {qset} {metric}: {gain:+.3f} < pinned {minimum:+}")
    if figures["default"]["nonsense_hits"]:
        failures.append(f"nonsense queries found {figures['default']['nonsense_hits']} hits (must be 0)")
    return failures


def competing_pages(search: HybridSearch, qs: dict[str, Any], per_question: int = 5) -> list[str]:
    """The questions' pages and, per question, the pages ranked above its first right page (at most 5)."""
    pages = question_pages(qs)
    for item in (i for s in SETS for i in qs[s]):
        hits = [h.url.removeprefix(BASE_URL) for h in search.search(item["q"], 10)]
        right = [rank for rank, page in enumerate(hits) if page in item["pages"]]
        pages.update(hits[:min(right[0] if right else per_question, per_question)])
    return sorted(pages)


def print_table(figures: dict[str, dict[str, Any]]) -> None:
    print(f"{'mode':<16}" + "".join(f"{s + ' R@5':>17}{'MRR':>7}" for s in SETS) + f"{'ms/query':>10}"
          f"{'nonsense hits':>15}")
    for name, f in figures.items():
        para, key = f["paraphrased"], f["keyword"]
        print(f"{name:<16}{para['recall@5']:>17.3f}{para['mrr']:>7.3f}{key['recall@5']:>17.3f}{key['mrr']:>7.3f}"
              f"{(para['ms'] + key['ms']) / 2:>10.1f}{f['nonsense_hits']:>15}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", type=Path, default=None, help="keep the store here (default: a temp file)")
    parser.add_argument("--pages", choices=("all", "ci", "questions"), default="all")
    parser.add_argument("--embedder", default="auto", help="SKILLGRAPH_STORE_EMBEDDER (auto, or an import path)")
    parser.add_argument("--max-tokens", type=int, default=48, help="SKILLGRAPH_STORE_EMBED_MAX_TOKENS")
    parser.add_argument("--no-floor", action="store_true", help="also score every mode without the floor")
    parser.add_argument("--modes", default=None, help="only these modes, comma-separated (default: all)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a figure is below thresholds.json")
    parser.add_argument("--write-ci-pages", action="store_true", help=f"(with --pages all) write {CI_PAGES.name}")
    args = parser.parse_args(argv)
    qs = questions()
    embedder = load_embedder(Settings({"SKILLGRAPH_STORE_EMBEDDER": args.embedder,
                                       "SKILLGRAPH_STORE_EMBED_MAX_TOKENS": args.max_tokens}))
    with tempfile.TemporaryDirectory(prefix="skillgraph-search-eval-") as tmp:
        store, build = build_store(args.store or Path(tmp) / "store.sqlite3", embedder, page_set(args.pages))
        docs, chunks = store.counts()
        print(f"embedder {describe(embedder)}; pages {args.pages}: {docs} pages, {chunks} chunks; built now: "
              f"{build['docs']} pages in {build['seconds']:.1f}s, {build['cpu_seconds']:.1f}s CPU "
              f"({build['docs_per_s']:.2f} docs/s, {build['chunks_per_s']:.1f} chunks/s)")
        figures: dict[str, dict[str, Any]] = {}
        for floor in (True, False) if args.no_floor else (True,):
            ranked = modes(store, embedder, floor)
            if args.modes:
                ranked = {name: ranked[name] for name in args.modes.split(",")}
            next(iter(ranked.values())).search("warm up", 1)
            print(f"\n{'with' if floor else 'without'} the relevance floor "
                  f"({ranked['default'].min_similarity if floor else 'none'})")
            table = evaluate(ranked, qs)
            print_table(table)
            figures = figures or table
        margin = similarity_margin(modes(store, embedder, False)["hybrid lex=1"], qs["paraphrased"] + qs["keyword"],
                                   qs["nonsense"])
        print(f"\ncosine of the right page: 10th percentile {margin['right_p10']:.3f}, lowest "
              f"{margin['right_min']:.3f}; best cosine of a nonsense query {margin['nonsense_max']:.3f}")
        if args.write_ci_pages:
            pages = competing_pages(HybridSearch(store, embedder), qs)
            CI_PAGES.write_text(json.dumps({"about": "bench/search_eval.py --pages ci: every question's pages and "
                                            "the pages the default search ranked above a question's right page "
                                            "on all library/ pages (written by --write-ci-pages)",
                                            "embedder": embedder.name, "pages": pages}, indent=1) + "\n")
            print(f"\nwrote {CI_PAGES.relative_to(ROOT)}: {len(pages)} pages")
        store.close()
    if args.check:
        pinned = json.loads(THRESHOLDS.read_text("utf-8")).get(args.pages)
        if pinned is None:
            print(f"\nno minimums pinned for --pages {args.pages} in {THRESHOLDS.name}")
            return 2
        failures = check(figures, pinned)
        print("\ncheck against thresholds.json [" + args.pages + "]: " + ("; ".join(failures) or "ok"))
        return 1 if failures else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
