"""The detection phase: profile every site at once, in one crawler, each within a bound.

The same ``SiteProfiler`` a crawl runs (probes through the engine, so robots.txt,
politeness and the SSRF guard apply), one coroutine per site, each under
``asyncio.wait_for``: a site that does not answer gets no strategy (it then runs
with the web crawls) instead of holding the batch up for its download timeouts.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

from scrapy import Spider

from skillgraph.batch.plan import Site
from skillgraph.profiler import SiteProfiler

logger = logging.getLogger(__name__)


class BatchDetectSpider(Spider):
    """Profiles its sites and yields nothing; results are written onto the ``Site`` objects."""

    name = "skillgraph_batch_detect"

    def __init__(self, sites: list[Site], timeout: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sites = sites
        self.timeout = timeout

    async def start(self) -> AsyncIterator[Any]:
        profiler = SiteProfiler.from_crawler(self.crawler)
        await asyncio.gather(*(self._one(profiler, site) for site in self.sites))
        return
        yield  # pragma: no cover - makes this an async generator

    async def _one(self, profiler: SiteProfiler, site: Site) -> None:
        stats = self.crawler.stats
        assert stats is not None
        try:
            profile = await asyncio.wait_for(profiler.profile(site.url, scope=site.scope, strategy=site.hint),
                                             self.timeout)
        except TimeoutError:
            site.detect_error = f"detection timed out after {self.timeout:g}s"
            stats.inc_value("skillgraph/batch/detect_timeout")
            logger.warning("Batch: %s: %s", site.name, site.detect_error)
        except Exception as exc:
            site.detect_error = f"detection failed: {exc!r}"[:300]
            stats.inc_value("skillgraph/batch/detect_error")
            logger.warning("Batch: %s: %s", site.name, site.detect_error, exc_info=True)
        else:
            site.strategy = profile.strategy
