"""The document item: one page of a skill graph.

A dataclass (read and written through ``ItemAdapter``) so that pipelines,
disk items and the store share one typed shape. Field names are the public
contract of ``items/<spider>/<sha256>.json`` (DESIGN.md).

``meta`` holds notes for the pipelines. A spider may leave the page's raw HTML
there (the quality gate reads block signatures in the markup; the tier ladder
leaves its verdict instead, ``meta["assessment"]``). The HTML never leaves the
process as HTML: feed exports (``-O out.jsonl``) serialise ``meta`` through
:func:`export_meta`, which drops the raw page, and the item's ``repr`` (what
Scrapy logs for every scraped or dropped item, scrapyd job logs included) is
one short line: url, title, tier, length.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

TIERS = ("corpus", "markdown", "html", "negotiated", "render", "best-effort")
#: ``meta`` keys kept for the pipelines, never exported: whole pages, and the graph writer's binary notes
#: (``link_offsets``: where the markdown's links start, for the commit).
RAW_META_KEYS = frozenset({"html", "link_offsets"})
_TITLE_REPR_CHARS = 60


def export_meta(meta: dict[str, Any] | None) -> dict[str, Any]:
    """``meta`` as feed exports write it: the pipeline notes without the raw page."""
    return {key: value for key, value in (meta or {}).items() if key not in RAW_META_KEYS}


def sha256_text(markdown: str) -> str:
    """Hex SHA-256 of the markdown as written to the graph (UTF-8)."""
    return hashlib.sha256(markdown.encode("utf-8")).hexdigest()


@dataclass(repr=False)
class DocumentItem:
    url: str
    title: str
    markdown: str
    fetched_at: str
    source: str  # the corpus, index or sitemap URL, or the start URL for crawl
    domain: str
    strategy: str
    tier: str
    quality: float | None = None
    sha256: str = ""
    # notes for pipelines; the raw HTML in it is never exported nor logged
    meta: dict[str, Any] = field(default_factory=dict, metadata={"serializer": export_meta})

    def __post_init__(self) -> None:
        if not self.sha256:
            self.sha256 = sha256_text(self.markdown)

    def __repr__(self) -> str:
        title = self.title if len(self.title) <= _TITLE_REPR_CHARS else self.title[: _TITLE_REPR_CHARS - 1] + "…"
        return f"<DocumentItem {self.url} title={title!r} tier={self.tier} length={len(self.markdown)}>"

    def public(self) -> dict[str, Any]:
        """The published fields (disk item JSON, Redis queue)."""
        return {
            "url": self.url,
            "title": self.title,
            "markdown": self.markdown,
            "sha256": self.sha256,
            "fetched_at": self.fetched_at,
            "source": self.source,
            "domain": self.domain,
            "strategy": self.strategy,
            "tier": self.tier,
            "quality": self.quality,
        }
