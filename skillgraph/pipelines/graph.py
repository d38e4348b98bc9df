"""GraphWriterPipeline: a build's pages, ``sources.json``, and whether it is committed.

The files themselves are :class:`skillgraph.graph.folder.GraphFolder`'s (a
staging build swapped in atomically); this pipeline decides what goes in and
whether the build replaces the live graph:

* a build that ends with no pages, or for a reason other than finishing, a
  bound or an interrupt, is discarded: the old graph stays and
  ``graphs/<name>.failed.json`` says why; so is a build the shrink guard stops
  (it would remove most of the live graph, or put only best-effort pages over
  real ones) unless ``SKILLGRAPH_ALLOW_SHRINK`` is set;
* a truncated build (a bound, the timeout, SIGINT/SIGTERM) is committed with the
  live pages it did not reach carried over: never counted as removed;
* except a distributed worker that *followed* another's detection and wrote no
  page (an ``llms-full`` corpus is all the leader's; a small site may be
  fetched by the others): its share is empty, not failed. Nothing is
  committed or recorded, so it never writes ``failed.json`` beside the good
  graph the leader built; the leader still fails a build that has no pages.
* a distributed worker of a fleet (``REDIS_URL``, ``SKILLGRAPH_ASSEMBLY_ENABLED``)
  commits no graph of its own: each page it admits goes to the fleet's build in
  Redis (:class:`skillgraph.distributed.share.BuildShare`), and the last worker
  out writes the one graph from every worker's pages
  (:meth:`GraphWriterPipeline._hand_over`, :mod:`skillgraph.distributed.assembly`). When Redis
  cannot be reached at close, nobody can assemble: the worker commits the graph of its own pages
  (it wrote them to its staging folder too), as a local crawl.

The decision runs on ``spider_closed``, the first point that knows the close
reason, after every item has gone through the pipelines. What is written, and
every URL's outcome, come from the Build (:mod:`skillgraph.build`); the writer
records the outcome there and sends ``build_committed`` or ``build_failed``.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy import signals
from scrapy.utils.defer import deferred_from_coro

from skillgraph.build import Build
from skillgraph.distributed.share import BuildShare
from skillgraph.files import disk_writer
from skillgraph.graph.folder import GraphFolder
from skillgraph.graph.names import GraphNameError
from skillgraph.graph.sources import failure_json, llms_summary, scrape_profile, shrink_guard, sources_json
from skillgraph.items import sha256_text
from skillgraph.middlewares.strategy import detection_done
from skillgraph.page.pool import PagePool
from skillgraph.signals import build_committed, build_failed, page_not_modified

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

WRITE_FAILED = "graph_write_failed"  #: close reason when the graphs folder refused a write
SUCCESS_REASONS = {"finished", "max_pages", "crawl_timeout", "closespider_pagecount", "closespider_itemcount",
                   "closespider_timeout", "shutdown"}
#: Close reasons of a build that stopped before its scope was done, as ``truncated.reason``.
TRUNCATING_REASONS = {"max_pages": "max_pages", "closespider_pagecount": "max_pages",
                      "closespider_itemcount": "max_pages", "crawl_timeout": "crawl_timeout",
                      "closespider_timeout": "crawl_timeout", "shutdown": "interrupted"}


class GraphWriterPipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.build = Build.of(crawler)
        self.graphs_dir = Path(crawler.settings.get("SKILLGRAPH_GRAPHS_DIR", "graphs"))
        self.allow_shrink = crawler.settings.getbool("SKILLGRAPH_ALLOW_SHRINK", False)
        self.local_links = crawler.settings.getbool("SKILLGRAPH_GRAPH_LOCAL_LINKS", True)
        self.pages: list[dict[str, Any]] = []
        self.files: dict[str, str] = {}  # page URL -> file name
        self.titles: dict[str, str] = {}  # page URL -> title (for llms.txt; not a sources.json field)
        self.link_offsets: dict[str, bytes] = {}  # file -> where its links start (the page workers read them)
        self.descriptions: dict[str, str] = {}  # page URL -> its llms.txt description (the page workers wrote it)
        self.folder: GraphFolder | None = None
        self.share: BuildShare | None = None  # a fleet worker's pages go to the fleet's build, not a graph
        self.finished = False
        self.write_failed = False  # a write to the graphs folder failed: the build cannot be committed
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(self.carry_over, signal=page_not_modified)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> GraphWriterPipeline:
        return cls(crawler)

    @property
    def name(self) -> str:
        return str(self.build.name or getattr(self.crawler.spider, "name", "graph"))

    @property
    def staging(self) -> Path | None:
        return self.folder.staging if self.folder is not None else None

    def open_spider(self) -> None:
        if self.build.name is not None:  # only skillgraph spiders build graphs (``scrapy detect``'s does not)
            try:
                self.folder = GraphFolder(self.graphs_dir, self.name, disk_writer(self.crawler))
            except (OSError, GraphNameError) as exc:
                self._cannot_write(exc)
                return
            self.share = BuildShare.for_crawler(self.crawler)

    def _cannot_write(self, exc: Exception) -> None:
        """The graphs folder refused a write (full disk, read-only, a name or path refused): the build fails
        with one sentence naming the setting and the path, and the crawl stops (nothing more can be kept)."""
        if self.build.failure is None:
            where = getattr(exc, "filename", None)
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.build.failure = f"cannot write to SKILLGRAPH_GRAPHS_DIR={self.graphs_dir} (" + (
                f"{where}: {why})" if where else f"{why})")
            logger.debug("Graph %s: write refused", self.name, exc_info=exc)
            self.crawler.stats.set_value("skillgraph/graph/write_error", why)
        self.write_failed = True
        if self.crawler.engine is not None and self.crawler.engine.spider is not None:
            deferred_from_coro(self.crawler.engine.close_spider_async(reason=WRITE_FAILED))

    async def spider_opened(self) -> None:
        if self.write_failed:  # the build folder could not be made: stop before the first request
            self._cannot_write(OSError())

    async def close_spider(self) -> None:
        """Before the scheduler leaves the frontier: the share complete in Redis for whoever is last out."""
        if self.share is not None and self.share.redis is not None:
            await self.share.flush(self.build, final=True)

    def _scope(self, url: str) -> str:
        return self.build.profile.scope if self.build.profile is not None else url

    async def process_item(self, item: Any) -> Any:
        adapter = ItemAdapter(item)
        if self.folder is None or self.write_failed:
            return item
        if self.finished:  # an item after the close (a pipeline still busy): the build folder is closed
            self.crawler.stats.inc_value("skillgraph/graph/after_close")
            return item
        await detection_done(self.crawler)  # a page resumed from JOBDIR may come before the profile (its scope)
        url = adapter["url"]
        markdown: str = adapter["markdown"]
        adapter["sha256"] = sha = adapter.get("sha256") or sha256_text(markdown)
        meta = adapter.get("meta")
        verdict = meta.get("admission") if isinstance(meta, dict) else None
        verdict = verdict or self.build.admit(url, sha, corpus=adapter["tier"] == "corpus")
        if verdict == "same-url" or url in self.files:
            self.crawler.stats.inc_value("skillgraph/graph/duplicate_url")
            return item
        if verdict == "same-content":
            # The same page under a second URL (``/docs/`` and ``/docs/index.html``): one file.
            self.crawler.stats.inc_value("skillgraph/graph/duplicate_content")
            logger.debug("%s has the same content as %s; not written twice", url, self.build.aliases.get(url))
            return item
        if verdict != "new":
            return item
        file_name = self.folder.claim(url, self._scope(url))
        self.files[url] = file_name
        self.titles[url] = str(adapter.get("title") or "")
        page = {"url": url, "file": file_name, "sha256": sha, "fetched_at": sys.intern(adapter["fetched_at"]),  # shared
                "tier": sys.intern(adapter["tier"]), "quality": adapter.get("quality")}
        self.pages.append(page)
        if isinstance(meta, dict):
            if meta.get("link_offsets"):
                self.link_offsets[file_name] = meta["link_offsets"]
            if meta.get("description") is not None:
                self.descriptions[url] = meta["description"]
        try:
            await self.folder.write(file_name, markdown)  # a fleet worker too: its own graph if Redis is lost at close
        except OSError as exc:
            self._cannot_write(exc)
            return item
        if self.share is not None and await self.share.joined():
            await self.share.add_page({**page, "title": self.titles[url], "markdown": markdown})
        self.crawler.stats.inc_value("skillgraph/graph/pages")
        self.crawler.stats.inc_value(f"skillgraph/graph/tier/{adapter['tier']}")
        return item

    def carry_over(self, url: str, spend: bool = True, finishing: bool = False) -> bool:
        """Copy an unchanged page (no new body) from the live graph into this build (``finishing``: by the writer)."""
        previous = self.build.previous.pages.get(url)
        source = self.build.previous.file(url)
        closed = self.finished and not finishing
        if previous is None or source is None or self.folder is None or closed or url in self.files:
            self.crawler.stats.inc_value("skillgraph/graph/carry_over_missing")
            return False
        if self.build.admit(url, str(previous.get("sha256", "")), corpus="#" in url, spend=spend) != "new":
            return False
        file_name = self.folder.claim(url, self._scope(url))
        try:
            self.folder.copy(source, file_name)
        except OSError as exc:
            self._cannot_write(exc)
            return False
        if self.share is not None and self.share.active():
            self.share.queue_page({**previous, "markdown": source.read_text("utf-8")}, carried=True)
        self.files[url] = file_name
        self.pages.append({**previous, "file": file_name})
        self.crawler.stats.inc_value("skillgraph/graph/carried_over")
        self.crawler.stats.inc_value("skillgraph/graph/pages")
        self.crawler.stats.inc_value(f"skillgraph/graph/tier/{previous.get('tier') or 'unknown'}")
        return True

    # finishing --------------------------------------------------------------

    async def spider_closed(self, reason: str) -> None:
        if self.share is not None and self.folder is not None and not self.finished and await self.share.joined():
            outcome = await self._hand_over(reason, reason in SUCCESS_REASONS)
        else:
            outcome = self._finish(reason)
        if outcome is not None:
            signal = build_committed if outcome == "committed" else build_failed
            await self.crawler.signals.send_catch_log_async(signal, build=self.build)

    async def _hand_over(self, reason: str, success: bool) -> str | None:
        """A fleet worker's close: its share goes to the fleet's build; the last worker out assembles the graph."""
        assert self.share is not None and self.folder is not None
        self.finished = True
        build = self.build
        self._mark_truncated(reason)
        if success:
            if build.truncation() is not None:
                self._carry_unreached()
            elif build.previous.skipped:
                self.share.kept_from_previous = {str(e["url"]) for e in build.previous.skipped
                                                 if not build.knows(str(e["url"]))}
                self._keep_previous_skips()
        if not await self.share.close(build):  # Redis lost: nobody can assemble now; this worker's pages are a graph
            await self.share.aclose()
            self.crawler.stats.set_value("skillgraph/assembly/local_graph", 1)
            logger.warning("Graph %s: the fleet's build is out of reach; this worker commits the graph of its own "
                           "pages, as a local crawl would", self.name)
            self.finished = False
            return self._finish(reason)
        self.folder.discard()  # the pages are in the fleet's build
        if not self.pages:  # a follower with nothing to do (an llms-full corpus is the leader's): not a failure
            self.crawler.stats.set_value("skillgraph/graph/empty_share", 1)
        # Imported here: a local crawl never loads the assembly (nor redis-py, 70 ms of every start).
        from skillgraph.distributed.assembly import Target, assemble_here

        target = Target(self.graphs_dir, self.name, build.previous, self.allow_shrink, self.local_links, reason)
        try:
            result = await assemble_here(self.crawler, self.share, target)
        finally:
            await self.share.aclose()
        if result.outcome == "committed":
            build.outcome, build.graph_path = "committed", result.path
            self.crawler.stats.set_value("skillgraph/graph/committed", 1)
            return "committed"
        if result.outcome == "failed":
            build.outcome, build.failure = "failed", result.why
            self.crawler.stats.set_value("skillgraph/graph/failed", result.why)
            return "failed"
        # handed over: the last worker out (or scrapy assemble) commits the graph
        build.outcome = "handed-over" if self.pages else "empty-share"
        return None

    def _finish(self, reason: str) -> str | None:
        """Commit or fail the build once; returns the outcome (None when nothing is recorded)."""
        if self.write_failed and not self.finished:
            self.finished = True
            self._fail(self.build.failure or "a write to the graphs folder failed", reason)
            return "failed"
        if self.folder is None or self.finished:
            return None
        self.finished = True
        build = self.build
        self._mark_truncated(reason)
        if self.pages and reason in SUCCESS_REASONS:
            if build.truncation() is not None:
                self._carry_unreached()
            elif build.previous.skipped:
                self._keep_previous_skips()
            why = shrink_guard(build.previous.pages, self.pages, self.allow_shrink)
            if why is None:
                try:
                    self._commit()
                except OSError as exc:  # a full disk at llms-full.txt or sources.json: the live graph stays
                    self._cannot_write(exc)
                    self._fail(self.build.failure or str(exc), reason)
                    return "failed"
                return "committed"
            self._fail(why, reason)
            return "failed"
        if build.followed and not self.pages and reason in SUCCESS_REASONS:
            # A distributed worker that followed another's detection and wrote no page: its share is
            # empty, not failed (nothing committed or recorded beside the leader's good graph).
            self.folder.discard()
            self.build.outcome = "empty-share"
            self.crawler.stats.set_value("skillgraph/graph/empty_share", 1)
            logger.info("Graph %s: this worker followed a shared crawl and wrote no page; nothing to commit "
                        "or record (the workers that wrote pages build the graph)", self.name)
            return None
        why = "no pages were written" if not self.pages else f"the crawl ended with {reason!r}"
        self._fail(why, reason)
        return "failed"

    def _mark_truncated(self, reason: str) -> None:
        build = self.build
        if reason in TRUNCATING_REASONS and build.truncated is None and (build.unreached() or reason == "shutdown"):
            build.truncated = {"limit": None, "reason": TRUNCATING_REASONS[reason], "skipped": 0}

    def _carry_unreached(self) -> None:
        """A truncated build keeps the live pages it did not reach (DESIGN.md): never counted as removed."""
        carried = 0
        for url in self.build.previous.pages:
            entry = self.build.ledger.get(url)
            if url not in self.files and (entry is None or entry.outcome is None):
                carried += self.carry_over(url, spend=False, finishing=True)
        if carried:
            logger.info("Graph %s: %d live pages this truncated build did not reach are carried over",
                        self.name, carried)

    def _keep_previous_skips(self) -> None:
        """Skips of the live graph whose URLs this build never met again (only carried pages link to them)."""
        for entry in self.build.previous.skipped:
            url = str(entry["url"])
            if not self.build.knows(url):
                self.build.skip(url, str(entry.get("reason") or "http"), entry.get("status"), entry.get("detail"))

    def _commit(self) -> None:
        assert self.folder is not None
        order = {url: i for i, url in enumerate(self.build.ledger)}  # learned order: the site's order
        self.pages.sort(key=lambda p: order.get(p["url"], len(order)))
        old_files = {page["file"]: url for url, page in self.build.previous.pages.items()}
        total = self.folder.finish(self.pages, self.titles, self.build.aliases, old_files,
                                   llms_summary(scrape_profile(self.build)), self.local_links,
                                   PagePool.of(self.crawler).running_executor(), self.link_offsets,
                                   self.descriptions)
        if self.local_links:
            self.crawler.stats.set_value("skillgraph/graph/local_links", total)
            logger.info("Graph %s: %d links between its pages point at their files", self.name, total)
        self.folder.commit(sources_json(self.name, self.build, self.pages))
        self.build.outcome, self.build.graph_path = "committed", str(self.folder.live)
        self.crawler.stats.set_value("skillgraph/graph/committed", 1)
        logger.info("Graph %s: %d pages in %s", self.name, len(self.pages), self.folder.live)

    def _fail(self, why: str, reason: str) -> None:
        build = self.build
        if self.folder is not None:
            try:
                self.folder.discard(failure_json(self.name, build, self.pages, why, reason, self.folder.live.exists()))
                build.failed_path = str(self.folder.failed_path)
            except OSError:  # the disk that failed the build may refuse failed.json too: the log says why
                logger.warning("Could not record the failure of graph %s in %s", self.name, self.folder.failed_path,
                               exc_info=True)
        build.outcome, build.failure = "failed", why
        self.crawler.stats.set_value("skillgraph/graph/failed", why)
        logger.error("Build of graph %s failed (%s); the previous graph is kept", self.name, why)
