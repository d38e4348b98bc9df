"""The MCP server over the knowledge store and the skill graphs (``scrapy mcp``; docs/store.md).

Built on the official MCP Python SDK (``mcp``, ``MCPServer``, stdio
transport): it speaks the protocol, this module only says what the tools do.

Tools:

* ``search(query, graph=None, k=5)``: the hybrid search of ``scrapy search``
  (same weights, floor and graph filter); each hit cites its URL and, when a
  graph holds the page, ``graph`` + ``file`` to pass to ``read_page``; when no
  page reaches the relevance floor the answer says that nothing matched;
* ``read_page(graph=None, file=None, url=None, heading=None)``: a page's
  markdown from its graph file (by graph + file, or by URL through the graphs'
  ``sources.json``; a URL no graph holds is rebuilt from the store's chunks);
  ``heading`` narrows it to that section;
* ``list_graphs()``: every graph with its page count, build time and strategy.

Resources: ``skillgraph://{graph}/{file}``, each graph's markdown files.

The embedder and the store are opened once, on the first search (an agent
that only reads pages never loads the model). Calls are serialised by a lock:
one SQLite connection serves them all.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured

from skillgraph.markdown import scan, split_lines
from skillgraph.store.embed import describe, load_embedder
from skillgraph.store.graphs import GraphIndex
from skillgraph.store.search import HybridSearch, search_from_settings
from skillgraph.store.sqlite import SqliteStore, open_store

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)
MAX_K = 50


class ToolError(Exception):
    """A tool call that cannot be answered; the message says what to do."""


def section(markdown: str, heading: str) -> str | None:
    """The part of ``markdown`` under the first heading containing ``heading`` (case-insensitive), to the
    next heading of the same or a higher level; None when no heading matches."""
    lines = [line.rstrip("\r\n") for line in split_lines(markdown)]
    wanted = heading.strip().lower().lstrip("#").strip()
    start, level = None, 0
    for i, line in enumerate(scan(lines)):
        if not line.starts_section:
            continue
        if start is None and wanted in line.title.replace("¶", "").lower():
            start, level = i, line.level
        elif start is not None and line.level <= level:
            return "\n".join(lines[start:i]).strip()
    return "\n".join(lines[start:]).strip() if start is not None else None


class SkillgraphTools:
    """What the MCP tools do, without the protocol (tested directly and through ``scrapy mcp``)."""

    def __init__(self, settings: BaseSettings) -> None:
        self.settings = settings
        self.graphs = GraphIndex(settings.get("SKILLGRAPH_GRAPHS_DIR") or "graphs")
        self.lock = threading.Lock()
        self._search: HybridSearch | None = None
        self._store: SqliteStore | None = None

    def searcher(self) -> HybridSearch:
        if self._search is None:
            embedder = load_embedder(self.settings)
            try:
                self._store = open_store(self.settings, embedder.name, embedder.dimension, must_exist=True)
            except NotConfigured as exc:
                raise ToolError(str(exc)) from exc
            self._search = search_from_settings(self.settings, self._store, embedder)
            logger.info("Search ready: %s, embedder %s", self._store.path, describe(embedder))
        return self._search

    def search(self, query: str, graph: str | None = None, k: int = 5) -> dict[str, Any]:
        if not query.strip():
            raise ToolError("query is empty")
        if graph and graph not in self.graphs.names():
            raise ToolError(f"no graph {graph!r}; list_graphs gives the names")
        with self.lock:
            searcher = self.searcher()
            hits = searcher.search(query, max(1, min(int(k), MAX_K)), graph=graph or None)
        return {"query": query, "graph": graph, "embedder": searcher.embedder.name,
                "hits": [{"rank": h.rank, "url": h.url, "graph": h.graph, "file": h.file, "title": h.title,
                          "heading": h.heading, "snippet": h.snippet, "relevance": h.score,
                          "similarity": h.similarity} for h in hits]}

    def read_page(self, graph: str | None = None, file: str | None = None, url: str | None = None,
                  heading: str | None = None) -> dict[str, Any]:
        if url and not (graph and file):
            page = self.graphs.locate(url, [graph] if graph else None)
            if page is not None:
                graph, file = page.graph, page.file
        if graph and file:
            text = self.graphs.read(graph, file)
            if text is None:
                raise ToolError(f"no file {file!r} in graph {graph!r}; search or list_graphs shows what exists")
            page_url = url or next((p.url for p in self.graphs.pages(graph) if p.file == file), None)
        elif url:
            text = self.stored_markdown(url)
            page_url = url
        else:
            raise ToolError("give graph and file, or url")
        if heading:
            part = section(text, heading)
            if part is None:
                raise ToolError(f"no heading containing {heading!r} in this page")
            text = part
        return {"url": page_url, "graph": graph, "file": file, "markdown": text}

    def stored_markdown(self, url: str) -> str:
        """A page no graph holds, from the store's chunks in order (headings included)."""
        with self.lock:
            store = self.searcher().store
            rows = store.db.execute("SELECT text FROM chunks WHERE url = ? ORDER BY ordinal", (url,)).fetchall()
        if not rows:
            raise ToolError(f"no page {url!r} in the graphs or the knowledge store")
        return "\n\n".join(r[0] for r in rows)

    def list_graphs(self) -> dict[str, Any]:
        return {"graphs": [self.graphs.summary(name) for name in self.graphs.names()]}

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


def format_hits(result: dict[str, Any]) -> str:
    """Search hits as text an agent reads: each cites its URL and graph file."""
    if not result["hits"]:
        scope = f" in graph {result['graph']}" if result["graph"] else ""
        return (f"Nothing matched {result['query']!r}{scope}: no page is related enough to the query "
                "(rephrase it, or the documentation does not cover it).")
    lines = []
    for hit in result["hits"]:
        lines.append(f"{hit['rank']}. {hit['title'] or hit['url']} — {hit['heading']}")
        lines.append(f"   url: {hit['url']}")
        if hit["graph"]:
            lines.append(f"   file: {hit['graph']}/{hit['file']}  (read_page graph={hit['graph']!r} "
                         f"file={hit['file']!r})")
        lines.append(f"   {hit['snippet']}")
    return "\n".join(lines)


def build_server(tools: SkillgraphTools) -> Any:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ResourceNotFoundError
    from mcp.server.mcpserver.exceptions import ToolError as SdkToolError

    server = MCPServer("skillgraph", instructions=(
        "Documentation as skill graphs: `search` finds pages by meaning or keywords and cites url + graph file; "
        "`read_page` returns a page's markdown (by graph + file, or url; optional heading); "
        "`list_graphs` names the graphs."))

    def guarded(call: Any) -> Any:
        try:
            return call()
        except ToolError as exc:  # anticipated: the message reaches the agent (is_error), no traceback
            raise SdkToolError(str(exc)) from exc

    @server.tool(description="Search the documentation. Returns hits with url, graph file, heading and snippet, "
                             "or says that nothing matched (no page related enough to the query).")
    def search(query: str, graph: str | None = None, k: int = 5) -> str:
        return guarded(lambda: format_hits(tools.search(query, graph, k)))

    @server.tool(description="A page's markdown, by graph + file (from search or list_graphs) or by url; "
                             "heading narrows it to one section.")
    def read_page(graph: str | None = None, file: str | None = None, url: str | None = None,
                  heading: str | None = None) -> str:
        page = guarded(lambda: tools.read_page(graph, file, url, heading))
        cite = f"url: {page['url']}\nfile: {page['graph']}/{page['file']}\n\n" if page["graph"] else \
            f"url: {page['url']}\n\n"
        return cite + page["markdown"]

    @server.tool(description="The skill graphs available: name, pages, build time, strategy.")
    def list_graphs() -> str:
        return json.dumps(tools.list_graphs(), indent=2)

    @server.resource("skillgraph://{graph}/{file}", mime_type="text/markdown",
                     description="A markdown file of a skill graph")
    def graph_file(graph: str, file: str) -> str:
        text = tools.graphs.read(graph, file)
        if text is None:
            raise ResourceNotFoundError(f"no file {file!r} in graph {graph!r}")
        return text

    return server
