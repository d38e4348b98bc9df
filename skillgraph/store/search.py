"""Hybrid search: FTS5 BM25 candidates and embedding cosine candidates, fused by reciprocal rank.

BM25 is precise on rare words and identifiers; the embedding ranks whole
chunks by their overlap with the query as a bag of words and word pairs,
length-normalised. Their scores live on different scales, so they are fused
by rank, not by score: reciprocal-rank fusion (Cormack et al., 2009),
``score = sum 1 / (k + rank)`` with ``k = 60``, over three rankings: BM25 of
the chunks holding the query as an exact phrase (a quoted sentence or
``os.path.join`` should win), BM25 of any of its words, and cosine. Hits are per document: each
ranking is first reduced to documents (a document ranks where its best chunk
does), then fused; the best chunk gives the heading path and the snippet.

The embedding's vote is weighted (``SKILLGRAPH_STORE_SEMANTIC_WEIGHT``,
default 0.1). The default hashing embedder is lexical too, a noisier copy of
BM25: at full weight its votes overrode BM25's first hit (bench/store.py:
recall@5 0.89 against BM25's 1.00 on bag-of-words queries). At 0.1 a document
found by the embedding alone ranks after every BM25 hit of the candidate depth
(0.1 / 61 < 1 / 110), and among BM25 hits the embedding breaks near-ties.
A model embedder (plugged by ``SKILLGRAPH_STORE_EMBEDDER``) brings meaning BM25
lacks; give it a weight of 1.

Cosine runs in pure Python (numpy is not a dependency): stored vectors are
unit-length, so cosine is a dot product, computed only over the query's
non-zero dimensions (a few dozen for a hashing-embedder query).
"""

from __future__ import annotations

import heapq
import re
from array import array
from dataclasses import asdict, dataclass
from operator import itemgetter, mul
from typing import Any

from skillgraph.store.chunk import plain_text
from skillgraph.store.embed import WORD, Embedder, normalise
from skillgraph.store.sqlite import SqliteStore

RRF_K = 60
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

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def query_words(query: str) -> list[str]:
    return WORD.findall(query.lower())


def fts_query(query: str) -> str:
    """Every word of the query, quoted (no FTS5 syntax from users), OR-ed: BM25 does the ranking."""
    return " OR ".join(f'"{w}"' for w in dict.fromkeys(query_words(query)))


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
                 semantic_weight: float = 0.1) -> None:
        self.store = store
        self.embedder = embedder
        self.candidates = candidates
        self.semantic_weight = semantic_weight

    def _bm25(self, match: str, limit: int) -> list[int]:
        sql = "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY bm25(chunks_fts, 2.0, 1.0) LIMIT ?"
        return [row[0] for row in self.store.db.execute(sql, (match, limit))]

    def lexical(self, query: str, limit: int | None = None) -> list[int]:
        """Chunk ids by BM25 over any of the query's words (heading matches count double); empty without FTS5."""
        match = fts_query(query)
        return self._bm25(match, limit or self.candidates) if self.store.fts and match else []

    def phrase(self, query: str, limit: int | None = None) -> list[int]:
        """Chunk ids holding the query's words as one phrase, by BM25 (queries of two words or more)."""
        words = query_words(query)
        if not self.store.fts or len(words) < 2:
            return []
        return self._bm25('"' + " ".join(words) + '"', limit or self.candidates)

    def semantic(self, query: str, limit: int | None = None) -> list[int]:
        """Chunk ids by cosine between the query's and the chunks' embeddings."""
        q = normalise(self.embedder.embed([query])[0])
        dims = [i for i, x in enumerate(q) if x]
        if not dims:
            return []
        weights = [q[i] for i in dims]
        pick = itemgetter(*dims)

        def score(vector: array[float]) -> float:
            if len(dims) == 1:
                return float(vector[dims[0]] * weights[0])
            return sum(map(mul, pick(vector), weights))

        best = heapq.nlargest(limit or self.candidates, self.store.vectors(), key=lambda row: score(row[1]))
        return [cid for cid, vector in best if score(vector) > 0]

    def search(self, query: str, limit: int = 10) -> list[Hit]:
        phrase, lexical = self.phrase(query), self.lexical(query)
        semantic = self.semantic(query) if self.semantic_weight > 0 else []
        rows = self.store.chunk_rows(list(dict.fromkeys(phrase + lexical + semantic)))

        def by_document(ranking: list[int]) -> dict[str, tuple[int, int]]:
            """url -> (rank of the document, its best chunk): a document ranks where its best chunk does."""
            ranks: dict[str, tuple[int, int]] = {}
            for cid in ranking:
                if cid in rows:  # else replaced between the queries
                    ranks.setdefault(rows[cid][0], (len(ranks) + 1, cid))
            return ranks

        phr, lex, sem = by_document(phrase), by_document(lexical), by_document(semantic)
        fused: dict[str, float] = {}
        for ranks, weight in ((phr, 1.0), (lex, 1.0), (sem, self.semantic_weight)):
            for url, (rank, _) in ranks.items():
                fused[url] = fused.get(url, 0.0) + weight / (RRF_K + rank)
        hits: list[Hit] = []
        for url, value in sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]:
            cid = (phr.get(url) or lex.get(url) or sem[url])[1]
            _, heading, text, title = rows[cid]
            hits.append(Hit(len(hits) + 1, round(value, 6), url, title, heading, snippet(text, query),
                            lex[url][0] if url in lex else None, sem[url][0] if url in sem else None))
        return hits
