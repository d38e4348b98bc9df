"""Hybrid search: candidates from BM25 and from embedding cosine, scored by meaning plus word evidence, floored.

Candidates: the chunks FTS5 BM25 ranks best for the query as an exact phrase
and for its words (:mod:`skillgraph.store.lexical`), and the chunks nearest
to the query's embedding (:class:`skillgraph.store.vectors.VectorIndex`: one
matrix-vector product over every stored vector). Each candidate chunk gets
one **relevance** on one scale:

    relevance = semantic_weight x cosine + lexical_weight x coverage

``cosine`` is between the query's and the chunk's embeddings; ``coverage``
(0..1) is the share of the query's words the chunk holds (heading path
included), each word weighted by its IDF in the store (BM25's IDF, from
FTS5's vocabulary; stopwords left out unless nothing else is left; a word no
chunk holds has the largest IDF). So when the query's words are not on a
page (a paraphrase), coverage is ~0 for every candidate and meaning alone
ranks; when they are, the pages holding the rare ones move up, and a rare
identifier held by one page puts it first. A document ranks by its best
chunk, which gives the heading path and the snippet.

Why not reciprocal-rank fusion (issue 15's): ranks throw away how close a
chunk is, so RRF could not tell "best of a bad lot" from a real match: no
floor on fused ranks separated nonsense from questions. One score that is
both the ranking and the floor does (bench/search_eval.py --calibrate).

**Relevance floor.** A document is a hit only when its relevance reaches the
floor (``SKILLGRAPH_STORE_MIN_RELEVANCE``; by default the embedder's
``min_relevance``). Nonsense ("qwxzv blorf") has no word in the store
(coverage 0) and a low cosine: nothing is a hit, and ``scrapy search`` says so.
The floor was set on the dev questions and checked on held-out ones
(docs/store.md).

``graph`` restricts every ranking to the pages of one skill graph.
"""

from __future__ import annotations

import re
from array import array
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from skillgraph.store.chunk import plain_text
from skillgraph.store.embed import STOPWORDS, Embedder, normalise
from skillgraph.store.graphs import GraphIndex
from skillgraph.store.lexical import LexicalIndex, fts_query, query_words
from skillgraph.store.sqlite import SqliteStore
from skillgraph.store.vectors import VectorIndex

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

__all__ = ["Hit", "HybridSearch", "fts_query", "query_words", "search_from_settings", "snippet"]

SNIPPET_CHARS = 200


@dataclass
class Hit:
    rank: int
    score: float  # the relevance of the best chunk (what the floor is compared with)
    url: str
    title: str | None
    heading: str
    snippet: str
    lexical_rank: int | None  # the document's rank by BM25 of the query's words (None: not among its candidates)
    semantic_rank: int | None  # its rank by cosine (None: not among the nearest chunks)
    similarity: float = 0.0  # cosine of the best chunk
    graph: str | None = None  # the skill graph and file holding the page, when a graph holds it
    file: str | None = None
    coverage: float = 0.0  # IDF-weighted share of the query's words the best chunk holds

    @property
    def relevance(self) -> float:
        return self.score

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def snippet(text: str, query: str, width: int = SNIPPET_CHARS) -> str:
    """A window of the chunk's plain text around the query as a phrase, else around its first word there."""
    flat = re.sub(r"\s+", " ", plain_text(text)).strip()
    words = query_words(query)
    found = re.search(r"\W+".join(map(re.escape, words)), flat, re.IGNORECASE) if words else None
    lower = flat.lower()
    positions = [found.start()] if found else [p for p in (lower.find(w) for w in words) if p >= 0]
    start = max(0, min(positions) - width // 4) if positions else 0
    piece = flat[start:start + width]
    return ("…" if start else "") + piece + ("…" if start + width < len(flat) else "")


def content_words(query: str) -> list[str]:
    """The query's distinct words without stopwords (all of them when nothing else is left)."""
    words = list(dict.fromkeys(query_words(query)))
    return [w for w in words if w not in STOPWORDS] or words


class HybridSearch:
    def __init__(self, store: SqliteStore, embedder: Embedder, candidates: int = 50,
                 semantic_weight: float | None = None, min_relevance: float | None = None,
                 graphs: GraphIndex | None = None, lexical_weight: float | None = None) -> None:
        self.store = store
        self.embedder = embedder
        self.candidates = candidates
        #: of the cosine in the relevance (0: BM25 ranks, the floor still applies)
        self.semantic_weight = (float(getattr(embedder, "semantic_weight", 1.0))
                                if semantic_weight is None else semantic_weight)
        #: of the coverage in the relevance (0: meaning alone)
        self.lexical_weight = (float(getattr(embedder, "lexical_weight", 0.25))
                               if lexical_weight is None else lexical_weight)
        self.min_relevance = (float(getattr(embedder, "min_relevance", 0.0))
                              if min_relevance is None else min_relevance)
        self.graphs = graphs
        self.vectors = VectorIndex(store)
        self.text = LexicalIndex(store)

    def lexical(self, query: str, limit: int | None = None, urls: list[str] | None = None) -> list[int]:
        """Chunk ids by BM25 over the query's words (:meth:`LexicalIndex.words`)."""
        return self.text.words(query, limit or self.candidates, urls)

    def phrase(self, query: str, limit: int | None = None, urls: list[str] | None = None) -> list[int]:
        """Chunk ids holding the query as a phrase, by BM25 (:meth:`LexicalIndex.phrase`)."""
        return self.text.phrase(query, limit or self.candidates, urls)

    def query_vector(self, query: str) -> array[float]:
        embed = getattr(self.embedder, "embed_query", self.embedder.embed)  # a model may read queries otherwise
        return normalise(embed([query])[0])

    def semantic(self, query: str, limit: int | None = None, urls: list[str] | None = None,
                 vector: array[float] | None = None) -> list[int]:
        """Chunk ids by cosine between the query's and the chunks' embeddings, best first."""
        q = self.query_vector(query) if vector is None else vector
        return self.vectors.top(q, limit or self.candidates, self._chunk_ids(urls) if urls is not None else None)

    def _chunk_ids(self, urls: list[str]) -> set[int]:
        if not urls:
            return set()
        marks = ",".join("?" * len(urls))
        return {r[0] for r in self.store.db.execute(f"SELECT id FROM chunks WHERE url IN ({marks})", urls)}

    def graph_urls(self, graph: str) -> list[str]:
        """The URLs of one graph's pages (empty when there is no such graph)."""
        return [p.url for p in self.graphs.pages(graph)] if self.graphs else []

    def coverage(self, words: list[str], rows: dict[int, tuple[str, str, str, str | None]],
                 idf: dict[str, float]) -> dict[int, float]:
        """chunk id -> IDF-weighted share of ``words`` its heading path and text hold."""
        total = sum(idf.values())
        if not words or total <= 0:
            return dict.fromkeys(rows, 0.0)
        # one pass of one pattern over each chunk (not a word set of every chunk: ~150 candidates a query)
        pattern = re.compile(r"(?<!\w)(" + "|".join(map(re.escape, idf)) + r")(?!\w)", re.IGNORECASE)
        out = {}
        for cid, (_, heading, text, _) in rows.items():
            held = {m.lower() for m in pattern.findall(f"{heading}\n{plain_text(text)}")}
            out[cid] = sum(idf[word] for word in held if word in idf) / total
        return out

    def search(self, query: str, limit: int = 10, graph: str | None = None) -> list[Hit]:
        if not query_words(query):
            return []
        urls = self.graph_urls(graph) if graph else None
        if urls is not None and not urls:
            return []
        vector = self.query_vector(query)
        phrase, lexical = self.phrase(query, urls=urls), self.lexical(query, urls=urls)
        semantic = self.semantic(query, urls=urls, vector=vector) if self.semantic_weight > 0 else []
        candidates = list(dict.fromkeys(phrase + lexical + semantic))
        rows = self.store.chunk_rows(candidates)
        cosine = self.vectors.cosines(vector, candidates)
        words = content_words(query)
        idf = self.text.idf(words)
        covered = self.coverage(words, rows, idf)
        known = self.text.known_share(words)  # the share of the query the store has ever seen

        def relevance(cid: int) -> float:
            return known * (self.semantic_weight * cosine.get(cid, 0.0) + self.lexical_weight * covered.get(cid, 0.0))

        def by_document(ranking: list[int]) -> dict[str, int]:
            """url -> rank of the document: a document ranks where its best chunk does."""
            ranks: dict[str, int] = {}
            for cid in ranking:
                if cid in rows:  # else replaced between the queries
                    ranks.setdefault(rows[cid][0], len(ranks) + 1)
            return ranks

        best: dict[str, tuple[float, int]] = {}  # url -> (relevance, chunk) of its best candidate chunk
        for cid in candidates:
            if cid in rows:
                url, score = rows[cid][0], relevance(cid)
                if url not in best or score > best[url][0]:
                    best[url] = (score, cid)
        lex, sem = by_document(lexical), by_document(semantic)
        if self.semantic_weight > 0:
            order = sorted(best, key=lambda u: (-best[u][0], u))
        else:  # BM25 alone ranks (the phrase, then the words); the floor still decides what is a hit
            lexical_order = by_document(phrase + lexical)
            order = sorted(lexical_order, key=lambda u: lexical_order[u])
        located = self.graphs.by_url() if self.graphs else {}
        hits: list[Hit] = []
        for url in order:
            score, cid = best[url]
            if score < self.min_relevance:
                continue
            _, heading, text, title = rows[cid]
            page = located.get(url)
            hits.append(Hit(len(hits) + 1, round(score, 6), url, title, heading, snippet(text, query),
                            lex.get(url), sem.get(url), round(cosine.get(cid, 0.0), 4),
                            page.graph if page else None, page.file if page else None,
                            round(covered.get(cid, 0.0), 4)))
            if len(hits) == limit:
                break
        return hits


def optional_float(settings: BaseSettings, name: str) -> float | None:
    """A float setting whose unset or empty value means "the embedder's own"."""
    value = settings.get(name)
    return None if value is None or value == "" else settings.getfloat(name)


def search_from_settings(settings: BaseSettings, store: SqliteStore, embedder: Embedder) -> HybridSearch:
    """The search ``scrapy search`` and ``scrapy mcp`` run: weights, floor and graphs from the settings."""
    return HybridSearch(store, embedder, settings.getint("SKILLGRAPH_STORE_SEARCH_CANDIDATES", 50),
                        optional_float(settings, "SKILLGRAPH_STORE_SEMANTIC_WEIGHT"),
                        optional_float(settings, "SKILLGRAPH_STORE_MIN_RELEVANCE"),
                        GraphIndex(settings.get("SKILLGRAPH_GRAPHS_DIR") or "graphs"),
                        optional_float(settings, "SKILLGRAPH_STORE_LEXICAL_WEIGHT"))
