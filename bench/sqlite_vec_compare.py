"""sqlite-vec's ``vec0`` KNN against skillgraph's in-memory numpy index, on the vectors of one store.

Why skillgraph's vector index is a numpy matrix (skillgraph/store/vectors.py)
and not sqlite-vec: this measures both on the same vectors, top-50 by cosine,
and checks they agree. Needs only sqlite3, numpy and the PyPI package
``sqlite-vec`` in a Python whose ``sqlite3`` can load extensions -- the
project's venv Python cannot (built without ``enable_load_extension``), so run
it with another one, e.g.::

    python3.11 -m venv /tmp/vec && /tmp/vec/bin/pip install sqlite-vec numpy
    /tmp/vec/bin/python bench/sqlite_vec_compare.py STORE.sqlite3   # e.g. bench/search_latency.py --big
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("store", type=Path)
    parser.add_argument("--queries", type=int, default=86)
    parser.add_argument("-k", type=int, default=50)
    args = parser.parse_args()
    try:
        import sqlite_vec
    except ImportError:
        raise SystemExit("pip install sqlite-vec (in a Python whose sqlite3 can load extensions)") from None
    if not hasattr(sqlite3.Connection, "enable_load_extension"):
        raise SystemExit(f"{sys.executable}: sqlite3 is built without enable_load_extension")
    src = sqlite3.connect(args.store)
    start = time.perf_counter()
    rows = src.execute("SELECT id, embedding FROM chunks ORDER BY id").fetchall()
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    numpy_load = time.perf_counter() - start
    dimension = matrix.shape[1]
    rng = np.random.default_rng(1)
    picked = matrix[rng.choice(len(matrix), args.queries, replace=False)]
    queries = picked + rng.normal(0, 0.05, (args.queries, dimension))
    queries = (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(np.float32)

    with tempfile.TemporaryDirectory() as tmp:
        db = sqlite3.connect(Path(tmp) / "vec.sqlite3")
        db.enable_load_extension(True)
        sqlite_vec.load(db)
        db.enable_load_extension(False)
        db.execute(f"CREATE VIRTUAL TABLE vec USING vec0(embedding float[{dimension}] distance_metric=cosine)")
        start = time.perf_counter()
        with db:
            db.executemany("INSERT INTO vec (rowid, embedding) VALUES (?, ?)", rows)
        vec_build = time.perf_counter() - start
        vec_ms, numpy_ms, agree = [], [], 0
        for q in queries:
            start = time.perf_counter()
            got = db.execute("SELECT rowid, distance FROM vec WHERE embedding MATCH ? AND k = ? ORDER BY distance",
                             (q.tobytes(), args.k)).fetchall()
            vec_ms.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            scores = matrix @ q
            best = np.argpartition(scores, len(scores) - args.k)[-args.k:]
            best = best[np.argsort(-scores[best], kind="stable")]
            mine = [float(scores[i]) for i in best]
            numpy_ms.append((time.perf_counter() - start) * 1000)
            # the same cosines in the same order (ids may differ among equal scores: the store repeats pages)
            agree += np.allclose([1 - d for _, d in got[:10]], mine[:10], atol=1e-5)
        version = db.execute("SELECT vec_version()").fetchone()[0]
        print(f"{len(matrix)} vectors of {dimension} dimensions; sqlite-vec {version}, "
              f"SQLite {sqlite3.sqlite_version}, numpy {np.__version__}")
        print(f"  load/build   : numpy matrix from the store {numpy_load * 1000:.0f} ms; vec0 table {vec_build:.1f} s")
        print(f"  top-{args.k} query: sqlite-vec median {statistics.median(vec_ms):.1f} ms, "
              f"numpy median {statistics.median(numpy_ms):.1f} ms ({len(queries)} queries)")
        print(f"  same top 10  : {agree}/{len(queries)} queries (cosines equal within 1e-5)")
        db.close()


if __name__ == "__main__":
    main()
