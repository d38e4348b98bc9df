"""The knowledge store: markdown chunking, the hashing embedder, SQLite storage, hybrid search."""

from __future__ import annotations

import math
import random
import re
from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.settings import Settings

from skillgraph.extract import html_to_markdown
from skillgraph.items import sha256_text
from skillgraph.markdown import fenced_blocks
from skillgraph.store.chunk import chunk_markdown, parse_blocks
from skillgraph.store.embed import HashingEmbedder, from_blob, load_embedder
from skillgraph.store.lexical import LexicalIndex
from skillgraph.store.search import HybridSearch, content_words, fts_query
from skillgraph.store.sqlite import SqliteStore, StoreMismatchError, open_store, store_path
from skillgraph.store.vectors import VectorIndex
from skillgraph.store.worker import StoreWorker, WorkerConfig
from tests.conftest import PYTHON_DOCS

ORIGIN = "http://127.0.0.1:1/"


@cache
def python_docs_documents(count: int) -> tuple[dict[str, Any], ...]:
    """``count`` documents from the real Python docs, extracted the way a crawl does (cached per run)."""
    if not (PYTHON_DOCS / "index.html").exists():
        pytest.fail(f"{PYTHON_DOCS} missing: install Debian's python3.11-doc")
    pages = sorted(PYTHON_DOCS.glob("library/*.html"))
    docs = []
    for page in pages:
        url = ORIGIN + str(page.relative_to(PYTHON_DOCS))
        markdown = html_to_markdown(page.read_text("utf-8"), url)
        if len(markdown) < 500:
            continue
        docs.append({"url": url, "title": page.stem, "markdown": markdown, "sha256": sha256_text(markdown),
                     "fetched_at": "2026-11-29T12:00:00Z", "source": ORIGIN, "domain": "127.0.0.1",
                     "strategy": "crawl", "tier": "html", "quality": 0.9})
        if len(docs) == count:
            break
    assert len(docs) == count
    return tuple(docs)


def document(url: str, markdown: str, title: str = "") -> dict[str, Any]:
    return {"url": url, "title": title, "markdown": markdown, "sha256": sha256_text(markdown)}


def fences_balanced(text: str) -> bool:
    """Every fence opened in ``text`` is closed in it (what a reader of one chunk needs)."""
    return all(block.closed for block in fenced_blocks(text))


def words_outside_fence_lines(text: str) -> list[str]:
    return re.findall(r"\w+", "\n".join(line for line in text.splitlines() if not FENCE_LINE.match(line)))


FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})")

# -- chunking ---------------------------------------------------------------------------------------------

MARKDOWN = """# json

Intro text about JSON.

## Basic Usage

Use dumps to serialize.

```python
import json
json.dumps([1, 2])
```

### Details

More words here.

## Other

Tail.
"""


def test_chunks_carry_their_heading_path() -> None:
    chunks = chunk_markdown(MARKDOWN, "json page", max_chars=1000)
    assert [c.heading for c in chunks] == ["json", "json > Basic Usage", "json > Basic Usage > Details",
                                           "json > Other"]
    assert chunks[1].text.startswith("## Basic Usage") and "json.dumps([1, 2])\n```" in chunks[1].text
    assert [c.ordinal for c in chunks] == [0, 1, 2, 3]


def test_text_before_any_heading_takes_the_document_title() -> None:
    chunks = chunk_markdown("Just a paragraph.\n\n# Later\n\nBody.", "The Title")
    assert [c.heading for c in chunks] == ["The Title", "Later"]


def test_heading_without_body_joins_the_next_chunk() -> None:
    chunks = chunk_markdown("# A\n\n## B\n\nbody of b\n", max_chars=1000)
    assert len(chunks) == 1 and chunks[0].heading == "A > B" and chunks[0].text.startswith("# A\n\n## B")


def test_fence_is_never_split_when_it_fits_even_if_the_chunk_must_end_early() -> None:
    code = "```js\n" + "\n".join(f"let v{i} = {i};" for i in range(20)) + "\n```"
    markdown = "# T\n\n" + "word " * 50 + "\n\n" + code + "\n\nafter\n"
    chunks = chunk_markdown(markdown, max_chars=len(code) + 20)
    assert any(code in c.text for c in chunks), "the whole block is in one chunk"
    assert all(fences_balanced(c.text) for c in chunks)


def test_oversized_fence_is_split_on_lines_and_refenced_with_its_info_string() -> None:
    body = [f"    value_{i} = compute({i})  # line {i}" for i in range(200)]
    markdown = "# Big\n\n~~~~python title=x\n" + "\n".join(body) + "\n~~~~\n"
    chunks = chunk_markdown(markdown, max_chars=600)
    assert len(chunks) > 5
    inner: list[str] = []
    for chunk in chunks:
        assert len(chunk.text) <= 600 + len("# Big\n\n")
        code = chunk.text.split("\n", 2)[2] if chunk.text.startswith("# Big") else chunk.text
        lines = code.splitlines()
        assert lines[0] == "~~~~python title=x" and lines[-1] == "~~~~", "each piece fenced like the original"
        inner += lines[1:-1]
    assert inner == body, "no line lost, duplicated or reordered"


def test_long_paragraph_is_cut_between_words() -> None:
    words = [f"w{i}" for i in range(1000)]
    chunks = chunk_markdown(" ".join(words), max_chars=300)
    assert all(len(c.text) <= 300 for c in chunks)
    assert " ".join(c.text for c in chunks).split() == words


def test_overlap_repeats_the_last_paragraph_within_a_section_only() -> None:
    paragraphs = [f"Paragraph {i} " + "x" * 80 for i in range(6)]
    markdown = "# S\n\n" + "\n\n".join(paragraphs) + "\n\n# Next\n\nother"
    plain = chunk_markdown(markdown, max_chars=300)
    overlapped = chunk_markdown(markdown, max_chars=300, overlap=120)
    assert not any(a.text.split("\n\n")[-1] == b.text.split("\n\n")[0] for a, b in pairwise(plain))
    same_section = [(a, b) for a, b in pairwise(overlapped) if a.heading == b.heading]
    assert same_section and all(a.text.split("\n\n")[-1] == b.text.split("\n\n")[0] for a, b in same_section)
    assert overlapped[-1].text == "# Next\n\nother", "no overlap across a heading"


def test_chunker_never_splits_a_fence_over_fifty_python_docs_pages() -> None:
    docs = python_docs_documents(50)
    fenced_blocks = 0
    for doc in docs:
        chunks = chunk_markdown(doc["markdown"], doc["title"], max_chars=800)
        assert chunks, doc["url"]
        texts = [c.text for c in chunks]
        for chunk in chunks:
            assert fences_balanced(chunk.text), (doc["url"], chunk.ordinal)
            assert len(chunk.text) <= 800 or chunk.text.count("\n") == 0 or chunk.text.lstrip().startswith("#"), \
                (doc["url"], len(chunk.text))
        for block in parse_blocks(doc["markdown"]):
            if block.kind == "code":
                fenced_blocks += 1
                if len(block.text) <= 800:
                    assert any(block.text in t for t in texts), (doc["url"], block.text[:80])
        assert words_outside_fence_lines("\n".join(texts)) == words_outside_fence_lines(doc["markdown"]), \
            "no text lost or duplicated (fence lines aside: an oversized block is re-fenced per piece)"
    assert fenced_blocks > 200


# -- embedding --------------------------------------------------------------------------------------------

def test_hashing_embedder_is_deterministic_normalised_and_lexical() -> None:
    a, b = HashingEmbedder(256), HashingEmbedder(256)
    texts = ["serialize objects with json.dumps", "json.dumps serializes objects", "sockets and networking"]
    va, vb = a.embed(texts), b.embed(texts)
    assert [list(v) for v in va] == [list(v) for v in vb]
    assert all(math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, rel_tol=1e-5) for v in va)

    def cos(x: Any, y: Any) -> float:
        return sum(p * q for p, q in zip(x, y, strict=True))

    assert cos(va[0], va[1]) > cos(va[0], va[2])
    assert a.name == "hashing-v1-256" and len(va[0]) == 256
    assert list(a.embed([""])[0]) == [0.0] * 256


def test_embedder_comes_from_the_setting() -> None:
    embedder = load_embedder(Settings({"SKILLGRAPH_STORE_EMBEDDER": "skillgraph.store.embed.HashingEmbedder",
                                       "SKILLGRAPH_STORE_EMBED_DIM": 64}))
    assert isinstance(embedder, HashingEmbedder) and embedder.dimension == 64
    with pytest.raises(NotConfigured, match="needs name, dimension"):
        load_embedder(Settings({"SKILLGRAPH_STORE_EMBEDDER": "collections.OrderedDict"}))


# -- storage ----------------------------------------------------------------------------------------------

def test_store_url_scheme_is_checked() -> None:
    assert store_path("sqlite:///store.sqlite3") == Path("store.sqlite3")
    assert store_path("sqlite:////tmp/a/store.sqlite3") == Path("/tmp/a/store.sqlite3")
    for url in ("postgresql://u@127.0.0.1/db", "store.sqlite3", "sqlite://"):
        with pytest.raises(NotConfigured, match="supported: sqlite:///"):
            store_path(url)


def test_store_refuses_another_embedders_vectors(tmp_path: Path) -> None:
    SqliteStore(tmp_path / "s.sqlite3", "hashing-v1-64", 64).close()
    with pytest.raises(StoreMismatchError, match="hashing-v1-64/64"):
        SqliteStore(tmp_path / "s.sqlite3", "hashing-v1-128", 128)
    with pytest.raises(NotConfigured, match="run `scrapy worker` first"):
        open_store(Settings({"SKILLGRAPH_STORE_URL": f"sqlite:///{tmp_path}/none.sqlite3"}), "x", 8, must_exist=True)


def worker_for(path: Path, dim: int = 256, chunk_chars: int = 1500) -> StoreWorker:
    embedder = HashingEmbedder(dim)
    return StoreWorker(SqliteStore(path, embedder.name, dim), embedder, WorkerConfig(chunk_chars=chunk_chars))


def test_same_sha_is_a_noop_and_a_new_sha_replaces_chunks_atomically(tmp_path: Path) -> None:
    worker = worker_for(tmp_path / "s.sqlite3", chunk_chars=200)
    store = worker.store
    url = ORIGIN + "page.html"
    first = document(url, "# Page\n\n" + "\n\n".join(f"old paragraph {i} zebrafish" for i in range(20)))
    assert worker.store_document(first) == "stored"
    docs, chunks = store.counts()
    assert docs == 1 and chunks >= 3
    ids = [r[0] for r in store.db.execute("SELECT id FROM chunks")]
    assert worker.store_document(dict(first)) == "unchanged"
    assert [r[0] for r in store.db.execute("SELECT id FROM chunks")] == ids, "nothing rewritten"

    second = document(url, "# Page\n\nnew text about okapis")
    assert worker.store_document(second) == "replaced"
    assert store.counts() == (1, 1)
    assert store.db.execute("SELECT count(*) FROM chunks_fts").fetchone()[0] == 1
    search = HybridSearch(store, worker.embedder)
    assert search.lexical("zebrafish") == []
    assert [h.url for h in search.search("okapis")] == [url]
    blob = store.db.execute("SELECT embedding FROM chunks").fetchone()[0]
    assert len(from_blob(blob)) == 256
    assert worker.stats["skillgraph/worker/stored"] == worker.stats["skillgraph/worker/replaced"] == 1
    assert worker.stats["skillgraph/worker/unchanged"] == 1


def test_a_failed_put_leaves_the_previous_version(tmp_path: Path) -> None:
    worker = worker_for(tmp_path / "s.sqlite3")
    url = ORIGIN + "p.html"
    worker.store_document(document(url, "# P\n\nfirst version"))
    chunks = chunk_markdown("# P\n\nsecond version\n\n## more\n\ntext")
    with pytest.raises(ValueError, match="dimension"):
        worker.store.put(document(url, "# P\n\nsecond"), chunks, [[1.0] * 256, [1.0] * 3])
    assert worker.store.stored_sha(url) == sha256_text("# P\n\nfirst version")
    assert worker.store.counts() == (1, 1)


# -- search -----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def docs_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[StoreWorker, tuple[dict[str, Any], ...]]:
    docs = python_docs_documents(60)
    worker = worker_for(tmp_path_factory.mktemp("store") / "s.sqlite3", dim=1024)
    for doc in docs:
        worker.store_document(doc)
    assert worker.store.counts()[0] == 60
    return worker, docs


def test_search_finds_the_page_of_a_unique_phrase_top1(docs_store: tuple[StoreWorker, Any]) -> None:
    worker, docs = docs_store
    search = HybridSearch(worker.store, worker.embedder)
    rng = random.Random(7)
    checked = 0
    for doc in rng.sample(list(docs), 10):
        prose = [b.text for b in parse_blocks(doc["markdown"]) if b.kind == "text" and len(b.text.split()) > 12
                 and "](" not in b.text and "`" not in b.text]
        if not prose:
            continue
        phrase = " ".join(rng.choice(prose).split()[:8])
        others = [d for d in docs if d is not doc and phrase in d["markdown"]]
        if others:
            continue
        hits = search.search(phrase, 5)
        assert hits and hits[0].url == doc["url"], (phrase, [h.url for h in hits])
        checked += 1
    assert checked >= 5


def test_search_finds_code_identifiers_top1(docs_store: tuple[StoreWorker, Any]) -> None:
    """Dotted names used in code blocks of exactly one page (``base64.b85encode``) find that page first."""
    worker, docs = docs_store
    search = HybridSearch(worker.store, worker.embedder)
    owners: dict[str, set[str]] = {}
    for doc in docs:
        code = "\n".join(b.text for b in parse_blocks(doc["markdown"]) if b.kind == "code")
        for name in re.findall(r"\b[a-z]\w+\.[a-z_]\w{5,}\b", code):
            owners.setdefault(name, set()).add(doc["url"])
    unique = sorted(name for name, urls in owners.items() if len(urls) == 1
                    and not any(name in d["markdown"].lower() for d in docs if d["url"] not in urls))
    assert len(unique) > 50
    for name in random.Random(3).sample(unique, 15):
        hits = search.search(name, 3)
        assert hits[0].url in owners[name], (name, [h.url for h in hits])
        assert name.split(".")[1] in hits[0].snippet, (name, hits[0].snippet)
    hit = search.search("asyncio.create_subprocess_exec", 1)[0]
    assert "create_subprocess_exec" in hit.snippet


def test_query_syntax_is_never_fts5_syntax(docs_store: tuple[StoreWorker, Any]) -> None:
    worker, _ = docs_store
    search = HybridSearch(worker.store, worker.embedder)
    assert fts_query('NEAR(a b) OR "x" * -y') == '"near" OR "b" OR "x" OR "y"', "quoted; stopwords left out"
    assert fts_query("to be or not") == '"to" OR "be" OR "or" OR "not"', "unless nothing else is left"
    assert fts_query("open the file", frozenset({"file"})) == '"open"', "common words left out too"
    assert search.search('"unbalanced (quote* AND', 3) is not None
    assert search.search("   ", 3) == []


def test_relevance_is_cosine_plus_word_coverage_and_ranks_the_hits(docs_store: tuple[StoreWorker, Any]) -> None:
    """Hits come by relevance = semantic weight x cosine + lexical weight x IDF-weighted word coverage."""
    worker, docs = docs_store
    search = HybridSearch(worker.store, worker.embedder)
    assert (search.semantic_weight, search.lexical_weight) == (0.1, 1.0), "the hashing embedder's: words first"
    lexical_only = HybridSearch(worker.store, worker.embedder, semantic_weight=0)
    rng = random.Random(11)
    for doc in rng.sample(list(docs), 12):
        body = " ".join(r[0] for r in worker.store.db.execute(
            "SELECT body FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE url = ?)", (doc["url"],)))
        query = " ".join(rng.sample(re.findall(r"\b[a-z]{5,}\b", body.lower()), 3))  # words the index holds
        hits = search.search(query, 60)
        assert hits, query
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True), query
        assert search.text.known_share(content_words(query)) == 1.0, query
        for hit in hits:
            assert hit.score == pytest.approx(0.1 * hit.similarity + hit.coverage, abs=1e-3), (query, hit)
            assert 0.0 <= hit.coverage <= 1.0 and hit.score >= search.min_relevance
        assert any(h.url == doc["url"] for h in hits), "the page the words come from is a hit"
        assert all(h.semantic_rank is None for h in lexical_only.search(query, 10)), "weight 0: no embedding"


def test_a_word_held_by_one_page_puts_it_first_and_unknown_words_match_nothing(
        docs_store: tuple[StoreWorker, Any]) -> None:
    worker, docs = docs_store
    search = HybridSearch(worker.store, worker.embedder)
    text = search.text
    held: dict[str, set[str]] = {}
    for doc in docs:
        for word in set(re.findall(r"\b[a-z]{9,}\b", doc["markdown"].lower())):
            held.setdefault(word, set()).add(doc["url"])
    rare = sorted(w for w, urls in held.items() if len(urls) == 1)
    common = max(held, key=lambda w: len(held[w]))
    idf = text.idf([rare[0], common, "qwxzvblorf"])
    assert idf["qwxzvblorf"] > idf[rare[0]] > idf[common] > 0, "BM25's IDF; a word no chunk holds weighs most"
    for word in random.Random(5).sample(rare, 8):
        hits = search.search(f"{common} {word}", 5)
        assert hits[0].url in held[word], (word, [h.url for h in hits])
    assert text.known_share(["qwxzv", "blorf"]) == 0.0 and text.known_share([common, "qwxzv"]) == 0.5
    for nonsense in ("qwxzv blorf", "zzzxqy qqqwv", "Flimflam.dezorbulate()"):
        assert search.search(nonsense) == [], nonsense
    half = search.search(f"{common} qwxzvblorf", 60)
    assert half, "the known word still finds pages"
    for hit in half:  # half the query is unknown to the store: half the relevance
        assert hit.score == pytest.approx(0.5 * (0.1 * hit.similarity + hit.coverage), abs=1e-3), hit


# -- the vector index and the word ranking of large stores -------------------------------------------------

def brute_force(store: SqliteStore, query: Any) -> list[int]:
    """Chunk ids by cosine, best first: the stored blobs one by one, as plain Python (the reference)."""
    rows = store.db.execute("SELECT id, embedding FROM chunks").fetchall()
    scored = [(sum(a * b for a, b in zip(from_blob(blob), query, strict=True)), cid) for cid, blob in rows]
    return [cid for score, cid in sorted(scored, key=lambda sc: (-sc[0], sc[1])) if score > 0]


def test_vector_index_is_exact_and_reads_the_store_only_when_it_changed(tmp_path: Path) -> None:
    worker = worker_for(tmp_path / "s.sqlite3", dim=1024)
    for doc in python_docs_documents(12):
        worker.store_document(doc)
    store, embedder = worker.store, worker.embedder
    index, loop = VectorIndex(store), VectorIndex(store, use_numpy=False)
    for query in ("encode binary data as text", "parse command line arguments", "zzzxqy"):
        q = embedder.embed_one(query)
        expected = brute_force(store, q)[:20]
        assert index.top(q, 20) == loop.top(q, 20) == expected, query
        cosines = index.cosines(q, [*expected[:5], 10**9])  # an id not stored is left out
        assert list(cosines) == expected[:5] and all(a >= b for a, b in pairwise(cosines.values()))
    allowed = {cid for (cid,) in store.db.execute("SELECT id FROM chunks WHERE url LIKE '%/base64.html'")}
    q = embedder.embed_one("encode binary data as text")
    assert index.top(q, 5, allowed) == [c for c in brute_force(store, q) if c in allowed][:5]
    assert index.top(q, 5, set()) == []
    assert index.loads == 1, "queries reuse the matrix"

    other = SqliteStore(store.path, embedder.name, embedder.dimension)  # another process's connection
    StoreWorker(other, embedder, WorkerConfig()).store_document(document(ORIGIN + "new.html", "# New\n\nokapi"))
    other.close()
    okapi = embedder.embed_one("okapi")
    new_id = store.db.execute("SELECT id FROM chunks WHERE url = ?", (ORIGIN + "new.html",)).fetchone()[0]
    assert index.top(okapi, 1) == [new_id] and index.loads == 2, "a commit elsewhere is seen"
    before = index.cosines(okapi, [new_id])[new_id]
    worker.store_document(document(ORIGIN + "new.html", "# New\n\nokapis only"))  # replaced on this connection
    assert index.top(okapi, 1) == brute_force(store, okapi)[:1] and index.loads == 3, "and one made here"
    (replaced,) = store.db.execute("SELECT id FROM chunks WHERE url = ?", (ORIGIN + "new.html",)).fetchone()
    assert index.cosines(okapi, [replaced]).get(replaced, 0.0) < before, "the new vector, even under a reused id"
    assert index.loads == 3


def test_words_most_chunks_hold_leave_the_word_ranking_of_a_large_store(docs_store: tuple[StoreWorker, Any]
                                                                        ) -> None:
    worker, _ = docs_store
    store = worker.store
    chunks = store.counts()[1]
    assert LexicalIndex(store).common_words() == frozenset(), f"{chunks} chunks: below COMMON_MIN_CHUNKS"
    text = LexicalIndex(store, common_share=0.1, min_chunks=100)
    common = text.common_words()
    held = {word: store.db.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?",
                                   (f'"{word}"',)).fetchone()[0] for word in ("function", "object", "base64")}
    assert {w for w, n in held.items() if n > 0.1 * chunks} == {"function", "object"} <= common
    assert "base64" not in common
    assert fts_query("encode an object with base64", common) == '"encode" OR "base64"'
    assert text.words("function object", 10), "a query of common words only still ranks by them"
    everything = LexicalIndex(store, common_share=1.0, min_chunks=100)
    assert text.words("base64 encode", 5) == everything.words("base64 encode", 5)
