"""``scrapy search "QUERY" [-n 10] [--graph NAME] [--json]``: search the knowledge store (docs/store.md).

Hybrid search (:mod:`skillgraph.store.search`): candidates from BM25 over FTS5
and from cosine over the stored embeddings, one relevance per chunk (meaning
plus the query's words the chunk holds), one hit per document, with a
relevance floor. Prints rank, relevance, URL, the graph file holding the
page (``graph/file.md``, when a graph in ``SKILLGRAPH_GRAPHS_DIR`` lists it),
heading path and a snippet per hit; ``--json`` prints one JSON object per hit
instead. ``--graph NAME`` searches the pages of one graph only. The embedder
in use is named on stderr. When no page reaches the relevance floor (nonsense,
or nothing related enough), one line on stderr says nothing matched, nothing
is printed on stdout and the exit status is 1; so too when there is no store.
"""

from __future__ import annotations

import json
import sys
from argparse import ArgumentParser, Namespace
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import NotConfigured, UsageError

if TYPE_CHECKING:
    from skillgraph.store.search import Hit


def format_hit(hit: Hit) -> str:
    where = f"\n    graph: {hit.graph}/{hit.file}" if hit.graph else ""
    return f"{hit.rank:>2}. {hit.score:.4f}  {hit.url}{where}\n    {hit.heading}\n    {hit.snippet}"


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return '"QUERY" [-n 10] [--graph NAME] [--json]'

    def short_desc(self) -> str:
        return "Search the knowledge store (BM25 + embeddings, fused)"

    def add_options(self, parser: ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("-n", "--limit", type=int, default=10, help="hits to print (default 10)")
        parser.add_argument("--graph", default=None, metavar="NAME", help="only pages of this skill graph")
        parser.add_argument("--json", action="store_true", help="one JSON object per hit")

    def run(self, args: list[str], opts: Namespace) -> None:
        # imported here, not at the top: Scrapy imports every command module for any command, a crawl too
        from skillgraph.store.embed import describe, load_embedder
        from skillgraph.store.search import search_from_settings
        from skillgraph.store.sqlite import open_store

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
            searcher = search_from_settings(self.settings, store, embedder)
            if opts.graph and opts.graph not in searcher.graphs.names():  # type: ignore[union-attr]
                print(f"scrapy search: no graph {opts.graph!r} in {searcher.graphs.root}; "  # type: ignore[union-attr]
                      "`scrapy mcp`'s list_graphs or `ls` that folder shows the names", file=sys.stderr)
                self.exitcode = 1
                return
            hits = searcher.search(query, opts.limit, graph=opts.graph)
        finally:
            store.close()
        for hit in hits:
            print(json.dumps(hit.to_json(), ensure_ascii=False) if opts.json else format_hit(hit))
        sys.stdout.flush()
        scope = f" in graph {opts.graph}" if opts.graph else ""
        if not hits:
            print(f"scrapy search: nothing matched {query!r}{scope}: no page is related enough "
                  f"(embedder {describe(embedder)})", file=sys.stderr)
            self.exitcode = 1
        else:
            print(f"scrapy search: {len(hits)} hits{scope} (embedder {describe(embedder)})", file=sys.stderr)
