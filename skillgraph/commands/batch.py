"""``scrapy batch [SPIDER ...] [--all] [--jobs N]``: build many sites, cheapest first, each bounded.

Two phases (docs/batch.md): detection runs the SiteProfiler for every site
concurrently in this process (HTTP only, each site within
``SKILLGRAPH_BATCH_DETECT_TIMEOUT``); then every site is built by its own
``scrapy crawl`` subprocess, llms sites first and web crawls last, ``--jobs``
at a time, killed as a process group past ``SKILLGRAPH_CRAWL_TIMEOUT`` plus
``SKILLGRAPH_BATCH_GRACE``. A progress line per site while it runs, a table
and ``batch-report.json`` at the end; the exit code is 1 unless every site
built.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError
from scrapy.spiderloader import get_spider_loader

from skillgraph.commands.settings_check import OUTPUT_PATHS, exit_on_bad_settings
from skillgraph.strategy.profiler import utc_now

if TYPE_CHECKING:
    import argparse

    from skillgraph.batch.plan import Site


def emit(line: str) -> None:
    print(line, flush=True)


class Command(ScrapyCommand):
    requires_project = True

    def syntax(self) -> str:
        return "[SPIDER ...] [--all] [--jobs N] [--mirror URL] [--base-url NAME=URL ...]"

    def short_desc(self) -> str:
        return "Detect every site's strategy, then build llms sites first and web crawls last, bounded"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--all", action="store_true", help="every domain spider")
        parser.add_argument("--jobs", type=int, default=None, help="sites built at once (SKILLGRAPH_BATCH_JOBS)")
        parser.add_argument("--grace", type=float, default=None,
                            help="seconds past SKILLGRAPH_CRAWL_TIMEOUT before a site is killed "
                            "(SKILLGRAPH_BATCH_GRACE)")
        parser.add_argument("--mirror", metavar="URL", help="-a base_url=URL for every site")
        parser.add_argument("--base-url", metavar="NAME=URL", action="append", default=[],
                            help="-a base_url=URL for one site (repeatable)")
        parser.add_argument("--report", metavar="PATH", help="where batch-report.json goes "
                            "(SKILLGRAPH_BATCH_REPORT, else in SKILLGRAPH_GRAPHS_DIR)")

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        assert self.settings is not None
        if not opts.loglevel:  # progress lines on stdout; the detection crawler only logs problems
            self.settings.set("LOG_LEVEL", "WARNING", priority="cmdline")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        # imported here, not at the top: Scrapy imports every command module for any command, a crawl too
        from skillgraph.batch.plan import ordered
        from skillgraph.batch.report import table, write_report
        from skillgraph.batch.runner import BatchRunner, Limits

        assert self.settings is not None and self.crawler_process is not None
        settings = self.settings
        exit_on_bad_settings(settings, tuple(OUTPUT_PATHS))  # a bad value or path: one line, before any site runs
        sites = self._sites(args, opts)
        graphs_dir = Path(settings.get("SKILLGRAPH_GRAPHS_DIR") or "graphs")
        report = Path(opts.report or settings.get("SKILLGRAPH_BATCH_REPORT") or graphs_dir / "batch-report.json")
        limits = Limits(
            crawl_timeout=settings.getfloat("SKILLGRAPH_CRAWL_TIMEOUT", 240),
            max_pages=settings.getint("SKILLGRAPH_MAX_PAGES", 400),
            grace=opts.grace if opts.grace is not None else settings.getfloat("SKILLGRAPH_BATCH_GRACE", 30),
            kill_wait=settings.getfloat("SKILLGRAPH_BATCH_KILL_WAIT", 10),
        )
        jobs = opts.jobs or settings.getint("SKILLGRAPH_BATCH_JOBS", 4)
        started_at, t0 = utc_now(), time.monotonic()
        self._detect(sites)
        for site in ordered(sites):
            emit(f"[{time.monotonic() - t0:7.1f}s] detected {site.name:<20} {site.strategy or '?':<11} "
                 f"{site.detect_error or site.url}")
        runner = BatchRunner(limits, jobs, graphs_dir, report.parent / "batch-logs", list(opts.set), emit,
                             settings.getfloat("SKILLGRAPH_BATCH_PROGRESS_INTERVAL", 10))
        runner.t0 = t0
        results = runner.run(sites)
        emit("")
        emit(table(results))
        write_report(report, results, {
            "started_at": started_at,
            "elapsed": round(time.monotonic() - t0, 2),
            "jobs": jobs,
            "limits": {"crawl_timeout": limits.crawl_timeout, "max_pages": limits.max_pages,
                       "grace": limits.grace, "kill_wait": limits.kill_wait},
            "detection": {s.name: {"strategy": s.strategy, "url": s.url, "error": s.detect_error} for s in sites},
        })
        emit(f"report: {report}")
        if any(r.status != "ok" for r in results):
            self.exitcode = 1

    def _detect(self, sites: list[Site]) -> None:
        """Profile every site in one crawler; its own bounds are the detection timeout, not the crawl's."""
        from skillgraph.batch.detect import detect_sites

        assert self.settings is not None and self.crawler_process is not None
        settings = self.settings
        timeout = settings.getfloat("SKILLGRAPH_BATCH_DETECT_TIMEOUT", 60)
        # A probe that hangs must not outlive the bound: closing waits for in-flight downloads.
        settings.set("DOWNLOAD_TIMEOUT", min(settings.getfloat("DOWNLOAD_TIMEOUT", 30), timeout), "cmdline")
        settings.set("RETRY_ENABLED", False, "cmdline")
        settings.set("SKILLGRAPH_CRAWL_TIMEOUT", 0, "cmdline")  # the crawls' bound, not detection's
        detect_sites(self.crawler_process, sites, timeout)

    def _sites(self, args: list[str], opts: argparse.Namespace) -> list[Site]:
        from skillgraph.batch.plan import Site

        assert self.settings is not None
        loader = get_spider_loader(self.settings)
        domain_spiders = [n for n in sorted(loader.list()) if getattr(loader.load(n), "start_url", "")]
        if opts.all:
            names = domain_spiders
        elif args:
            names = list(dict.fromkeys(args))
        else:
            raise UsageError("name the spiders to build, or give --all")
        unknown = [n for n in names if n not in domain_spiders]
        if unknown:
            raise UsageError(f"not domain spiders: {', '.join(unknown)} (see `scrapy list`)")
        bases: dict[str, str] = {}
        for entry in opts.base_url:
            name, sep, url = entry.partition("=")
            if not sep or not url:
                raise UsageError(f"--base-url wants NAME=URL, got {entry!r}")
            bases[name] = url
        sites = []
        for name in names:
            base = bases.get(name) or opts.mirror
            spider: Any = loader.load(name)(base_url=base)
            sites.append(Site(name, spider.site_url, spider.site_scope, spider.strategy, base))
        return sites
