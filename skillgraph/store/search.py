"""Hybrid search: FTS5 BM25 candidates and embedding cosine candidates, fused by reciprocal rank, floored.

BM25 (:mod:`skillgraph.store.lexical`) is precise on rare words and
identifiers; the embedding ranks chunks by meaning (the neural default) or by
the words they share with the query (the hashing fallback). Their scores live
on different scales, so they are fused by rank, not by score: reciprocal-rank
fusion (Cormack et al., 2009), ``score = sum 1 / (k + rank)`` with ``k = 60``,
over three rankings: BM25 of the chunks holding the query as an exact phrase
(a quoted sentence or ``os.path.join`` should win), BM25 of its words, and
cosine. Hits are per document: each ranking is first reduced to documents (a
document ranks where its best chunk does), then fused; the best chunk gives
the heading path and the snippet.

The embedding's vote is weighted (``SKILLGRAPH_STORE_SEMANTIC_WEIGHT``; by
default the embedder's own ``semantic_weight``, chosen by bench/search_eval.py).
The hashing fallback is lexical, a noisier copy of BM25: 0.1, so a document it
alone finds ranks after every BM25 hit (0.1 / 61 < 1 / 110). The neural
default brings what BM25 lacks (paraphrase, synonyms) and votes with more
weight than BM25 (docs/store.md gives the measurement).

**Relevance floor.** A hit must be related to the query, not merely the best
of a bad lot: a document is a hit only when its best candidate chunk has a
cosine of at least the floor (``SKILLGRAPH_STORE_MIN_SIMILARITY``; by default
the embedder's ``min_similarity``) -- ``FLOOR_MARGIN`` more when no BM25 word
match backs it -- or holds the query as an exact phrase.
Nonsense ("zzzxqy qqqwv") then finds nothing.

Cosine comes from :class:`skillgraph.store.vectors.VectorIndex`: one
matrix-vector product over every stored vector, loaded once per process.
``graph`` restricts every ranking to the pages of one skill graph.
"""

from __future__ import annotations

import re
from array import array
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from skillgraph.store.chunk import plain_text
from skillgraph.store.embed import Embedder, normalise
from skillgraph.store.graphs import GraphIndex
from skillgraph.store.lexical import LexicalIndex, fts_query, query_words
from skillgraph.store.sqlite import SqliteStore
from skillgraph.store.vectors import VectorIndex

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

__all__ = ["Hit", "HybridSearch", "fts_query", "query_words", "search_from_settings", "snippet"]

RRF_K = 60
#: How much closer a page that shares no word with the query must be (bench/search_eval.py: nonsense reached
#: a cosine of 0.353 with all-MiniLM-L6-v2; right pages found by meaning alone mostly lie above 0.4).
FLOOR_MARGIN = 0.1
SNIPPET_CHARS = 200


@dataclass
class Hit:
    rank: int
    score: float
    url: str
    title: str | None
    heading: str
    snippet: str
    lexical_rank: int | None
    semantic_rank: int | None
    similarity: float = 0.0  # cosine of the best chunk
    graph: str | None = None  # the skill graph and file holding the page, when a graph holds it
    file: str | None = None

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


class HybridSearch:
    def __init__(self, store: SqliteStore, embedder: Embedder, candidates: int = 50,
                 semantic_weight: float | None = None, min_similarity: float | None = None,
                 graphs: GraphIndex | None = None, lexical_weight: float | None = None) -> None:
        self.store = store
        #: of the phrase and word BM25 rankings (0: embedding only)
        self.lexical_weight = (float(getattr(embedder, "lexical_weight", 1.0))
                               if lexical_weight is None else lexical_weight)
        self.embedder = embedder
        self.candidates = candidates
        self.semantic_weight = (float(getattr(embedder, "semantic_weight", 1.0))
                                if semantic_weight is None else semantic_weight)
        self.min_similarity = (float(getattr(embedder, "min_similarity", 0.0))
                               if min_similarity is None else min_similarity)
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
        return normalise(self.embedder.embed([query])[0])

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

    def search(self, query: str, limit: int = 10, graph: str | None = None) -> list[Hit]:
        urls = self.graph_urls(graph) if graph else None
        if urls is not None and not urls:
            return []
        vector = self.query_vector(query)
        phrase, lexical = self.phrase(query, urls=urls), self.lexical(query, urls=urls)
        semantic = self.semantic(query, urls=urls, vector=vector) if self.semantic_weight > 0 else []
        candidates = list(dict.fromkeys(phrase + lexical + semantic))
        rows = self.store.chunk_rows(candidates)
        cosine = self.vectors.cosines(vector, candidates)

        def by_document(ranking: list[int]) -> dict[str, tuple[int, int]]:
            """url -> (rank of the document, its best chunk): a document ranks where its best chunk does."""
            ranks: dict[str, tuple[int, int]] = {}
            for cid in ranking:
                if cid in rows:  # else replaced between the queries
                    ranks.setdefault(rows[cid][0], (len(ranks) + 1, cid))
            return ranks

        best_cosine: dict[str, float] = {}
        for cid in candidates:
            if cid in rows:
                url = rows[cid][0]
                best_cosine[url] = max(best_cosine.get(url, -1.0), cosine.get(cid, 0.0))
        phr, lex, sem = by_document(phrase), by_document(lexical), by_document(semantic)
        fused: dict[str, float] = {}
        for ranks, weight in ((phr, self.lexical_weight), (lex, self.lexical_weight), (sem, self.semantic_weight)):
            if weight <= 0:
                continue
            for url, (rank, _) in ranks.items():
                floor = self.min_similarity + (0.0 if url in lex else FLOOR_MARGIN)
                if url in phr or best_cosine.get(url, 0.0) >= floor:
                    fused[url] = fused.get(url, 0.0) + weight / (RRF_K + rank)
        located = self.graphs.by_url() if self.graphs else {}
        hits: list[Hit] = []
        for url, value in sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]:
            cid = (sem[url] if self.lexical_weight <= 0 else phr.get(url) or lex.get(url) or sem[url])[1]
            _, heading, text, title = rows[cid]
            page = located.get(url)
            hits.append(Hit(len(hits) + 1, round(value, 6), url, title, heading, snippet(text, query),
                            lex[url][0] if url in lex else None, sem[url][0] if url in sem else None,
                            round(best_cosine.get(url, 0.0), 4), page.graph if page else None,
                            page.file if page else None))
        return hits


def optional_float(settings: BaseSettings, name: str) -> float | None:
    """A float setting whose unset or empty value means "the embedder's own"."""
    value = settings.get(name)
    return None if value is None or value == "" else settings.getfloat(name)


def search_from_settings(settings: BaseSettings, store: SqliteStore, embedder: Embedder) -> HybridSearch:
    """The search ``scrapy search`` and ``scrapy mcp`` run: weights, floor and graphs from the settings."""
    return HybridSearch(store, embedder, settings.getint("SKILLGRAPH_STORE_SEARCH_CANDIDATES", 50),
                        optional_float(settings, "SKILLGRAPH_STORE_SEMANTIC_WEIGHT"),
                        optional_float(settings, "SKILLGRAPH_STORE_MIN_SIMILARITY"),
                        GraphIndex(settings.get("SKILLGRAPH_GRAPHS_DIR") or "graphs"),
                        optional_float(settings, "SKILLGRAPH_STORE_LEXICAL_WEIGHT"))
