"""The document item: one page of a skill graph.

A dataclass (read and written through ``ItemAdapter``) so that pipelines,
disk items and the store share one typed shape. Field names are the public
contract of ``items/<spider>/<sha256>.json`` (DESIGN.md).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

TIERS = ("corpus", "markdown", "html", "negotiated", "render", "best-effort")


def sha256_text(markdown: str) -> str:
    """Hex SHA-256 of the markdown as written to the graph (UTF-8)."""
    return hashlib.sha256(markdown.encode("utf-8")).hexdigest()


@dataclass
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
    meta: dict[str, Any] = field(default_factory=dict, repr=False)  # notes for pipelines (raw HTML: never logged)

    def __post_init__(self) -> None:
        if not self.sha256:
            self.sha256 = sha256_text(self.markdown)

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
