"""``scrapy search "QUERY" [-n 10] [--json]``: search the knowledge store (docs/store.md).

Hybrid search (:mod:`skillgraph.store.search`): BM25 over FTS5 and cosine
over the stored embeddings, fused by reciprocal rank, one hit per document.
Prints rank, score, URL, heading path and a snippet per hit; ``--json``
prints one JSON object per hit instead. Exit status 1 when there is no store.
"""

from __future__ import annotations

import json
import sys
from argparse import ArgumentParser, Namespace

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import NotConfigured, UsageError

from skillgraph.store.embed import load_embedder
from skillgraph.store.search import Hit, HybridSearch
from skillgraph.store.sqlite import open_store


def format_hit(hit: Hit) -> str:
    return f"{hit.rank:>2}. {hit.score:.4f}  {hit.url}\n    {hit.heading}\n    {hit.snippet}"


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return '"QUERY" [-n 10] [--json]'

    def short_desc(self) -> str:
        return "Search the knowledge store (BM25 + embeddings, fused)"

    def add_options(self, parser: ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("-n", "--limit", type=int, default=10, help="hits to print (default 10)")
        parser.add_argument("--json", action="store_true", help="one JSON object per hit")

    def run(self, args: list[str], opts: Namespace) -> None:
        if not args:
            raise UsageError("give a QUERY")
        if opts.limit < 1:
            raise UsageError("-n must be at least 1")
        assert self.settings is not None
        query = " ".join(args)
        try:
            embedder = load_embedder(self.settings)
            store = open_store(self.settings, embedder.name, embedder.dimension, must_exist=True)
        except NotConfigured as exc:
            print(f"scrapy search: {exc}", file=sys.stderr)
            self.exitcode = 1
            return
        try:
            searcher = HybridSearch(store, embedder, self.settings.getint("SKILLGRAPH_STORE_SEARCH_CANDIDATES", 50),
                                    self.settings.getfloat("SKILLGRAPH_STORE_SEMANTIC_WEIGHT", 0.1))
            hits = searcher.search(query, opts.limit)
        finally:
            store.close()
        for hit in hits:
            print(json.dumps(hit.to_json(), ensure_ascii=False) if opts.json else format_hit(hit))
        if not hits:
            print(f"scrapy search: no hits for {query!r}", file=sys.stderr)
        sys.stdout.flush()
