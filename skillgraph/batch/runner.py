"""The run phase: one ``scrapy crawl`` per site, each in its own process group, bounded.

Scrapy cannot stop a crawl that is stuck inside a download or a probe (its
close waits for in-flight requests, and a server that accepts and never
answers holds them for ``DOWNLOAD_TIMEOUT`` times the retries), so the bound a
batch can promise is enforced from outside: each site runs as a subprocess in
a new session (``start_new_session=True``), and past its wall bound
(``SKILLGRAPH_CRAWL_TIMEOUT`` plus a grace) the whole group gets SIGTERM, then
SIGKILL. Plain polling with short sleeps: every wait is bounded, so the loop
itself cannot hang.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from skillgraph.batch.plan import Site, SiteResult, ordered
from skillgraph.batch.report import live_pages, read_stats, settle
from skillgraph.strategy.profiler import utc_now

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.2
REAP_SECONDS = 5.0  # after SIGKILL: how long to wait for the exit status


@dataclass
class Limits:
    crawl_timeout: float  # SKILLGRAPH_CRAWL_TIMEOUT given to every crawl
    max_pages: int  # SKILLGRAPH_MAX_PAGES given to web crawls
    grace: float  # start-up and shutdown allowance past the crawl timeout
    kill_wait: float  # SIGTERM -> SIGKILL

    @property
    def wall(self) -> float:
        """Seconds a site may run before its group is killed; none when the crawl timeout is off (0)."""
        return self.crawl_timeout + self.grace if self.crawl_timeout > 0 else math.inf


@dataclass
class Job:
    site: Site
    proc: subprocess.Popen[bytes]
    log: IO[bytes]
    stats_path: Path
    log_path: Path
    started: float
    started_at: str
    deadline: float
    place: int  # 1-based position in the run order
    term_at: float | None = None
    kill_at: float | None = None

    @property
    def killed(self) -> bool:
        return self.term_at is not None


class BatchRunner:
    def __init__(self, limits: Limits, jobs: int, graphs_dir: Path, work_dir: Path, settings: list[str],
                 emit: Callable[[str], None], progress_every: float = 10.0) -> None:
        self.limits = limits
        self.jobs = max(1, jobs)
        self.graphs_dir = graphs_dir
        self.work_dir = work_dir
        self.settings = settings  # "NAME=VALUE" strings passed through with -s
        self.emit = emit
        self.progress_every = progress_every
        self.t0 = time.monotonic()
        self.started_count = 0  # crawls started so far: each result's place in the run order

    def command(self, site: Site, stats_path: Path) -> list[str]:
        args = [sys.executable, "-m", "scrapy", "crawl", site.name]
        if site.base_url:
            args += ["-a", f"base_url={site.base_url}"]
        bounds = [*self.settings, f"SKILLGRAPH_STATS_FILE={stats_path}",
                  f"SKILLGRAPH_CRAWL_TIMEOUT={self.limits.crawl_timeout:g}"]
        if site.is_web_crawl:
            bounds.append(f"SKILLGRAPH_MAX_PAGES={self.limits.max_pages}")
        for setting in bounds:  # later -s values win: the batch's bounds are the last word
            args += ["-s", setting]
        return args

    def run(self, sites: list[Site]) -> list[SiteResult]:
        """Run every site; results in order of completion."""
        self.work_dir.mkdir(parents=True, exist_ok=True)
        queue = ordered(sites)
        running: list[Job] = []
        results: list[SiteResult] = []
        next_progress = time.monotonic() + self.progress_every
        try:
            while queue or running:
                while queue and len(running) < self.jobs:
                    running.append(self._start(queue.pop(0)))
                for job in list(running):
                    if (result := self._check(job)) is not None:
                        running.remove(job)
                        results.append(result)
                        self.emit(self._line(result.status, job, result.pages, result.reason))
                if running and time.monotonic() >= next_progress:
                    next_progress = time.monotonic() + self.progress_every
                    for job in running:
                        self.emit(self._line("running", job, live_pages(self.graphs_dir, job.site.name,
                                                                         job.proc.pid)))
                time.sleep(POLL_SECONDS)
        finally:
            for job in running:  # interrupted (Ctrl-C): leave no crawl behind
                self._signal(job, signal.SIGKILL)
        return results

    def _start(self, site: Site) -> Job:
        stats_path = self.work_dir / f"{site.name}.stats.json"
        log_path = self.work_dir / f"{site.name}.log"
        stats_path.unlink(missing_ok=True)
        log = log_path.open("wb")
        proc = subprocess.Popen(self.command(site, stats_path), stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        now = time.monotonic()
        self.started_count += 1
        job = Job(site, proc, log, stats_path, log_path, now, utc_now(), now + self.limits.wall, self.started_count)
        self.emit(self._line("start", job, 0))
        return job

    def _check(self, job: Job) -> SiteResult | None:
        code = job.proc.poll()
        now = time.monotonic()
        if code is None:
            if job.term_at is None and now >= job.deadline:
                logger.warning("Batch: %s overran %gs; killing its process group", job.site.name, self.limits.wall)
                job.term_at = now
                self._signal(job, signal.SIGTERM)
            elif job.term_at is not None and job.kill_at is None and now >= job.term_at + self.limits.kill_wait:
                job.kill_at = now
                self._signal(job, signal.SIGKILL)
            elif job.kill_at is not None and now >= job.kill_at + REAP_SECONDS:
                logger.error("Batch: %s did not exit after SIGKILL; giving up on it", job.site.name)
                return self._result(job, None)
            return None
        if job.killed:  # the leader is gone; make sure nothing else in its group survives
            self._signal(job, signal.SIGKILL)
        return self._result(job, code)

    def _signal(self, job: Job, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(job.proc.pid, sig)

    def _result(self, job: Job, code: int | None) -> SiteResult:
        job.log.close()
        elapsed = time.monotonic() - job.started
        stats = read_stats(job.stats_path)
        result = SiteResult(job.site.name, job.site.strategy, "failed", 0, elapsed, self.limits.wall, returncode=code,
                            pid=job.proc.pid, started=job.place,
                            started_at=job.started_at, finished_at=utc_now(), log=str(job.log_path), stats=stats)
        bound = f"killed after {self.limits.wall:g}s (crawl timeout {self.limits.crawl_timeout:g}s + grace " \
                f"{self.limits.grace:g}s)" if job.killed else None
        return settle(result, self.graphs_dir, job.proc.pid, bound)

    def _line(self, event: str, job: Job, pages: int, reason: str | None = None) -> str:
        now = time.monotonic()
        elapsed = now - job.started
        text = (f"[{now - self.t0:7.1f}s] {event:<8} {job.site.name:<20} {job.site.strategy or '?':<11} "
                f"{pages:>5} pages {elapsed:7.1f}s")
        return f"{text}  {reason}" if reason else text
