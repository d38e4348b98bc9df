"""The detection phase: profile every site at once, in one crawler, each within a bound.

It runs the :class:`~skillgraph.strategy.detect.DetectSpider` (the one ``scrapy detect``
runs) with a per-site bound: a site that does not answer gets no strategy (it
then runs with the web crawls) instead of holding the batch up for its download
timeouts. Each site's strategy, or why it has none, is written onto its ``Site``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from skillgraph.batch.plan import Site
from skillgraph.strategy.detect import Detection, DetectSpider

if TYPE_CHECKING:
    from scrapy.crawler import CrawlerProcessBase
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)


def detect_sites(process: CrawlerProcessBase, sites: list[Site], timeout: float) -> None:
    """Run one detection crawler over ``sites`` to its end (``process.start()``), each within ``timeout`` seconds."""
    detections = [Detection(site.url, scope=site.scope, hint=site.hint, label=site.name) for site in sites]
    crawler = process.create_crawler(DetectSpider)
    process.crawl(crawler, sites=detections, timeout=timeout, on_done=_count_failure)
    process.start()
    for site, detection in zip(sites, detections, strict=True):
        if detection.profile is not None:
            site.strategy = detection.profile.strategy
        site.detect_error = detection.error


def _count_failure(detection: Detection, stats: StatsCollector) -> None:
    """Count and log a site whose detection timed out or raised."""
    if detection.profile is not None:
        return
    if detection.exception is None:
        stats.inc_value("skillgraph/batch/detect_timeout")
        logger.warning("Batch: %s: %s", detection.label, detection.error)
    else:
        stats.inc_value("skillgraph/batch/detect_error")
        logger.warning("Batch: %s: %s", detection.label, detection.error, exc_info=detection.exception)
