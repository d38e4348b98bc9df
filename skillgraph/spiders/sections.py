"""SectionsSpider: a site whose documentation lives in several top-level sections.

A scope is one directory (DESIGN.md); some wikis keep their docs in more than
one (OpenWrt: ``/docs/`` and ``/toh/``, beside forum-like and news pages). Such
a spider declares ``scope`` as the common root and ``sections`` as the path
prefixes to keep: sitemap URLs and followed links outside every section are
skipped and counted, exactly like URLs outside a scope.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar
from urllib.parse import urlsplit

from skillgraph.spiders.base import SkillgraphSpider
from skillgraph.strategy.profiler import SiteProfile


class SectionsSpider(SkillgraphSpider):
    """Declare ``sections``: URL path prefixes (``"/docs/"``) that hold the documentation."""

    sections: ClassVar[tuple[str, ...]] = ()

    def in_sections(self, url: str) -> bool:
        path = urlsplit(url).path or "/"
        return not self.sections or any(path.startswith(s) or path + "/" == s for s in self.sections)

    def strategy_output(self, profile: SiteProfile) -> Iterator[Any]:
        if profile.strategy == "sitemap":
            kept = [u for u in profile.page_urls if self.in_sections(u)]
            self._skipped(len(profile.page_urls) - len(kept))
            profile.page_urls = kept
        yield from super().strategy_output(profile)

    def in_site(self, url: str) -> bool:
        if self.in_sections(url):
            return True
        self._skipped(1)
        return False

    def _skipped(self, count: int) -> None:
        if count:
            self.crawler.stats.inc_value("skillgraph/sections/out_of_section", count)
