"""The vector index: exact nearest neighbours over every stored embedding, one BLAS product per query.

The float32 blobs live in SQLite (``chunks.embedding``, written in the
chunk's own transaction, so a vector never disagrees with its chunk). The
index is those blobs as one float32 matrix in memory (numpy): loaded once per
process with one query, and loaded again only when the store changed
(``PRAGMA data_version``: another connection committed; ``total_changes``:
this one did). A query is ``matrix @ q`` plus a partial sort (``argpartition``):
exact search, no recall lost to an approximate index, a few milliseconds at
100,000 chunks of 384 dimensions (BENCHMARKS.md, "Knowledge store"). That is
what sqlite-vec's ``vec0`` does too (a brute-force scan in C), but it needs
``sqlite3.Connection.enable_load_extension``, which the CPython here is built
without; BENCHMARKS.md compares the two where the extension loads.

Without numpy (the hashing fallback is for installs without the model's
packages) the index is a pure-Python scan over the query's non-zero
dimensions: fine for the hashing embedder's sparse queries on small stores.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Collection, Sequence
from operator import itemgetter, mul
from typing import TYPE_CHECKING, Any

from skillgraph.store.embed import from_blob

if TYPE_CHECKING:
    from skillgraph.store.sqlite import SqliteStore

BATCH = 4096  # rows per fetch while loading: the blobs are copied into the matrix batch by batch


def have_numpy() -> bool:
    try:
        import numpy  # noqa: F401
    except ImportError:
        return False
    return True


class VectorIndex:
    """``top(query, k)`` over the chunks of one store; ``cosines(query, ids)`` of given chunks."""

    def __init__(self, store: SqliteStore, use_numpy: bool | None = None) -> None:
        self.store = store
        self.numpy = have_numpy() if use_numpy is None else use_numpy
        self._version: tuple[int, int] | None = None
        self.ids: Any = None  # numpy: int64 chunk ids, ascending; else a list of (id, vector)
        self.matrix: Any = None  # numpy: float32 (chunks, dimension), unit rows
        self.loads = 0  # how often the vectors were read from SQLite (tests, benches)

    def version(self) -> tuple[int, int]:
        db = self.store.db
        return db.execute("PRAGMA data_version").fetchone()[0], db.total_changes

    def refresh(self) -> None:
        """Load the vectors when this process has none yet or the store changed since."""
        version = self.version()
        if version == self._version:
            return
        db = self.store.db
        db.execute("BEGIN")  # deferred: one read snapshot for the count and the rows, no write lock
        try:
            if self.numpy:
                self._load_matrix()
            else:
                rows = db.execute("SELECT id, embedding FROM chunks ORDER BY id").fetchall()
                self.ids = [(cid, from_blob(blob)) for cid, blob in rows]
        finally:
            db.execute("COMMIT")
        self._version = version
        self.loads += 1

    def _load_matrix(self) -> None:
        import numpy as np

        db = self.store.db
        count = db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        first = db.execute("SELECT embedding FROM chunks LIMIT 1").fetchone()
        dimension = len(first[0]) // 4 if first else 0
        ids = np.empty(count, dtype=np.int64)
        matrix = np.empty((count, dimension), dtype=np.float32)
        cursor = db.execute("SELECT id, embedding FROM chunks ORDER BY id")
        start = 0
        while rows := cursor.fetchmany(BATCH):
            end = start + len(rows)
            ids[start:end] = [r[0] for r in rows]
            matrix[start:end] = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
            start = end
        self.ids, self.matrix = ids, matrix

    def top(self, query: array[float], limit: int, allowed: Collection[int] | None = None) -> list[int]:
        """Chunk ids by cosine with the unit vector ``query``, best first, cosine > 0 (``allowed``: only these)."""
        self.refresh()
        if not self.numpy:
            return self._top_loop(query, limit, allowed)
        import numpy as np

        if not len(self.ids) or self.matrix.shape[1] != len(query):
            return []
        scores = self.matrix @ np.frombuffer(query.tobytes(), dtype=np.float32)
        if allowed is not None:
            keep = np.isin(self.ids, np.fromiter(allowed, dtype=np.int64, count=len(allowed)))
            scores = np.where(keep, scores, -2.0)
        top = min(limit, len(self.ids))
        best = np.argpartition(scores, len(scores) - top)[-top:]
        best = best[np.argsort(-scores[best], kind="stable")]
        return [int(self.ids[i]) for i in best if scores[i] > 0]  # 0: not one shared feature (hashing)

    def cosines(self, query: array[float], ids: Sequence[int]) -> dict[int, float]:
        """id -> cosine with ``query`` for the given chunks (ids no longer stored are left out)."""
        self.refresh()
        if not ids:
            return {}
        if not self.numpy:
            chosen = set(ids)
            return {cid: sum(map(mul, v, query)) for cid, v in self.ids if cid in chosen}
        import numpy as np

        if self.matrix.shape[1] != len(query):
            return {}
        wanted = np.asarray(ids, dtype=np.int64)
        rows = np.minimum(np.searchsorted(self.ids, wanted), max(0, len(self.ids) - 1))
        found = self.ids[rows] == wanted if len(self.ids) else np.zeros(len(wanted), dtype=bool)
        scores = self.matrix[rows[found]] @ np.frombuffer(query.tobytes(), dtype=np.float32)
        return {int(cid): float(s) for cid, s in zip(wanted[found], scores, strict=True)}

    def _top_loop(self, query: array[float], limit: int, allowed: Collection[int] | None) -> list[int]:
        dims = [i for i, x in enumerate(query) if x]
        if not dims:
            return []
        weights = [query[i] for i in dims]
        pick = itemgetter(*dims)

        def score(vector: array[float]) -> float:
            if len(dims) == 1:
                return float(vector[dims[0]] * weights[0])
            return sum(map(mul, pick(vector), weights))

        rows = [r for r in self.ids if allowed is None or r[0] in allowed]
        best = heapq.nlargest(limit, rows, key=lambda row: score(row[1]))
        return [cid for cid, vector in best if score(vector) > 0]
