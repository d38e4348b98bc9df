"""Read-only view of the skill graphs in ``SKILLGRAPH_GRAPHS_DIR``: which graph file holds a URL.

Search hits and the MCP server cite the graph file that holds a page
(``docs.python.org_3_library`` + ``json.md``). The graph writer records every
page's URL and file in ``graphs/<name>/sources.json``; this module reads those
(cached per graph until its ``sources.json`` changes, so a build swapped in
meanwhile is seen) and serves pages with path checks: a file outside its
graph's folder is never read.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillgraph.graph.names import is_graph_name

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class GraphPage:
    graph: str
    file: str
    url: str
    title: str | None = None


class GraphIndex:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._cache: dict[str, tuple[tuple[str, int], dict[str, Any]]] = {}

    def names(self) -> list[str]:
        """Every committed graph: a folder (or the writer's symlink) holding ``sources.json``."""
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir()
                      if is_graph_name(p.name) and (p / "sources.json").is_file())

    def sources(self, graph: str) -> dict[str, Any]:
        """The graph's ``sources.json`` (empty when there is none or it cannot be read)."""
        if graph not in self.names():
            return {}
        path = self.root / graph / "sources.json"
        try:
            key = (os.path.realpath(path), path.stat().st_mtime_ns)  # a new build is a new real path
            cached = self._cache.get(graph)
            if cached and cached[0] == key:
                return cached[1]
            data = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
            logger.warning("Cannot read %s", path, exc_info=True)
            return {}
        self._cache[graph] = (key, data if isinstance(data, dict) else {})
        return self._cache[graph][1]

    def pages(self, graph: str) -> list[GraphPage]:
        out = []
        for page in self.sources(graph).get("pages") or []:
            if isinstance(page, dict) and page.get("url") and page.get("file"):
                out.append(GraphPage(graph, str(page["file"]), str(page["url"]), page.get("title")))
        return out

    def by_url(self, graphs: list[str] | None = None) -> dict[str, GraphPage]:
        """URL -> the graph page holding it (URL fragments kept: llms-full sections are ``#slug`` pages)."""
        found: dict[str, GraphPage] = {}
        for name in graphs if graphs is not None else self.names():
            for page in self.pages(name):
                found.setdefault(page.url, page)
        return found

    def locate(self, url: str, graphs: list[str] | None = None) -> GraphPage | None:
        return self.by_url(graphs).get(url)

    def summary(self, graph: str) -> dict[str, Any]:
        data = self.sources(graph)
        profile = data.get("scrape_profile") or {}
        return {"name": graph, "pages": len(data.get("pages") or []), "built_at": data.get("built_at"),
                "strategy": profile.get("strategy"), "source": profile.get("source"),
                "truncated": bool(data.get("truncated"))}

    def path_of(self, graph: str, file: str) -> Path | None:
        """The file's path when ``file`` names a markdown file inside ``graph`` (never outside it)."""
        if graph not in self.names() or not file or file.startswith(("/", "\\")):
            return None
        folder = (self.root / graph).resolve()
        path = (folder / file).resolve()
        if folder not in path.parents or path.suffix not in (".md", ".txt") or not path.is_file():
            return None
        return path

    def read(self, graph: str, file: str) -> str | None:
        path = self.path_of(graph, file)
        return path.read_text("utf-8") if path else None
