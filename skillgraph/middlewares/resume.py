"""ResumeJournal: a ``JOBDIR`` run that was stopped resumes into a *complete* graph.

Scrapy's JOBDIR persists the scheduler queue and the dupefilter, so a resumed
run fetches only what the stopped run had not fetched. But a graph build is a
fresh folder each run, and the stopped run's build was discarded (close reason
``shutdown``): the pages it fetched would be missing from the resumed build.

So, with JOBDIR set, every document that reached the graph (``item_scraped``)
and every page carried over (``page_not_modified``) is appended to
``JOBDIR/skillgraph/pages.jsonl``. When a run starts with that journal present,
its entries are replayed right after the spider's first start output (once the
profile is known): documents are yielded again through the pipelines (the
dedup pipeline finds them unchanged, so nothing is rewritten or re-queued),
carried-over pages are carried over again. The journal is deleted once a
build is committed. Use one JOBDIR per job, as Scrapy documents.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.job import job_dir

from skillgraph.build import Build
from skillgraph.items import DocumentItem
from skillgraph.signals import page_not_modified

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

FIELDS = ("url", "title", "markdown", "sha256", "fetched_at", "source", "domain", "strategy", "tier", "quality")


class ResumeJournal:
    def __init__(self, crawler: Crawler) -> None:
        jobdir = job_dir(crawler.settings)
        if not jobdir:
            raise NotConfigured  # only JOBDIR runs resume; no message, so Scrapy does not warn each run
        self.crawler = crawler
        self.path = Path(jobdir) / "skillgraph" / "pages.jsonl"
        self.entries = self._read()
        self.replaying = False
        self.handle: IO[str] | None = None
        crawler.signals.connect(self.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(self.not_modified, signal=page_not_modified)
        crawler.signals.connect(self.engine_stopped, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ResumeJournal:
        return cls(crawler)

    def _read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        by_url: dict[str, dict[str, Any]] = {}
        for line in self.path.read_text("utf-8").splitlines():
            try:
                entry = json.loads(line)
                by_url[entry["url"]] = entry
            except (ValueError, KeyError, TypeError):
                continue  # a line cut by a hard kill: that page is fetched again
        return list(by_url.values())

    def _append(self, entry: dict[str, Any]) -> None:
        if self.handle is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.handle = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - open for the whole run
        self.handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
        self.handle.flush()

    def item_scraped(self, item: Any) -> None:
        adapter = ItemAdapter(item)
        if "markdown" in adapter:
            self._append({"url": adapter["url"], "item": {name: adapter.get(name) for name in FIELDS}})

    def not_modified(self, url: str) -> None:
        if not self.replaying:
            self._append({"url": url, "not_modified": True})

    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        replayed = False
        async for output in start:
            yield output
            if not replayed:
                replayed = True
                for item in self.replay():
                    yield item
        if not replayed:
            for item in self.replay():
                yield item

    def replay(self) -> Iterator[DocumentItem]:
        if not self.entries:
            return
        logger.info("Resuming: %d pages from the stopped run's journal %s", len(self.entries), self.path)
        build = Build.of(self.crawler)
        for entry in self.entries:
            build.learn(entry["url"], "previous")
            self.crawler.stats.inc_value("skillgraph/resume/replayed")
            if entry.get("not_modified"):
                self.replaying = True
                self._append(entry)
                self.crawler.signals.send_catch_log(page_not_modified, url=entry["url"])
                self.replaying = False
            else:
                yield DocumentItem(**entry["item"])
        self.entries = []

    def engine_stopped(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None
        if Build.of(self.crawler).outcome == "committed" and self.path.exists():
            self.path.unlink()
