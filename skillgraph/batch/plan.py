"""The sites of a batch, and the order they run in.

Cheap, fast sources first: an llms-full corpus is one fetch and an llms.txt
index a few dozen, so their graphs are ready in seconds; sitemap and crawl
builds take up to their bound. Within a rank, the order given is kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

#: Run order of the strategies; anything undetected runs with the web crawls.
RANK = {"llms-full": 0, "llms-index": 1, "sitemap": 2, "crawl": 3}
WEB_STRATEGIES = ("sitemap", "crawl")


@dataclass
class Site:
    name: str  # the spider
    url: str  # its start URL (rebased on a mirror)
    scope: str | None = None
    hint: str | None = None  # the spider's strategy hint
    base_url: str | None = None  # -a base_url=... for the crawl
    strategy: str | None = None  # detected
    detect_error: str | None = None

    @property
    def rank(self) -> int:
        return RANK.get(self.strategy or "", len(RANK))

    @property
    def is_web_crawl(self) -> bool:
        return self.strategy not in ("llms-full", "llms-index")


@dataclass
class SiteResult:
    name: str
    strategy: str | None
    status: str  # "ok" | "failed" | "killed"
    pages: int
    elapsed: float
    bound: float = 0.0  # the wall bound it ran under (seconds)
    reason: str | None = None
    returncode: int | None = None
    pid: int | None = None  # the crawl's process group
    started: int = 0  # its place in the run order (1 = started first); ``order`` in the report is completion
    started_at: str = ""
    finished_at: str = ""
    log: str = ""
    stats: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "strategy": self.strategy,
            "status": self.status,
            "pages": self.pages,
            "elapsed": round(self.elapsed, 2),
            "bound": self.bound if math.isfinite(self.bound) else None,  # None: SKILLGRAPH_CRAWL_TIMEOUT=0
            "reason": self.reason,
            "returncode": self.returncode,
            "pid": self.pid,
            "started": self.started,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "log": self.log,
        }


def ordered(sites: list[Site]) -> list[Site]:
    """llms-full, then llms-index, then sitemap, then crawl (and undetected); stable."""
    return sorted(sites, key=lambda s: s.rank)
