"""Search quality gate (bench/search_eval.py --check on real docs), the relevance floor, graph files, --graph,
--reembed.

The gate runs bench/search_eval.py on its ``ci`` page set: every page the 86 questions of
tests/fixtures/search/questions.json name, plus the pages the default search ranks above a
question's right page on all 317 Python 3.11 ``library/`` pages (tests/fixtures/search/ci_pages.json),
extracted and stored with the default neural embedder. Minimums are in
tests/fixtures/search/thresholds.json; the run over every page is in BENCHMARKS.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from scrapy.settings import Settings

from bench.search_eval import PYTHON_DOCS, build_store, check, document, page_set, questions
from skillgraph.store.embed import HashingEmbedder, load_embedder
from skillgraph.store.minilm import MiniLMEmbedder
from skillgraph.store.search import HybridSearch
from skillgraph.store.sqlite import SqliteStore
from skillgraph.store.worker import StoreWorker, WorkerConfig
from tests.conftest import ROOT, run_scrapy

THRESHOLDS = json.loads((ROOT / "tests" / "fixtures" / "search" / "thresholds.json").read_text())
GRAPH = "docs.python.org_3_library"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("search")
    embedder = load_embedder(Settings())
    store, _ = build_store(root / "store.sqlite3", embedder, page_set("ci"))
    # a graph holding every stored page but csv.html (to see hits outside any graph and the --graph filter)
    graph = root / "graphs" / GRAPH
    graph.mkdir(parents=True)
    pages = [{"url": url, "file": url.rsplit("/", 1)[1].replace(".html", ".md")}
             for (url,) in store.db.execute("SELECT url FROM documents") if not url.endswith("/csv.html")]
    (graph / "sources.json").write_text(json.dumps({"name": GRAPH, "pages": pages}))
    return {"root": root, "store": store, "embedder": embedder, "nonsense": questions()["nonsense"],
            "args": ["-s", f"SKILLGRAPH_STORE_URL=sqlite:///{root / 'store.sqlite3'}",
                     "-s", f"SKILLGRAPH_GRAPHS_DIR={root / 'graphs'}"]}


def test_default_embedder_is_the_neural_model(corpus: dict[str, Any]) -> None:
    assert isinstance(corpus["embedder"], MiniLMEmbedder)
    vectors = corpus["embedder"].embed(["How do I pretty print JSON?", "json.dumps with indent=4 formats output",
                                        "The cat sat on the mat"])
    assert vectors.shape == (3, 384)
    assert abs(float(vectors[2] @ vectors[2]) - 1.0) < 1e-4
    assert float(vectors[0] @ vectors[1]) > 0.5 > 0.1 > float(vectors[0] @ vectors[2])


def test_search_eval_check_passes_on_the_ci_pages(corpus: dict[str, Any]) -> None:
    """The bench itself, as CI runs it (on the store the fixture built: every page is unchanged, none embedded)."""
    proc = subprocess.run([sys.executable, "bench/search_eval.py", "--pages", "ci", "--check",
                           "--modes", "default,bm25,embedding", "--store", str(corpus["root"] / "store.sqlite3")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "built now: 0 pages" in proc.stdout, "the fixture's store has every ci page"
    assert "check against thresholds.json [ci]: ok" in proc.stdout
    default = HybridSearch(corpus["store"], corpus["embedder"])
    for query in corpus["nonsense"]:
        assert default.search(query) == [], query


def test_the_check_fails_below_a_minimum() -> None:
    good = {"recall@5": 1.0, "mrr": 1.0}
    figures: dict[str, Any] = {mode: {"paraphrased": dict(good), "keyword": dict(good), "nonsense_hits": 0}
                               for mode in ("default", "bm25", "embedding")}
    figures["bm25"]["paraphrased"]["recall@5"] = 0.5
    assert check(figures, THRESHOLDS["ci"]) == []
    figures["default"]["paraphrased"]["recall@5"] = 0.8
    figures["default"]["nonsense_hits"] = 2
    assert check(figures, THRESHOLDS["ci"]) == ["default paraphrased recall@5: 0.800 < pinned 0.85",
                                                "nonsense queries found 2 hits (must be 0)"]
    assert check(figures, THRESHOLDS["all"]) == ["nonsense queries found 2 hits (must be 0)"]
    figures["default"]["paraphrased"]["recall@5"] = 0.52
    assert "default over bm25, paraphrased recall@5: +0.020 < pinned +0.04" in check(figures, THRESHOLDS["ci"])


def test_scrapy_search_nonsense_says_so_and_exits_1(corpus: dict[str, Any]) -> None:
    proc = run_scrapy(["search", "zzzxqy qqqwv", *corpus["args"]], timeout=120)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.strip().splitlines()[-1].startswith("scrapy search: no results for 'zzzxqy qqqwv'")


def test_scrapy_search_names_graph_file_and_embedder_and_filters_by_graph(corpus: dict[str, Any]) -> None:
    proc = run_scrapy(["search", "pretty print JSON with indentation", "-n", "3", *corpus["args"]], timeout=120)
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.split("\n 2. ")[0]
    assert "library/json.html" in first and f"graph: {GRAPH}/json.md" in first
    assert "embedder all-minilm-l6-v2-int8-48tok (neural)" in proc.stderr

    query = ["search", "read a spreadsheet exported with commas into rows", "--json"]
    everywhere = [json.loads(line) for line in run_scrapy([*query, *corpus["args"]], timeout=120).stdout.splitlines()]
    assert everywhere[0]["url"].endswith("/csv.html") and everywhere[0]["graph"] is None
    only = run_scrapy([*query, "--graph", GRAPH, *corpus["args"]], timeout=120)
    hits = [json.loads(line) for line in only.stdout.splitlines()]
    assert hits and all(h["graph"] == GRAPH for h in hits)
    assert not any(h["url"].endswith("/csv.html") for h in hits)
    unknown = run_scrapy(["search", "json", "--graph", "nope", *corpus["args"]], timeout=120)
    assert unknown.returncode == 1 and unknown.stdout == "" and "no graph 'nope'" in unknown.stderr


def test_a_model_change_is_refused_until_reembed(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    store = SqliteStore(path, "hashing-v1-1024", 1024)
    worker = StoreWorker(store, HashingEmbedder(1024), WorkerConfig())
    for name in ("json", "pickle", "timeit"):
        worker.store_document(document(PYTHON_DOCS / "library" / f"{name}.html"))
    chunks = store.counts()[1]
    store.close()
    args = ["-s", f"SKILLGRAPH_STORE_URL=sqlite:///{path}", "-s", f"SKILLGRAPH_GRAPHS_DIR={tmp_path}/graphs"]
    refused = run_scrapy(["search", "benchmark a one-line expression", *args], timeout=120)
    assert refused.returncode == 1 and refused.stdout == ""
    assert "hashing-v1-1024/1024" in refused.stderr and "scrapy worker --reembed" in refused.stderr
    refused = run_scrapy(["worker", "--from-items", str(tmp_path), *args], timeout=120)
    assert refused.returncode == 2 and "scrapy worker --reembed" in refused.stderr, "no silent mixing"

    done = run_scrapy(["worker", "--reembed", *args], timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"re-embedded {chunks} chunks" in done.stderr and "-> all-minilm-l6-v2-int8-48tok/384" in done.stderr
    found = run_scrapy(["search", "benchmark which of two one-line expressions is faster", "--json", *args],
                       timeout=120)
    assert found.returncode == 0 and json.loads(found.stdout.splitlines()[0])["url"].endswith("/timeit.html")
    again = run_scrapy(["worker", "--reembed", *args], timeout=120)
    assert again.returncode == 0 and "nothing to do" in again.stderr


def test_auto_falls_back_to_hashing_when_the_model_packages_are_missing() -> None:
    code = ("import sys, logging; logging.basicConfig(level=logging.WARNING); sys.modules['onnxruntime'] = None\n"
            "from scrapy.settings import Settings\nfrom skillgraph.store.embed import load_embedder, describe\n"
            "print(describe(load_embedder(Settings({'SKILLGRAPH_STORE_EMBEDDER': 'auto'}))))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "hashing-v1-1024 (hashing fallback, words only)"
    assert "The neural embedder is not available" in proc.stderr
