"""Search quality on real docs: recall@5 and MRR per question set and split, and what nonsense finds.

Corpora (Debian doc packages, extracted with skillgraph.extract as a crawl
would, stored together in one store by a StoreWorker with the configured
embedder, as a user's store of several sites is):

* ``python``: Python 3.11 ``library/`` and ``howto/`` (python3.11-doc);
* ``postgresql``: the PostgreSQL 15 manual (postgresql-doc-15);
* ``flask``: the Flask docs (python-flask-doc); ``requests``: the Requests docs (python-requests-doc).

Questions (tests/fixtures/search/), written before the search they measure was
changed, and frozen (tests/test_search.py checks the held-out file's digest):

* ``dev.json``: what the relevance floor and the fusion were tuned on;
* ``heldout.json``: measured only to report (never tuned on); it alone holds
  the ``flask`` and ``requests`` questions, so it checks sites nothing was tuned on;
* ``heldout2``, ``heldout3``, ``heldout5``, ``heldout6``: later held-out sets, each written before the
  change it measured (docs/store.md says when), each question's first page one no earlier set targets;
* ``questions.json``: issue 15's set (python ``library/`` only), on which
  issue 15 tuned its weights: reported as ``issue15`` for continuity.

Each set has ``paraphrased`` questions (no key term of the page: "free up disk
room left behind by removed records" -> VACUUM), ``keyword`` questions (the
page's own words), ``nonsense`` (random letters, made-up terms, both mixed:
must find nothing) and ``offtopic`` (real language that no page is about:
reported). A page is ``corpus:path``; a hit on any listed page counts.

For each ranking mode and split: recall@5 (a right page among the first 5
hits), MRR (1 / rank of the first right page within 10, else 0), questions
left with no hit at all (the floor cut every hit), nonsense and off-topic
queries that found something, median ms/query. Modes: ``default`` (what
``scrapy search`` runs), ``bm25`` (lexical rankings only) and ``embedding``
(cosine only), each with the default floor; ``--no-floor`` adds them without it.
``--calibrate`` prints, for the split's questions and nonsense, the relevance
score the floor is compared with (docs/store.md says how the floor was set).

Page sets (``--pages``): ``all`` (every page of the four corpora: the
acceptance figures), ``ci`` (tests/fixtures/search/ci_pages.json: every
dev and held-out question's pages plus the pages the default search ranked
above a question's right page on ``all``, at most 3 a question, written by
``--write-ci-pages``), ``questions`` (only the questions' pages). ``--check`` compares the figures with the minimums
pinned for that page set in tests/fixtures/search/thresholds.json and exits 1
when one is below (tests/test_search.py runs it on ``ci``).

Usage: .venv/bin/python bench/search_eval.py [--pages all|ci|questions] [--split dev|heldout|heldout6 ...]
       [--store PATH] [--check] [--calibrate]
(``--store`` keeps the store between runs: pages already in it are neither extracted nor embedded again.)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
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
#: corpus -> (root folder, the globs of its pages, file names that are not pages: indexes, search, 404)
CORPORA: dict[str, tuple[Path, tuple[str, ...]]] = {
    "python": (PYTHON_DOCS, ("library/*.html", "howto/*.html")),
    "postgresql": (Path("/usr/share/doc/postgresql-doc-15/html"), ("*.html",)),
    "flask": (Path("/usr/share/doc/python-flask-doc/html"), ("*.html", "*/*.html")),
    "requests": (Path("/usr/share/doc/python-requests-doc/html"), ("*.html", "*/*.html")),
}
NOT_PAGES = ("genindex", "py-modindex", "search", "404")
FIXTURES = ROOT / "tests" / "fixtures" / "search"
SPLITS = {"dev": FIXTURES / "dev.json", "heldout": FIXTURES / "heldout.json", "heldout2": FIXTURES / "heldout2.json",
          "heldout3": FIXTURES / "heldout3.json", "heldout5": FIXTURES / "heldout5.json",
          "heldout6": FIXTURES / "heldout6.json", "issue15": FIXTURES / "questions.json"}
CI_PAGES = FIXTURES / "ci_pages.json"
THRESHOLDS = FIXTURES / "thresholds.json"
BASE_URL = "http://127.0.0.1:1/"
SETS = ("paraphrased", "keyword")


def questions(split: str = "dev") -> dict[str, Any]:
    """A split's question sets; issue 15's pages (``library/json.html``) are given their corpus (``python:``).

    A question none of whose pages is installed here (a doc package missing) is left out and counted in
    ``skipped``: it could not be answered, and the figures say so rather than crash.
    """
    data = json.loads(SPLITS[split].read_text("utf-8"))
    data["skipped"] = 0
    for name in SETS:
        for item in data[name]:
            item["pages"] = [p if ":" in p else f"python:{p}" for p in item["pages"]]
        kept = [item for item in data[name] if any(available(p) for p in item["pages"])]
        data["skipped"] += len(data[name]) - len(kept)
        data[name] = kept
    data.setdefault("offtopic", [])
    return data


def available(page: str) -> bool:
    """Is the page's file installed (its Debian doc package)?"""
    return path_of(page).is_file()


def url_of(page: str) -> str:
    corpus, path = page.split(":", 1)
    return f"{BASE_URL}{corpus}/{path}"


def page_of(url: str) -> str:
    corpus, _, path = url.removeprefix(BASE_URL).partition("/")
    return f"{corpus}:{path}"


def question_pages(*splits: dict[str, Any]) -> set[str]:
    return {p for qs in splits for s in SETS for item in qs[s] for p in item["pages"]}


def corpus_pages(corpus: str) -> list[str]:
    root, patterns = CORPORA[corpus]
    found = {f"{corpus}:{p.relative_to(root)}" for pattern in patterns for p in root.glob(pattern)
             if p.stem not in NOT_PAGES and not p.relative_to(root).parts[0].startswith("_")}
    return sorted(found)


def page_set(name: str) -> list[str]:
    """The pages of a page set that are installed here (a missing doc package leaves its pages out)."""
    if name == "all":
        return [p for corpus in CORPORA for p in corpus_pages(corpus)]
    if name == "ci":
        return [p for p in json.loads(CI_PAGES.read_text("utf-8"))["pages"] if available(p)]
    return sorted(p for p in question_pages(*(questions(s) for s in SPLITS)) if available(p))


def path_of(page: str) -> Path:
    corpus, path = page.split(":", 1)
    return CORPORA[corpus][0] / path


def document(page: str) -> dict[str, Any]:
    url = url_of(page)
    markdown = html_to_markdown(path_of(page).read_text("utf-8", errors="replace"), url)
    return {"url": url, "title": Path(page).stem, "markdown": markdown, "sha256": sha256_text(markdown)}


def build_store(path: Path, embedder: Embedder, pages: list[str],
                config: WorkerConfig | None = None) -> tuple[SqliteStore, dict[str, float]]:
    """Store the pages; pages whose URL an existing store at ``path`` already holds are skipped unread."""
    store = SqliteStore(path, embedder.name, embedder.dimension)
    worker = StoreWorker(store, embedder, config or WorkerConfig())
    have = {r[0] for r in store.db.execute("SELECT url FROM documents")}
    docs = [document(p) for p in pages if url_of(p) not in have]
    start, cpu = time.perf_counter(), time.process_time()
    for doc in docs:
        if doc["markdown"].strip():
            worker.store_document(doc)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    stored = worker.stats["skillgraph/worker/stored"] + worker.stats["skillgraph/worker/replaced"]
    chunks = worker.stats["skillgraph/worker/chunks"]
    return store, {"seconds": elapsed, "cpu_seconds": cpu, "docs": stored, "chunks": chunks,
                   "docs_per_s": stored / elapsed if stored else 0.0}


def modes(store: SqliteStore, embedder: Embedder, floor: bool = True) -> dict[str, HybridSearch]:
    kw: dict[str, Any] = {} if floor else {"min_relevance": -1.0}
    return {"default": HybridSearch(store, embedder, **kw),
            "bm25": HybridSearch(store, embedder, semantic_weight=0.0, lexical_weight=1.0, **kw),
            "embedding": HybridSearch(store, embedder, semantic_weight=1.0, lexical_weight=0.0, **kw)}


def score(search: HybridSearch, items: list[dict[str, Any]]) -> dict[str, Any]:
    """recall@5, MRR@10, questions with no hit, median ms/query, and the misses (question, first hits)."""
    found, reciprocal, empty, times, misses = 0, 0.0, 0, [], []
    for item in items:
        wanted = {url_of(p) for p in item["pages"]}
        start = time.perf_counter()
        hits = search.search(item["q"], 10)
        times.append((time.perf_counter() - start) * 1000)
        ranks = [h.rank for h in hits if h.url in wanted]
        found += bool(ranks) and ranks[0] <= 5
        reciprocal += 1 / ranks[0] if ranks else 0.0
        empty += not hits
        if not ranks or ranks[0] > 5:
            misses.append((item["q"], [page_of(h.url) for h in hits[:3]]))
    n = max(1, len(items))
    return {"recall@5": found / n, "mrr": reciprocal / n, "no_hit": empty,
            "ms": statistics.median(times) if times else 0.0, "misses": misses, "n": len(items)}


def evaluate(ranked: dict[str, HybridSearch], qs: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """mode -> {"paraphrased": figures, "keyword": figures, "nonsense_hits": n, "offtopic_hits": n, ...}."""
    out: dict[str, dict[str, Any]] = {}
    for name, search in ranked.items():
        nonsense = [q for q in qs["nonsense"] if search.search(q, 10)]
        offtopic = [q for q in qs["offtopic"] if search.search(q, 10)]
        out[name] = {**{s: score(search, qs[s]) for s in SETS}, "nonsense_hits": len(nonsense),
                     "nonsense_found": nonsense, "offtopic_hits": len(offtopic), "offtopic_found": offtopic}
    return out


def calibrate(search: HybridSearch, qs: dict[str, Any]) -> None:
    """The relevance of the right page (real questions) against the best relevance any nonsense reaches."""
    right: list[tuple[float, str]] = []
    for item in qs["paraphrased"] + qs["keyword"]:
        wanted = {url_of(p) for p in item["pages"]}
        rel = [h.relevance for h in search.search(item["q"], 10) if h.url in wanted]
        if rel:
            right.append((max(rel), item["q"]))
    right.sort()
    noise = sorted(((max((h.relevance for h in search.search(q, 10)), default=0.0), q)
                    for q in qs["nonsense"] + qs["offtopic"]), reverse=True)
    print(f"\nrelevance of the right page ({len(right)} questions found within 10, floor off): lowest "
          + ", ".join(f"{r:.3f} {q!r}" for r, q in right[:5]))
    if right:
        print(f"  10th percentile {right[len(right) // 10][0]:.3f}, median {right[len(right) // 2][0]:.3f}")
    print("best relevance of nonsense / off-topic queries: " + ", ".join(f"{r:.3f} {q!r}" for r, q in noise[:8]))


def check(figures: dict[str, dict[str, dict[str, Any]]], pinned: dict[str, Any]) -> list[str]:
    """Every figure below its pinned minimum, as a line; empty when all hold. ``figures``: split -> mode -> ..."""
    failures = []
    for split, by_mode in pinned["minimums"].items():
        if split not in figures:
            failures.append(f"{split}: not measured (add it to --split)")
            continue
        for mode, sets in by_mode.items():
            for qset, metrics in sets.items():
                for metric, minimum in metrics.items():
                    got = figures[split][mode][qset][metric]
                    if got < minimum:
                        failures.append(f"{split} {mode} {qset} {metric}: {got:.3f} < pinned {minimum}")
    for split, by_mode in figures.items():
        if by_mode["default"]["nonsense_hits"]:
            failures.append(f"{split}: nonsense queries found hits: {by_mode['default']['nonsense_found']}")
    return failures


def competing_pages(search: HybridSearch, splits: list[dict[str, Any]], per_question: int = 3) -> list[str]:
    """The questions' pages and, per question, the pages ranked above its first right page (at most 3)."""
    pages = question_pages(*splits)
    for item in (i for qs in splits for s in SETS for i in qs[s]):
        hits = [page_of(h.url) for h in search.search(item["q"], 10)]
        right = [rank for rank, page in enumerate(hits) if page in item["pages"]]
        pages.update(hits[:min(right[0] if right else per_question, per_question)])
    return sorted(pages)


def print_table(figures: dict[str, dict[str, Any]]) -> None:
    print(f"{'mode':<12}" + "".join(f"{s + ' R@5':>17}{'MRR':>7}{'no hit':>8}" for s in SETS)
          + f"{'ms/query':>10}{'nonsense hits':>15}{'offtopic hits':>15}")
    for name, f in figures.items():
        cells = "".join(f"{f[s]['recall@5']:>17.3f}{f[s]['mrr']:>7.3f}{f[s]['no_hit']:>8}" for s in SETS)
        ms = (f["paraphrased"]["ms"] + f["keyword"]["ms"]) / 2
        print(f"{name:<12}{cells}{ms:>10.1f}{f['nonsense_hits']:>15}{f['offtopic_hits']:>15}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", type=Path, default=None, help="keep the store here (default: a temp file)")
    parser.add_argument("--pages", choices=("all", "ci", "questions"), default="all")
    parser.add_argument("--split", nargs="+", choices=tuple(SPLITS), default=["dev", "heldout"])
    parser.add_argument("--embedder", default="auto", help="SKILLGRAPH_STORE_EMBEDDER (auto, or an import path)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="another setting")
    parser.add_argument("--no-floor", action="store_true", help="also score every mode without the floor")
    parser.add_argument("--modes", default=None, help="only these modes, comma-separated (default: all)")
    parser.add_argument("--misses", action="store_true", help="list the default mode's misses")
    parser.add_argument("--calibrate", action="store_true", help="relevance of right pages against nonsense")
    parser.add_argument("--check", action="store_true", help="exit 1 when a figure is below thresholds.json")
    parser.add_argument("--write-ci-pages", action="store_true", help=f"(with --pages all) write {CI_PAGES.name}")
    args = parser.parse_args(argv)
    settings = Settings({"SKILLGRAPH_STORE_EMBEDDER": args.embedder})
    for pair in args.set:
        settings.set(*pair.split("=", 1))
    embedder = load_embedder(settings)
    figures: dict[str, dict[str, dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="skillgraph-search-eval-") as tmp:
        store, build = build_store(args.store or Path(tmp) / "store.sqlite3", embedder, page_set(args.pages),
                                   WorkerConfig.from_settings(settings))
        docs, chunks = store.counts()
        print(f"embedder {describe(embedder)}; pages {args.pages}: {docs} pages, {chunks} chunks; built now: "
              f"{build['docs']} pages, {build['chunks']} chunks in {build['seconds']:.1f}s, "
              f"{build['cpu_seconds']:.1f}s CPU")
        for split in args.split:
            qs = questions(split)
            for floor in (True, False) if args.no_floor else (True,):
                ranked = modes(store, embedder, floor)
                if args.modes:
                    ranked = {name: ranked[name] for name in args.modes.split(",")}
                ranked[next(iter(ranked))].search("warm up", 1)
                floor_text = f"floor {ranked[next(iter(ranked))].min_relevance}" if floor else "no floor"
                skipped = f" ({qs['skipped']} left out: their doc package is not installed)" if qs["skipped"] else ""
                print(f"\n[{split}] {len(qs['paraphrased'])} paraphrased, {len(qs['keyword'])} keyword, "
                      f"{len(qs['nonsense'])} nonsense, {len(qs['offtopic'])} off-topic{skipped}; {floor_text}")
                table = evaluate(ranked, qs)
                print_table(table)
                if floor:
                    figures[split] = table
                    first = table[next(iter(table))]
                    if first["nonsense_found"] or first["offtopic_found"]:
                        print(f"  found something for: {first['nonsense_found'] + first['offtopic_found']}")
                    if args.misses:
                        for s in SETS:
                            for q, top in first[s]["misses"]:
                                print(f"  miss [{s}] {q!r}: {top}")
            if args.calibrate:
                calibrate(modes(store, embedder, False)["default"], qs)
        if args.write_ci_pages:
            pages = competing_pages(HybridSearch(store, embedder), [questions("dev"), questions("heldout")])
            CI_PAGES.write_text(json.dumps({"about": "bench/search_eval.py --pages ci: every page of the dev and "
                                            "heldout questions and the pages the default search ranked above a "
                                            "question's right page on all pages, at most 3 a question (written by "
                                            "--write-ci-pages)",
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
