"""The Redis keys of one distributed build's shared state: ``<frontier>:build:*`` (DESIGN.md "Redis keys").

One build is one run of a shared frontier. Every worker of the fleet reads and
writes these keys; the last worker out (or ``scrapy assemble``) deletes them once
the graph is written. Names live here so that the components sharing a build agree.
"""

from __future__ import annotations

from dataclasses import dataclass


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
