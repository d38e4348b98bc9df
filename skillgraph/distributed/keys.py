"""The names of the Redis keys of a shared frontier (``<frontier>:requests``, ``:dupefilter``, workers, the
shared profile) and of one distributed build's shared state (``<frontier>:build:*``; DESIGN.md "Redis keys").

Names only, no client: the components that share a frontier agree on them, and a local crawl that
never talks to Redis loads no Redis library to know them. One build is one run of a shared frontier:
every worker of the fleet reads and writes its keys; the last worker out (or ``scrapy assemble``)
deletes them once the graph is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy import Spider


def frontier_name(spider: Spider) -> str:
    """The frontier's name: the spider's, or ``spider:graph`` when the spider builds a graph of another name."""
    graph = getattr(spider, "graph_name", None)
    return spider.name if not graph or graph == spider.name else f"{spider.name}:{graph}"


@dataclass(frozen=True)
class FrontierKeys:
    """The Redis keys of one frontier (``name`` is the spider, or ``spider:graph`` for ``docs``)."""

    requests: str
    dupefilter: str
    workers: str
    inflight_prefix: str
    profile: str  # the leader's detection, shared (skillgraph.distributed.detection)
    detect_lock: str  # held by the worker that detects

    @classmethod
    def for_name(cls, name: str, queue_key: str = "%(spider)s:requests",
                 dupefilter_key: str = "%(spider)s:dupefilter") -> FrontierKeys:
        return cls(queue_key % {"spider": name}, dupefilter_key % {"spider": name}, f"{name}:workers",
                   f"{name}:inflight:", f"{name}:profile", f"{name}:detect:lock")


@dataclass(frozen=True)
class BuildKeys:
    """Key names under ``<frontier>:build:`` (``frontier`` is the spider, or ``docs:<graph>``)."""

    prefix: str

    @classmethod
    def for_frontier(cls, frontier: str) -> BuildKeys:
        return cls(f"{frontier}:build:")

    @property
    def pattern(self) -> str:
        """Every key of this build (for SCAN and deletion)."""
        return self.prefix + "*"

    # -- fleet-wide limits -----------------------------------------------------------------------
    @property
    def budget(self) -> str:
        """String counter: pages admitted fleet-wide against ``SKILLGRAPH_MAX_PAGES``."""
        return self.prefix + "budget"

    @property
    def hashes(self) -> str:
        """Hash ``sha256 -> url`` of the first page with that content (content dedup across workers)."""
        return self.prefix + "hashes"

    def slot(self, host: str) -> str:
        """Politeness state of one host (next allowed request time, backoff), shared by every worker."""
        return self.prefix + "slot:" + host

    def leases(self, host: str) -> str:
        """Sorted set ``lease id -> expiry``: the host's requests in flight across the fleet (its concurrency)."""
        return self.prefix + "leases:" + host

    def wake(self, host: str) -> str:
        """List a released lease of the host pushes a token to, for a request waiting for one (``BLPOP``)."""
        return self.prefix + "wake:" + host

    # -- one graph out of the fleet --------------------------------------------------------------
    @property
    def pages(self) -> str:
        """Hash ``url -> page record`` (markdown included) waiting for assembly."""
        return self.prefix + "pages"

    @property
    def skipped(self) -> str:
        """Hash ``url -> skipped entry`` of every worker."""
        return self.prefix + "skipped"

    @property
    def warnings(self) -> str:
        """List of build warnings of every worker (JSON)."""
        return self.prefix + "warnings"
