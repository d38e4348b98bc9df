"""The knowledge store in SQLite: documents, chunks, float32 embeddings, an FTS5 index.

stdlib ``sqlite3`` in WAL mode, so several workers (processes) write one file
and ``scrapy search`` reads it while they do. One document is one
``BEGIN IMMEDIATE`` transaction: re-storing the same url + sha256 is a no-op,
a changed sha256 replaces the document's chunks, embeddings and FTS rows
atomically (a reader sees the old chunks or the new ones, never a mix).

FTS5 (``unicode61``, ``_`` kept inside words so ``snake_case`` names are one
token) indexes each chunk's heading path and its plain text (link targets
dropped). When the SQLite build lacks FTS5 the store says so once, with a
warning, and search falls back to embeddings alone.

Only ``sqlite:///PATH`` URLs are supported (``sqlite:////abs/path`` for an
absolute path); any other scheme raises :class:`NotConfigured` naming it.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured

from skillgraph.store.chunk import Chunk, plain_text
from skillgraph.store.embed import to_blob

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

SUPPORTED = "sqlite:///RELATIVE/PATH or sqlite:////ABSOLUTE/PATH"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    url TEXT PRIMARY KEY, sha256 TEXT NOT NULL, title TEXT, domain TEXT, source TEXT, strategy TEXT,
    tier TEXT, quality REAL, fetched_at TEXT, stored_at TEXT NOT NULL, chunks INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY, url TEXT NOT NULL, ordinal INTEGER NOT NULL, heading TEXT NOT NULL,
    text TEXT NOT NULL, embedding BLOB NOT NULL, UNIQUE (url, ordinal));
"""
FTS_SCHEMA = ("CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5("
              "heading, body, tokenize = \"unicode61 remove_diacritics 2 tokenchars '_'\")")


def store_path(url: str) -> Path:
    """The database file of a ``sqlite:///`` URL; any other scheme is refused with the supported form."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() != "sqlite":
        raise NotConfigured(f"SKILLGRAPH_STORE_URL {url!r}: scheme {scheme or '(none)'!r} is not supported; "
                            f"supported: {SUPPORTED}")
    if not rest.startswith("/") or rest == "/":
        raise NotConfigured(f"SKILLGRAPH_STORE_URL {url!r} has no path; supported: {SUPPORTED}")
    return Path(rest[1:])


class StoreMismatchError(NotConfigured):
    """The store's vectors come from another embedder than the one configured."""


class SqliteStore:
    def __init__(self, path: str | Path, embedder_name: str, dimension: int, check_embedder: bool = True) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, isolation_level=None, timeout=60, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)  # IF NOT EXISTS, idempotent; executescript commits on its own
        with self.transaction():
            self.fts = self._create_fts()
            if check_embedder:
                self._check_embedder(embedder_name, dimension)
        self.dimension = dimension

    @classmethod
    def from_url(cls, url: str, embedder_name: str, dimension: int) -> SqliteStore:
        return cls(store_path(url), embedder_name, dimension)

    def _create_fts(self) -> bool:
        try:
            self.db.execute(FTS_SCHEMA)
        except sqlite3.OperationalError as exc:
            logger.warning("SQLite %s has no FTS5 (%s): search uses embeddings only", sqlite3.sqlite_version, exc)
            return False
        return True

    def _check_embedder(self, name: str, dimension: int) -> None:
        row = self.db.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
        wanted = f"{name}/{dimension}"
        if row is None:
            self.db.execute("INSERT INTO meta VALUES ('embedder', ?)", (wanted,))
        elif row[0] != wanted:
            raise StoreMismatchError(f"{self.path} holds vectors of embedder {row[0]!r}, not {wanted!r}: "
                                     "run `scrapy worker --reembed` to re-embed it with the configured one "
                                     "(or set SKILLGRAPH_STORE_EMBEDDER back, or use another SKILLGRAPH_STORE_URL)")

    def embedder_of(self) -> str | None:
        """``name/dimension`` of the embedder the stored vectors come from (None: an empty new store)."""
        row = self.db.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
        return row[0] if row else None

    def reembed(self, embed: Callable[[list[str]], Sequence[Sequence[float]]], embedder_name: str, dimension: int,
                batch: int = 256, progress: Callable[[int, int], None] | None = None) -> int:
        """Replace every chunk's vector with ``embed``'s, then record the new embedder; chunks re-embedded.

        Batches of ``batch`` chunks, one transaction each; the embedder is recorded only at the end, so an
        interrupted run leaves a store that still says it needs ``--reembed`` (running it again finishes it).
        """
        total = self.db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        done, last = 0, 0
        while True:
            rows = self.db.execute("SELECT id, heading, text FROM chunks WHERE id > ? ORDER BY id LIMIT ?",
                                   (last, batch)).fetchall()
            if not rows:
                break
            vectors = embed([f"{heading}\n{plain_text(text)}" for _, heading, text in rows])
            with self.transaction():
                for (cid, _, _), vector in zip(rows, vectors, strict=True):
                    if len(vector) != dimension:
                        raise ValueError(f"vector of dimension {len(vector)}, expected {dimension}")
                    self.db.execute("UPDATE chunks SET embedding = ? WHERE id = ?", (to_blob(vector), cid))
            done += len(rows)
            last = rows[-1][0]
            if progress:
                progress(done, total)
        with self.transaction():
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('embedder', ?)", (f"{embedder_name}/{dimension}",))
        self.dimension = dimension
        return done

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` (the write lock up front: no upgrade deadlock between workers), then COMMIT."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def stored_sha(self, url: str) -> str | None:
        row = self.db.execute("SELECT sha256 FROM documents WHERE url = ?", (url,)).fetchone()
        return row[0] if row else None

    def put(self, doc: dict[str, Any], chunks: Sequence[Chunk], vectors: Sequence[Sequence[float]]) -> str:
        """Store one document: ``"stored"`` (new url), ``"replaced"`` (new sha256) or ``"unchanged"``."""
        if len(chunks) != len(vectors):
            raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors")
        url, sha = doc["url"], doc["sha256"]
        with self.transaction():
            previous = self.stored_sha(url)
            if previous == sha:
                return "unchanged"
            if previous is not None:
                if self.fts:
                    self.db.execute("DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE url = ?)",
                                    (url,))
                self.db.execute("DELETE FROM chunks WHERE url = ?", (url,))
            for chunk, vector in zip(chunks, vectors, strict=True):
                if len(vector) != self.dimension:
                    raise ValueError(f"vector of dimension {len(vector)}, store has {self.dimension}")
                cursor = self.db.execute(
                    "INSERT INTO chunks (url, ordinal, heading, text, embedding) VALUES (?, ?, ?, ?, ?)",
                    (url, chunk.ordinal, chunk.heading, chunk.text, to_blob(vector)))
                if self.fts:
                    self.db.execute("INSERT INTO chunks_fts (rowid, heading, body) VALUES (?, ?, ?)",
                                    (cursor.lastrowid, chunk.heading, plain_text(chunk.text)))
            self.db.execute(
                "INSERT OR REPLACE INTO documents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (url, sha, doc.get("title"), doc.get("domain"), doc.get("source"), doc.get("strategy"),
                 doc.get("tier"), doc.get("quality"), doc.get("fetched_at"),
                 time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), len(chunks)))
        return "replaced" if previous is not None else "stored"

    def counts(self) -> tuple[int, int]:
        """(documents, chunks)."""
        docs = self.db.execute("SELECT count(*) FROM documents").fetchone()[0]
        chunks = self.db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        return int(docs), int(chunks)

    def chunk_rows(self, ids: Sequence[int]) -> dict[int, tuple[str, str, str, str | None]]:
        """id -> (url, heading, text, document title)."""
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self.db.execute(
            f"SELECT c.id, c.url, c.heading, c.text, d.title FROM chunks c JOIN documents d ON d.url = c.url "
            f"WHERE c.id IN ({marks})", list(ids)).fetchall()
        return {row[0]: (row[1], row[2], row[3], row[4]) for row in rows}

    def close(self) -> None:
        self.db.close()


def open_store(settings: BaseSettings, embedder_name: str, dimension: int, must_exist: bool = False,
               check_embedder: bool = True) -> SqliteStore:
    """The store ``SKILLGRAPH_STORE_URL`` names; NotConfigured for another scheme or (``must_exist``) no file."""
    url = settings.get("SKILLGRAPH_STORE_URL") or "sqlite:///store.sqlite3"
    path = store_path(url)
    if must_exist and not path.exists():
        raise NotConfigured(f"no knowledge store at {path} (SKILLGRAPH_STORE_URL={url}): run `scrapy worker` first")
    return SqliteStore(path, embedder_name, dimension, check_embedder)
