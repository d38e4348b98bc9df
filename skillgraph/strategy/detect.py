"""The detection spider: run the SiteProfiler on many sites at once and crawl nothing.

``scrapy detect`` and the batch's detection phase both run it. It lives outside
``skillgraph/spiders/`` so ``scrapy list`` and scrapyd never offer it.

Probes are the profiler's own (requests through the engine, so robots.txt,
politeness and the SSRF guard apply), one coroutine per site and so one probe
at a time per site. Each site may be bounded (``timeout``): a site that does
not answer then gets no profile instead of holding the others up for its
download timeouts. A site whose detection times out or raises does not stop
the others; what became of each site is written onto its :class:`Detection`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy import Spider

from skillgraph.strategy.profiler import SiteProfile, SiteProfiler

if TYPE_CHECKING:
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)


@dataclass(eq=False)
class Detection:
    """One site to profile, and its outcome: a ``profile``, or an ``error`` saying why there is none."""

    url: str
    scope: str | None = None  # None: the URL's own directory
    hint: str | None = None  # a spider's strategy hint: forces that strategy
    label: str = ""  # names the site in log lines (a spider name; else the URL)
    profile: SiteProfile | None = None
    error: str | None = None  # "detection timed out after ...s" or "detection failed: ..."
    exception: Exception | None = None  # what raised (None for a timeout)


class DetectSpider(Spider):
    """Profiles its sites and yields nothing.

    ``timeout`` bounds each site (seconds; None: no bound). ``on_done(detection, stats)``
    is called once per site as soon as its outcome is known, inside the crawl (so
    it can count stats).
    """

    name = "skillgraph_detect"

    def __init__(self, sites: Sequence[Detection], timeout: float | None = None,
                 on_done: Callable[[Detection, StatsCollector], None] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sites = sites
        self.timeout = timeout
        self.on_done = on_done

    async def start(self) -> AsyncIterator[Any]:
        profiler = SiteProfiler.from_crawler(self.crawler)
        await asyncio.gather(*(self._one(profiler, site) for site in self.sites))
        return
        yield  # pragma: no cover - makes this an async generator

    async def _one(self, profiler: SiteProfiler, site: Detection) -> None:
        bound = asyncio.timeout(self.timeout)
        try:
            async with bound:
                site.profile = await profiler.profile(site.url, scope=site.scope, strategy=site.hint)
        except Exception as exc:
            if isinstance(exc, TimeoutError) and bound.expired():
                site.error = f"detection timed out after {self.timeout:g}s"
            else:
                site.error = f"detection failed: {exc!r}"[:300]
                site.exception = exc
            logger.debug("Detecting %s: %s", site.label or site.url, site.error, exc_info=site.exception)
        if self.on_done is not None:
            stats = self.crawler.stats
            assert stats is not None
            self.on_done(site, stats)
