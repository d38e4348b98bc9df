"""PreviousBuild: the live graph a build replaces, read once from its ``sources.json``.

The one reader of the previous ``sources.json`` (the recency and conditional
middlewares, the graph writer and the strategy all ask it): its pages by URL
(for carry-over and ``changes``), its ``skipped`` entries, and, when it was
truncated, the URLs it left unreached, which the next run of the same command
fetches first (DESIGN.md, "finish what was cut short").
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillgraph.graph.names import is_file_name, is_graph_name

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


@dataclass
class PreviousBuild:
    path: Path | None = None  # the live graph folder (through its symlink), None when there is none
    pages: dict[str, dict[str, Any]] = field(default_factory=dict)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    truncated: dict[str, Any] | None = None

    @property
    def unreached(self) -> list[str]:
        """What a truncated or interrupted previous build knew of and never fetched."""
        if not self.truncated:
            return []
        urls = self.truncated.get("unreached")
        return [u for u in urls if isinstance(u, str)] if isinstance(urls, list) else []

    def file(self, url: str) -> Path | None:
        page = self.pages.get(url)
        if page is None or self.path is None:
            return None
        file = page.get("file")
        if not is_file_name(file):  # a hand-edited sources.json naming ../x: fetched again, never read
            return None
        path = self.path / str(file)
        return path if path.is_file() else None

    @classmethod
    def load(cls, crawler: Crawler, name: str | None) -> PreviousBuild:
        if not name or not is_graph_name(name):
            return cls()
        folder = Path(crawler.settings.get("SKILLGRAPH_GRAPHS_DIR", "graphs")) / name
        sources = folder / "sources.json"
        try:
            data = json.loads(sources.read_text("utf-8"))
            pages = {p["url"]: p for p in data["pages"]}
        except FileNotFoundError:
            return cls()
        except (ValueError, KeyError, TypeError):
            crawler.stats.inc_value("skillgraph/build/previous_unreadable")
            logger.warning("Unreadable %s: every page is fetched again and nothing is carried over", sources,
                           exc_info=True)
            return cls()
        skipped = [s for s in data.get("skipped") or [] if isinstance(s, dict) and "url" in s]
        truncated = data.get("truncated") if isinstance(data.get("truncated"), dict) else None
        return cls(folder.resolve(), pages, skipped, truncated)
