"""The lexical rankings of hybrid search: FTS5 BM25 of a query as a phrase and of its words.

Query text is never FTS5 syntax: every word is quoted. The word ranking
leaves out stopwords and, in a large store, the words most chunks hold: FTS5
scores every chunk that matches any word of an ``OR`` query, so one word held
by a fifth of 100,000 chunks ("file", "using", "list") made BM25 most of a
query's time, for a word whose IDF is small anyway (BENCHMARKS.md, "Knowledge
store"). The phrase ranking keeps every word.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from skillgraph.store.embed import STOPWORDS, WORD

if TYPE_CHECKING:
    from skillgraph.store.sqlite import SqliteStore

#: A word in more than this share of the chunks is left out of the word ranking of a large store ...
#: (bench/search_latency.py: BM25 words 35 -> ~5-15 ms median at 100,000 chunks; forced on the 5,548 chunks of
#: library/, paraphrased recall@5 0.932 -> 0.955, MRR 0.745 -> 0.724, keyword figures unchanged)
COMMON_SHARE = 0.05
#: ... of at least this many chunks (below it, scoring every match costs a few milliseconds).
COMMON_MIN_CHUNKS = 10_000
#: The common words are found again when the store's size moved by more than this share.
COMMON_DRIFT = 0.1
VOCAB = "CREATE VIRTUAL TABLE IF NOT EXISTS temp.chunks_vocab USING fts5vocab(main, chunks_fts, 'row')"


def query_words(query: str) -> list[str]:
    return WORD.findall(query.lower())


def fts_query(query: str, common: frozenset[str] = frozenset()) -> str:
    """The query's words, quoted and OR-ed, without stopwords and ``common`` words (all of them when
    nothing else is left): BM25 does the ranking."""
    words = list(dict.fromkeys(query_words(query)))
    kept = [w for w in words if w not in STOPWORDS and w not in common]
    return " OR ".join(f'"{w}"' for w in kept or [w for w in words if w not in STOPWORDS] or words)


class LexicalIndex:
    def __init__(self, store: SqliteStore, common_share: float = COMMON_SHARE,
                 min_chunks: int = COMMON_MIN_CHUNKS) -> None:
        self.store = store
        self.common_share = common_share
        self.min_chunks = min_chunks
        self._common: tuple[int, frozenset[str]] | None = None  # (chunks when found, words)
        self._version: tuple[int, int] | None = None
        self._size: tuple[tuple[int, int], int] | None = None  # (store version, chunks)

    def version(self) -> tuple[int, int]:
        """Changes when any connection committed (``data_version``) or this one wrote (``total_changes``)."""
        return self.store.db.execute("PRAGMA data_version").fetchone()[0], self.store.db.total_changes

    def chunk_count(self) -> int:
        version = self.version()
        if self._size is None or self._size[0] != version:
            self._size = (version, int(self.store.db.execute("SELECT count(*) FROM chunks").fetchone()[0]))
        return self._size[1]

    def idf(self, words: list[str]) -> dict[str, float]:
        """word -> its BM25 IDF in the store, ``ln((N - df + 0.5) / (df + 0.5) + 1)`` over chunks.

        A word no chunk holds gets the largest IDF (df = 0): a query made of such words is covered by no
        chunk. Without FTS5 every word weighs 1 (coverage is then the share of the words held).
        """
        if not words:
            return {}
        if not self.store.fts:
            return dict.fromkeys(words, 1.0)
        total = self.chunk_count()
        df = self.doc_frequency(words)
        return {w: math.log((total - df.get(w, 0) + 0.5) / (df.get(w, 0) + 0.5) + 1.0) for w in words}

    def doc_frequency(self, words: list[str]) -> dict[str, int]:
        """word -> chunks holding it (FTS5's vocabulary; words no chunk holds are left out)."""
        if not words or not self.store.fts:
            return {}
        self.store.db.execute(VOCAB)
        marks = ",".join("?" * len(words))
        return dict(self.store.db.execute(f"SELECT term, doc FROM temp.chunks_vocab WHERE term IN ({marks})", words))

    def known_share(self, words: list[str]) -> float:
        """The share of ``words`` some chunk holds (1 without FTS5: unknown then)."""
        if not words or not self.store.fts:
            return 1.0
        return len(self.doc_frequency(words)) / len(set(words))

    def common_words(self) -> frozenset[str]:
        """Words held by more than ``common_share`` of the chunks (none in a store below ``min_chunks``).

        Read once per process from FTS5's vocabulary, and again only when the store grew or shrank by
        more than ``COMMON_DRIFT`` (the shares of common words barely move meanwhile).
        """
        version = self.version()
        if self._common is not None and version == self._version:
            return self._common[1]
        self._version = version
        chunks = self.store.db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        if self._common is not None and abs(chunks - self._common[0]) <= COMMON_DRIFT * self._common[0]:
            return self._common[1]
        words: frozenset[str] = frozenset()
        if chunks >= self.min_chunks:
            self.store.db.execute(VOCAB)
            rows = self.store.db.execute("SELECT term FROM temp.chunks_vocab WHERE doc > ?",
                                         (self.common_share * chunks,))
            words = frozenset(r[0] for r in rows)
        self._common = (chunks, words)
        return words

    def _bm25(self, match: str, limit: int, urls: list[str] | None = None) -> list[int]:
        sql = "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?"
        params: list[Any] = [match]
        if urls is not None:
            sql += f" AND rowid IN (SELECT id FROM chunks WHERE url IN ({','.join('?' * len(urls))}))"
            params += urls
        sql += " ORDER BY bm25(chunks_fts, 2.0, 1.0) LIMIT ?"
        return [row[0] for row in self.store.db.execute(sql, [*params, limit])]

    def words(self, query: str, limit: int, urls: list[str] | None = None) -> list[int]:
        """Chunk ids by BM25 over the query's words (heading matches count double); empty without FTS5."""
        if not self.store.fts:
            return []
        match = fts_query(query, self.common_words())
        return self._bm25(match, limit, urls) if match else []

    def phrase(self, query: str, limit: int, urls: list[str] | None = None) -> list[int]:
        """Chunk ids holding the query's words as one phrase, by BM25 (queries of two words or more)."""
        words = query_words(query)
        if not self.store.fts or len(words) < 2:
            return []
        return self._bm25('"' + " ".join(words) + '"', limit, urls)
