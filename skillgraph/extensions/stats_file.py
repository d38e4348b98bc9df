"""StatsFile: write the final stats as JSON to ``SKILLGRAPH_STATS_FILE``.

Scrapy only logs its stats; the batch runner and the tests read them from
this file instead of parsing logs.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured

from skillgraph.files import write_atomic

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return value


class StatsFile:
    def __init__(self, crawler: Crawler) -> None:
        path = crawler.settings.get("SKILLGRAPH_STATS_FILE")
        if not path:
            raise NotConfigured  # opt-in: no message, so Scrapy does not warn on every run
        self.path = Path(path)
        self.crawler = crawler
        crawler.signals.connect(self.engine_stopped, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StatsFile:
        return cls(crawler)

    def engine_stopped(self, **_: object) -> None:
        assert self.crawler.stats is not None
        stats = {k: _jsonable(v) for k, v in self.crawler.stats.get_stats().items()}
        write_atomic(self.path, json.dumps(stats, indent=2, sort_keys=True, default=str))
