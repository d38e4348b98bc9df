"""``scrapy crawl SPIDER``: Scrapy's own command, with honest exit codes (DESIGN.md).

Scrapy's ``crawl`` exits 0 whatever became of the build. Here the exit status
says it: 0 when the graph was committed (truncated or not), 1 when it was not
(one line on stderr says why and what to do; Redis refusing the password or ACL
of ``REDIS_URL`` is such a line, said before the first request), 2 for a usage error (a missing or
malformed spider argument, an invalid setting), 128 + the signal number when
SIGINT or SIGTERM stopped the crawl (what was fetched is committed as
``truncated: interrupted``; a second signal aborts without committing, as
Scrapy does).

The signal is noted by wrapping the handlers Scrapy installs once the reactor
runs (plain ``signal.getsignal``/``signal.signal``), so the Build knows the crawl
was interrupted; Scrapy's graceful stop then closes the spider with reason
``shutdown``, which the graph writer commits as truncated.

Once the crawl is over the process only exits: :func:`leave_heap_to_exit`
spares it the garbage collector's walks of the whole heap at interpreter exit.
"""

from __future__ import annotations

import gc
import signal
import sys
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import Spider, signals
from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.exceptions import CloseSpider, UsageError
from scrapy.utils.asyncio import call_later

from skillgraph.build import Build
from skillgraph.commands.settings_check import PathSettingError, SettingsError, check_output_paths, check_settings
from skillgraph.distributed import redis_at_start, redis_refused
from skillgraph.distributed.connection import RedisRefused
from skillgraph.graph.names import GraphNameError, check_graph_name

if TYPE_CHECKING:
    import argparse
    from types import FrameType

    from scrapy.crawler import Crawler

INTERRUPTS = (signal.SIGINT, signal.SIGTERM)
REFUSED_REASON = "redis_refused"  #: close reason when Redis refused the credentials at start


def check_start_url(url: str | None) -> str:
    """A usable http(s) start URL, or a UsageError saying what is wrong."""
    if not url:
        raise UsageError("the docs spider needs a start URL: scrapy crawl docs -a url=https://docs.example.org/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"-a url={url} is not an http(s) URL (for example https://docs.example.org/guide/)")
    return url


class Command(ScrapyCrawlCommand):
    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        """Check settings and the start URL here: before the crawler process exists and logs its banner.

        A usage error is then the usage line and one sentence, not 15 lines of Scrapy's start-up log first.
        """
        super().process_options(args, opts)
        if len(args) != 1:
            raise UsageError("give exactly one spider: scrapy crawl SPIDER (scrapy list shows them)")
        assert self.settings is not None
        try:
            check_settings(self.settings)
        except SettingsError as exc:
            raise UsageError(str(exc)) from exc
        if args[0] == "docs":
            check_start_url(opts.spargs.get("url"))
        if "graph" in opts.spargs:  # the spider checks it too (scrapyd and scripts start it without this command)
            try:
                check_graph_name(opts.spargs["graph"], "-a graph=")
            except GraphNameError as exc:
                raise UsageError(str(exc)) from exc
        problem = output_path_problem(self.settings)
        if problem is not None and problem.usage:
            raise UsageError(str(problem))
        if problem is not None:  # a full or read-only disk: the command ran and failed (exit 1), before any banner
            _say(str(problem))
            raise SystemExit(1)

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.crawler_process is not None
        try:
            crawler = self.crawler_process.create_crawler(args[0])
        except KeyError as exc:
            raise UsageError(f"no spider named {args[0]!r} (scrapy list shows them)") from exc
        build = Build.of(crawler)
        crawler.signals.connect(_stop_if_redis_refused, signal=signals.spider_opened)
        self.crawler_process.crawl(crawler, **opts.spargs)
        _note_interrupts(build)
        self.crawler_process.start()
        self.exitcode = self.outcome_code(crawler, build)
        leave_heap_to_exit()

    def outcome_code(self, crawler: Crawler, build: Build) -> int:
        refused = redis_refused(crawler)
        if refused is not None:
            _say(refused)
            return 1
        if build.interrupted is not None:
            if build.outcome != "committed":
                _say(f"interrupted: the build of {build.name} was not committed ({build.failure or 'no pages yet'})")
            return 128 + build.interrupted
        if build.outcome in ("committed", "empty-share", "handed-over"):
            return 0
        if self.crawler_process is not None and self.crawler_process.bootstrap_failed and build.outcome is None:
            _say(f"the crawl could not start: {_bootstrap_error(crawler)} (the log above has the details)")
            return 1
        _say(build.failure_sentence())
        return 1


def leave_heap_to_exit() -> None:
    """The crawl is over and the command returns to exit: every object left is frozen out of the collector.

    Interpreter exit collects the whole heap twice (before and after clearing
    the modules): ~150 ms of the crawl process's CPU after the 526-page Python
    docs crawl, 0.3 ms a page, to free memory the operating system takes back
    at once. Everything that must outlive the crawl was written and closed at
    ``engine_stopped`` (graph, stats file, state, disk items); atexit handlers
    (logging's flush, multiprocessing's) still run, and objects freed by their
    reference count are finalized as before. Only ``scrapy crawl``: a crawl run
    in-process (a script, the tests) leaves the collector alone.
    """
    gc.freeze()


def output_path_problem(settings: Any) -> PathSettingError | None:
    """The first unusable output path (``SKILLGRAPH_GRAPHS_DIR``, ``_ITEMS_DIR``, ``_STATE_PATH``), or None."""
    try:
        check_output_paths(settings)
    except PathSettingError as exc:
        return exc
    return None


async def _stop_if_redis_refused(spider: Spider) -> None:
    """Redis refused the password or ACL of ``REDIS_URL``: close before the first request (an outage is waited for,
    a wrong password never heals)."""
    crawler = spider.crawler
    if crawler.settings.get("REDIS_URL") and isinstance(await redis_at_start(crawler), RedisRefused):
        raise CloseSpider(REFUSED_REASON)


def _bootstrap_error(crawler: Crawler) -> str:
    spider = crawler.spider
    return f"spider {getattr(spider, 'name', '?')} failed to open" if spider else "the spider could not be created"


def _say(line: str) -> None:
    print(f"skillgraph: {line}", file=sys.stderr, flush=True)


def _note_interrupts(build: Build) -> None:
    """Once Scrapy's shutdown handlers are in place, wrap them so the Build learns of the signal."""
    from twisted.internet import reactor

    def wrap() -> None:
        for signum in INTERRUPTS:
            previous = signal.getsignal(signum)
            if not callable(previous):
                continue

            def handler(num: int, frame: FrameType | None, previous: Any = previous) -> None:
                build.interrupt(num)
                previous(num, frame)

            signal.signal(signum, handler)

    # callWhenRunning runs with the startup triggers; Scrapy installs its handlers in one of them.
    reactor.callWhenRunning(call_later, 0, wrap)
