"""GraphWriterPipeline: write pages into a staging build, swap it in atomically.

Scrapy's feed exports write one file per crawl; a skill graph is a folder
whose readers must never see it half-built, with provenance beside it. So:

* each build is written to ``graphs/.builds/<name>/<build-id>/``;
* on success, ``graphs/<name>`` (a symlink) is switched to it with
  ``os.replace`` — readers see the old graph or the new one, never a mix;
* a build that ends with no pages, or for a reason other than finishing or a
  bound, is discarded: the old graph stays and ``graphs/<name>.failed.json``
  says why;
* except a distributed worker that *followed* another's detection and wrote no
  page (an ``llms-full`` corpus is all the leader's; a small site may be
  fetched by the others): its share is empty, not failed. Nothing is
  committed or recorded, so it never writes ``failed.json`` beside the good
  graph the leader built; the leader still fails a build that has no pages.

The decision runs on ``spider_closed``, the first point that knows the close
reason, after every item has gone through the pipelines.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy import signals

from skillgraph.graph_links import LocalLinks, rewrite_links
from skillgraph.items import sha256_text
from skillgraph.profiler import utc_now
from skillgraph.signals import build_deadline, build_truncated, build_warning, page_not_modified, profile_detected
from skillgraph.urls import file_stem_for

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from skillgraph.profiler import SiteProfile

logger = logging.getLogger(__name__)

SUCCESS_REASONS = {"finished", "max_pages", "crawl_timeout", "closespider_pagecount", "closespider_itemcount",
                   "closespider_timeout"}
KEEP_BUILDS = 2  # the live build and the one before it


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to a temp file beside ``path`` and move it into place."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


class GraphWriterPipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.graphs_dir = Path(crawler.settings.get("SKILLGRAPH_GRAPHS_DIR", "graphs"))
        self.pages: list[dict[str, Any]] = []
        self.warnings: list[dict[str, Any]] = []
        self.truncated: dict[str, Any] | None = None
        self.profile: SiteProfile | None = None
        self.followed = False  # the profile is another distributed worker's (skillgraph.distributed.detection)
        self.files: dict[str, str] = {}  # page URL -> file name
        self.taken: set[str] = set()  # file names used in this build
        self.hashes: dict[str, str] = {}  # sha256 -> first page URL with that content
        self.aliases: dict[str, str] = {}  # URL not written -> the URL written with the same content
        self.local_links: bool = crawler.settings.getbool("SKILLGRAPH_GRAPH_LOCAL_LINKS", True)
        self.staging: Path | None = None
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(self.on_warning, signal=build_warning)
        crawler.signals.connect(self.on_truncated, signal=build_truncated)
        crawler.signals.connect(self.on_profile, signal=profile_detected)
        crawler.signals.connect(self.carry_over, signal=page_not_modified)
        crawler.signals.connect(self.on_deadline, signal=build_deadline)
        self.finished = False
        self._previous: dict[str, dict[str, Any]] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> GraphWriterPipeline:
        return cls(crawler)

    @property
    def name(self) -> str:
        spider = self.crawler.spider
        return str(getattr(spider, "graph_name", None) or getattr(spider, "name", "graph"))

    @property
    def live_path(self) -> Path:
        return self.graphs_dir / self.name

    @property
    def builds_graph(self) -> bool:
        """Only skillgraph spiders build graphs (``scrapy detect``'s spider does not)."""
        return hasattr(self.crawler.spider, "graph_name")

    def open_spider(self) -> None:
        if not self.builds_graph:
            return
        build_id = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"-{os.getpid()}"
        self.staging = self.graphs_dir / ".builds" / self.name / build_id
        self.staging.mkdir(parents=True, exist_ok=False)

    def on_profile(self, profile: SiteProfile, followed: bool = False) -> None:
        self.profile = profile
        self.followed = followed

    def on_warning(self, kind: str, url: str | None, message: str, label: str | None = None) -> None:
        entry: dict[str, Any] = {"kind": kind, "url": url, "message": message}
        if label:
            entry["label"] = label
        self.warnings.append(entry)

    def on_truncated(self, reason: str, limit: int) -> None:
        if self.truncated is None and self.builds_graph:
            self.truncated = {"limit": limit, "reason": reason, "skipped": 0}
            logger.warning("Build of %s truncated: %s reached (%s)", self.name, reason, limit)
            self.on_warning("truncated", None, f"{reason} reached ({limit}); the graph is incomplete")

    def process_item(self, item: Any) -> Any:
        adapter = ItemAdapter(item)
        assert self.staging is not None
        if self.finished:  # finalised at the deadline; the build folder is closed
            self.crawler.stats.inc_value("skillgraph/graph/after_deadline")
            return item
        url = adapter["url"]
        if url in self.files:
            self.crawler.stats.inc_value("skillgraph/graph/duplicate_url")
            return item
        markdown: str = adapter["markdown"]
        adapter["sha256"] = sha256_text(markdown)
        if adapter["tier"] != "corpus" and adapter["sha256"] in self.hashes:
            # The same page under a second URL (``/docs/`` and ``/docs/index.html``): one file.
            self.crawler.stats.inc_value("skillgraph/graph/duplicate_content")
            self.aliases[url] = self.hashes[adapter["sha256"]]
            logger.debug("%s has the same content as %s; not written twice", url, self.hashes[adapter["sha256"]])
            return item
        self.hashes[adapter["sha256"]] = url
        file_name = self._file_name(url)
        (self.staging / file_name).write_text(markdown, encoding="utf-8")
        self.files[url] = file_name
        self.pages.append({
            "url": url,
            "file": file_name,
            "sha256": adapter["sha256"],
            "fetched_at": adapter["fetched_at"],
            "tier": adapter["tier"],
            "quality": adapter.get("quality"),
        })
        self.crawler.stats.inc_value("skillgraph/graph/pages")
        return item

    def previous_pages(self) -> dict[str, dict[str, Any]]:
        """The live graph's page records by URL (empty when there is none)."""
        if self._previous is None:
            self._previous = {}
            old = self.live_path / "sources.json"
            if old.exists():
                try:
                    self._previous = {p["url"]: p for p in json.loads(old.read_text("utf-8"))["pages"]}
                except (ValueError, KeyError, TypeError):
                    logger.warning("Unreadable previous %s; nothing to compare with", old, exc_info=True)
        return self._previous

    def carry_over(self, url: str) -> None:
        """Copy an unchanged page (no new body) from the live graph into this build."""
        previous = self.previous_pages().get(url)
        if previous is None or self.staging is None or self.finished or url in self.files:
            self.crawler.stats.inc_value("skillgraph/graph/carry_over_missing")
            return
        source = self.live_path / previous["file"]
        if not source.exists():
            self.crawler.stats.inc_value("skillgraph/graph/carry_over_missing")
            return
        file_name = self._file_name(url)
        shutil.copyfile(source, self.staging / file_name)
        self.files[url] = file_name
        self.pages.append({**previous, "file": file_name})
        self.crawler.stats.inc_value("skillgraph/graph/carried_over")
        self.crawler.stats.inc_value("skillgraph/graph/pages")

    def _file_name(self, url: str) -> str:
        """A free file name for ``url``'s page, claimed for this build."""
        scope = self.profile.scope if self.profile else url
        stem = file_stem_for(url, scope)[:120]
        name, n = f"{stem}.md", 1
        while name in self.taken:
            n += 1
            name = f"{stem}-{n}.md"
        self.taken.add(name)
        return name

    # finishing --------------------------------------------------------------

    def on_deadline(self, reason: str) -> None:
        """Finalise now: the process is about to be stopped without a spider_closed."""
        self.spider_closed(reason)

    def spider_closed(self, reason: str) -> None:
        if self.staging is None or self.finished:
            return
        self.finished = True
        if self.pages and reason in SUCCESS_REASONS:
            self._commit()
        elif self.followed and not self.pages and reason in SUCCESS_REASONS:
            self._empty_share()
        else:
            why = "no pages were written" if not self.pages else f"the crawl ended with {reason!r}"
            self._fail(why, reason)

    def _sources(self) -> dict[str, Any]:
        spider = self.crawler.spider
        if self.truncated is not None:
            known: set[str] = getattr(spider, "known_urls", set())
            fetched: set[str] = getattr(spider, "fetched_urls", set())
            # Never fetched, plus fetched but dropped at the page bound: not in the graph either way.
            dropped = self.crawler.stats.get_value("skillgraph/page_budget/dropped", 0)
            self.truncated["skipped"] = len(known - fetched) + dropped
        return {
            "name": self.name,
            "built_at": utc_now(),
            "scrape_profile": self._scrape_profile(),
            "pages": self.pages,
            "truncated": self.truncated,
            "warnings": self.warnings,
            "changes": self._changes(),
        }

    def _scrape_profile(self) -> dict[str, Any] | None:
        if self.profile is None:
            return None
        data = self.profile.to_json()
        data.pop("url", None)
        return data

    def _changes(self) -> dict[str, int]:
        previous = {url: page["sha256"] for url, page in self.previous_pages().items()}
        current = {p["url"]: p["sha256"] for p in self.pages}
        new = sum(1 for u in current if u not in previous)
        changed = sum(1 for u, h in current.items() if u in previous and previous[u] != h)
        return {"new": new, "changed": changed, "unchanged": len(current) - new - changed,
                "removed": sum(1 for u in previous if u not in current)}

    def _link_pages(self) -> None:
        """Point links between this build's pages at their files (see :mod:`skillgraph.graph_links`).

        Runs once every page is known, so a link to a page written later is
        rewritten too.  A file that changes gets its ``sha256`` recomputed:
        sources.json hashes the markdown as written.
        """
        assert self.staging is not None
        if not self.local_links:
            return
        old_files = {page["file"]: url for url, page in self.previous_pages().items()}
        links = LocalLinks(((p["url"], p["file"]) for p in self.pages), self.aliases, old_files)
        total = 0
        for page in self.pages:
            path = self.staging / page["file"]
            text, count = rewrite_links(path.read_text("utf-8"), partial(links.target, base=page["url"]))
            if count:
                path.write_text(text, encoding="utf-8")
                page["sha256"] = sha256_text(text)
                total += count
        self.crawler.stats.set_value("skillgraph/graph/local_links", total)
        logger.info("Graph %s: %d links between its pages point at their files", self.name, total)

    def _commit(self) -> None:
        assert self.staging is not None
        self._link_pages()
        write_json_atomic(self.staging / "sources.json", self._sources())
        link = self.live_path
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.exists() and not link.is_symlink():
            # A plain directory (made by hand or by an older layout): keep it as a build.
            os.replace(link, self.staging.parent / f"legacy-{int(time.time())}")
        tmp_link = link.with_name(f".{link.name}.{os.getpid()}.link")
        if tmp_link.is_symlink():
            tmp_link.unlink()
        tmp_link.symlink_to(os.path.relpath(self.staging, link.parent), target_is_directory=True)
        os.replace(tmp_link, link)
        failed = self.graphs_dir / f"{self.name}.failed.json"
        if failed.exists():
            failed.unlink()
        self._prune()
        self.crawler.stats.set_value("skillgraph/graph/committed", 1)
        logger.info("Graph %s: %d pages in %s", self.name, len(self.pages), link)

    def _prune(self) -> None:
        assert self.staging is not None
        builds = sorted(p for p in self.staging.parent.iterdir() if p.is_dir())
        live = self.live_path.resolve()
        for old in builds[:-KEEP_BUILDS]:
            if old.resolve() != live:
                shutil.rmtree(old, ignore_errors=True)

    def _empty_share(self) -> None:
        assert self.staging is not None
        shutil.rmtree(self.staging, ignore_errors=True)
        self.crawler.stats.set_value("skillgraph/graph/empty_share", 1)
        logger.info("Graph %s: this worker followed a shared crawl and wrote no page; nothing to commit or "
                    "record (the workers that wrote pages build the graph)", self.name)

    def _fail(self, why: str, reason: str) -> None:
        assert self.staging is not None
        shutil.rmtree(self.staging, ignore_errors=True)
        self.graphs_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.graphs_dir / f"{self.name}.failed.json", {
            "name": self.name,
            "failed_at": utc_now(),
            "reason": why,
            "finish_reason": reason,
            "pages": len(self.pages),
            "kept_previous": self.live_path.exists(),
            "scrape_profile": self._scrape_profile(),
            "warnings": self.warnings,
        })
        self.crawler.stats.set_value("skillgraph/graph/failed", why)
        logger.error("Build of graph %s failed (%s); the previous graph is kept", self.name, why)
