"""The knowledge store: chunk, embed, store in SQLite, search (docs/store.md).

Store workers (``scrapy worker``) fill it from the Redis queue or from disk
items; ``scrapy search`` queries it.
"""

from __future__ import annotations

from skillgraph.store.chunk import Chunk, chunk_markdown
from skillgraph.store.embed import Embedder, HashingEmbedder, load_embedder
from skillgraph.store.search import Hit, HybridSearch
from skillgraph.store.sqlite import SqliteStore, store_path

__all__ = ["Chunk", "Embedder", "HashingEmbedder", "Hit", "HybridSearch", "SqliteStore", "chunk_markdown",
           "load_embedder", "store_path"]
