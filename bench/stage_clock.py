"""A CPU clock per stage of the page path, for bench/stages.py (loaded into a crawl as an extension).

Every stage is measured with the CPU clock of the thread that runs it
(``time.thread_time_ns``), exclusively: when a timed function calls another
timed function, the inner one's time is not counted twice. A coroutine or an
async generator is timed step by step (only while it runs, never while it
waits), so the reactor's other work between two steps is not charged to it.

In the crawl process (the reactor thread):

* every downloader middleware method, spider middleware method and item
  pipeline method, by class (Scrapy's own included);
* the spider's page callbacks, the tier ladder, the page pool's crawl side
  (building the job, handing it to the pool, waiting for its turn), the pool's
  transfer on the reactor (pickling and writing jobs, reading and unpickling
  results: :class:`skillgraph.page.workers.WorkerPipes`), following links, the
  scheduler's queues, the graph's commit (``spider_closed``);
* "start-up": the thread's CPU before the engine starts.

The rest of the reactor thread's CPU (Scrapy's engine, Twisted's HTTP client,
asyncio, signals nobody here wraps) is the "engine" row: measured as the
thread's total less the stages. The crawl process's other threads are read
from ``/proc/self/task`` by name: the disk writer's, the crawl state's and
asyncio's (page files and disk items written off the reactor).

In the page workers, :func:`timed_evaluate` stands in for
:func:`skillgraph.page.work.evaluate` and times its steps: decoding, parsing,
content selection, markdown rendering, the structure self-check, assessment,
the shell check, links, hashing. Each page's figures travel back with its
result; a worker's own CPU outside them (unpickling jobs, pickling results) is
the bench's process figure less their sum.

Bench-only: nothing in ``skillgraph/`` imports this module.
"""

from __future__ import annotations

import collections
import json
import os
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

CLOCK_ENV = "SKILLGRAPH_STAGE_CLOCK"  #: where the crawl process writes its figures (a JSON file)


class Clock:
    """Exclusive CPU time per stage of one thread."""

    def __init__(self) -> None:
        self.ident = threading.get_ident()
        self.totals: collections.Counter[str] = collections.Counter()
        self.calls: collections.Counter[str] = collections.Counter()
        self.stack: list[str] = []
        self.last = time.thread_time_ns()

    def enter(self, stage: str) -> bool:
        if threading.get_ident() != self.ident:
            return False
        now = time.thread_time_ns()
        if self.stack:
            self.totals[self.stack[-1]] += now - self.last
        self.stack.append(stage)
        self.calls[stage] += 1
        self.last = now
        return True

    def leave(self) -> None:
        now = time.thread_time_ns()
        self.totals[self.stack.pop()] += now - self.last
        self.last = now


class TimedAwaitable:
    """A coroutine timed step by step."""

    def __init__(self, clock: Clock, stage: str, awaitable: Any) -> None:
        self.clock, self.stage, self.inner = clock, stage, awaitable.__await__()

    def __await__(self) -> Any:
        value: Any = None
        error: BaseException | None = None
        while True:
            entered = self.clock.enter(self.stage)
            try:
                step = self.inner.send(value) if error is None else self.inner.throw(error)
            except StopIteration as stop:
                return stop.value
            finally:
                if entered:
                    self.clock.leave()
            try:
                value, error = (yield step), None
            except BaseException as exc:
                value, error = None, exc


class TimedAsyncIterator(AsyncIterator[Any]):
    def __init__(self, clock: Clock, stage: str, inner: Any) -> None:
        self.clock, self.stage, self.inner = clock, stage, inner

    def __aiter__(self) -> TimedAsyncIterator:
        return self

    def __anext__(self) -> Any:
        return TimedAwaitable(self.clock, self.stage, self.inner.__anext__())

    async def aclose(self) -> None:
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()


class TimedIterator:
    def __init__(self, clock: Clock, stage: str, inner: Any) -> None:
        self.clock, self.stage, self.inner = clock, stage, iter(inner)

    def __iter__(self) -> TimedIterator:
        return self

    def __next__(self) -> Any:
        entered = self.clock.enter(self.stage)
        try:
            return next(self.inner)
        finally:
            if entered:
                self.clock.leave()


def timed(clock: Clock, stage: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` charged to ``stage``, and what it returns too when that is a coroutine or an iterator."""
    import inspect

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        entered = clock.enter(stage)
        try:
            result = function(*args, **kwargs)
        finally:
            if entered:
                clock.leave()
        if inspect.iscoroutine(result) or (inspect.isawaitable(result) and not hasattr(result, "addCallback")):
            return TimedAwaitable(clock, stage, result)
        if inspect.isasyncgen(result):
            return TimedAsyncIterator(clock, stage, result)
        if inspect.isgenerator(result):
            return TimedIterator(clock, stage, result)
        return result

    wrapper.__wrapped__ = function  # type: ignore[attr-defined]
    wrapper.__qualname__ = getattr(function, "__qualname__", stage)
    wrapper.__name__ = getattr(function, "__name__", stage)
    return wrapper


def _wrap_manager(clock: Clock, manager: Any, prefix: str) -> None:
    """Every method a Scrapy middleware manager calls, charged to ``prefix:Class.method``."""
    requiring = getattr(manager, "_mw_methods_requiring_spider", None)
    for name, methods in manager.methods.items():
        for i, method in enumerate(methods):
            if method is None:
                continue
            owner = type(getattr(method, "__self__", None)).__name__
            wrapped = timed(clock, f"{prefix}:{owner}.{name}", method)
            if requiring is not None and method in requiring:
                requiring.add(wrapped)
            methods[i] = wrapped


def _wrap_attribute(clock: Clock, obj: Any, name: str, stage: str) -> None:
    function = getattr(obj, name, None)
    if function is not None and not hasattr(function, "__wrapped__"):
        setattr(obj, name, timed(clock, stage, function))


class StageClock:
    """The crawl process's side (an extension: ``EXTENSIONS={"stage_clock.StageClock": 0}``)."""

    def __init__(self, crawler: Any) -> None:
        from scrapy import signals

        self.crawler = crawler
        self.clock = Clock()
        self.worker_ns: collections.Counter[str] = collections.Counter()
        self.worker_pages = 0
        self.inline_ns = 0
        self.worker_processes: dict[int, tuple[int, int]] = {}
        self.commit_worker_ns = 0
        self.inline_pages = 0
        self.startup_ns = 0
        self.out = Path(os.environ[CLOCK_ENV])
        crawler.signals.connect(self.engine_started, signals.engine_started)
        crawler.signals.connect(self.spider_opened, signals.spider_opened)
        crawler.signals.connect(self.engine_stopped, signals.engine_stopped)
        self._patch_pool()
        self.gc_ns = 0
        self._gc_started = 0
        import gc

        gc.callbacks.append(self._gc)

    def _gc(self, phase: str, info: dict[str, Any]) -> None:
        """Python's cyclic collector on the reactor thread: its own row (it runs inside whatever stage allocates)."""
        if threading.get_ident() != self.clock.ident:
            return
        if phase == "start":
            self._gc_started = time.thread_time_ns()
        elif self._gc_started:
            self.gc_ns += time.thread_time_ns() - self._gc_started
            self._gc_started = 0

    @classmethod
    def from_crawler(cls, crawler: Any) -> StageClock:
        return cls(crawler)

    def _patch_pool(self) -> None:
        import skillgraph.page.pool as pagework
        import skillgraph.page.work as work
        from skillgraph.graph.folder import GraphFolder
        from skillgraph.page.callbacks import PageCallbacks
        from skillgraph.page.workers import WorkerPipes
        from skillgraph.tiers.ladder import TierLadder

        clock = self.clock
        work.evaluate = timed_evaluate  # what the pool's workers (and the inline path) run
        run = pagework.PagePool._run

        async def collect(pool: Any, job: Any) -> Any:
            inline = pool.executor is None or not pool.workers
            result = await run(pool, job)
            figures = getattr(result, "stage_ns", {})
            if inline:  # evaluated on this thread: already in the reactor's own CPU, kept apart
                self.inline_ns += sum(figures.values())
                self.inline_pages += 1
            else:
                for stage, ns in figures.items():
                    self.worker_ns[stage] += ns
                self.worker_pages += 1
                pid, first, last = result.worker_process
                self.worker_processes[pid] = (first, last)
            return result

        pagework.PagePool._run = collect  # type: ignore[method-assign]
        # the pool's transfer, on the reactor thread: pickling and writing jobs, reading and unpickling results
        WorkerPipes.run = timed(clock, "pool transfer, crawl -> worker (pickling, writing jobs)",  # type: ignore[method-assign]
                                WorkerPipes.run)
        WorkerPipes._writable = timed(clock, "pool transfer, crawl -> worker (pickling, writing jobs)",  # type: ignore[method-assign]
                                      WorkerPipes._writable)
        WorkerPipes._readable = timed(clock, "pool transfer, worker -> crawl (reading, unpickling results)",  # type: ignore[method-assign]
                                      WorkerPipes._readable)
        pagework.PagePool.evaluate = timed(clock, "page pool (crawl side)", pagework.PagePool.evaluate)  # type: ignore[method-assign]
        TierLadder.handle = timed(clock, "tier ladder", TierLadder.handle)  # type: ignore[method-assign]
        PageCallbacks.follow_links = timed(clock, "links (crawl side: ledger, requests)",  # type: ignore[method-assign]
                                           PageCallbacks.follow_links)
        GraphFolder.write = timed(clock, "pipeline:GraphWriterPipeline (page files)", GraphFolder.write)  # type: ignore[method-assign]

    def engine_started(self) -> None:
        self.startup_ns = time.thread_time_ns()
        engine = self.crawler.engine
        clock = self.clock
        clock.last = time.thread_time_ns()
        _wrap_manager(clock, engine.downloader.middleware, "downloader middleware")
        _wrap_manager(clock, engine.scraper.spidermw, "spider middleware")
        _wrap_manager(clock, engine.scraper.itemproc, "pipeline")
        scraper = engine.scraper
        call_spider = scraper.call_spider_async

        async def call_spider_timed(result: Any, request: Any) -> Any:
            callback = (request.errback if not hasattr(result, "status") else request.callback) or request.callback
            stage = f"callback:{getattr(callback, '__name__', 'parse')}"
            output = await TimedAwaitable(clock, stage, call_spider(result, request))
            if hasattr(output, "__anext__"):
                return TimedAsyncIterator(clock, stage, output)
            return TimedIterator(clock, stage, output)

        scraper.call_spider_async = call_spider_timed

    def spider_opened(self, spider: Any) -> None:
        engine = self.crawler.engine
        scheduler = getattr(engine, "scheduler", None)
        if scheduler is not None:
            for name in ("enqueue_request", "next_request", "has_pending_requests"):
                _wrap_attribute(self.clock, scheduler, name, "scheduler")
        from skillgraph.pipelines.graph import GraphWriterPipeline

        for pipe in self.crawler.engine.scraper.itemproc.middlewares:
            if isinstance(pipe, GraphWriterPipeline):
                commit = timed(self.clock, "commit", pipe._commit)  # the graph: links, llms.txt, sources.json

                def commit_timed(commit: Any = commit) -> Any:
                    before = _processes_cpu(self.worker_processes)
                    try:
                        return commit()
                    finally:  # the page workers rewrite the links of chunks of pages during the commit
                        after = _processes_cpu(self.worker_processes)
                        self.commit_worker_ns += sum(after.values()) - sum(before.values())

                pipe._commit = commit_timed

    def engine_stopped(self) -> None:
        main_ns = time.thread_time_ns()
        threads = thread_cpu()
        stats = self.crawler.stats
        data = {
            "pages": stats.get_value("skillgraph/graph/pages", 0) if stats else 0,
            "startup_ns": self.startup_ns,
            "main_ns": main_ns,
            "stages_ns": dict(self.clock.totals),
            "calls": dict(self.clock.calls),
            "threads_ns": threads,
            "worker_ns": dict(self.worker_ns),
            "worker_pages": self.worker_pages,
            "inline_ns": self.inline_ns,
            "worker_processes": self.worker_processes,
            "commit_worker_ns": self.commit_worker_ns,
            "gc_ns": self.gc_ns,
            "inline_pages": self.inline_pages,
            "process_ns": int(1e9 * time.process_time()),
        }
        self.out.write_text(json.dumps(data, indent=1))


def _processes_cpu(pids: Any) -> dict[int, int]:
    """CPU ns of each process in ``pids`` (from ``/proc``)."""
    tick = os.sysconf("SC_CLK_TCK")
    found = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found[pid] = (int(fields[11]) + int(fields[12])) * 1_000_000_000 // tick
    return found


def thread_cpu() -> dict[str, int]:
    """CPU ns of each live thread of this process, by Python thread name (numbers folded: ``asyncio_*``)."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    tick = os.sysconf("SC_CLK_TCK")
    found: collections.Counter[str] = collections.Counter()
    for entry in os.scandir("/proc/self/task"):
        try:
            fields = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        name = names.get(int(entry.name), f"thread-{entry.name}")
        name = name.rstrip("0123456789").rstrip("_-") or name
        found[name] += (int(fields[11]) + int(fields[12])) * 1_000_000_000 // tick
    return dict(found)


# -- the workers' side ------------------------------------------------------------------------------------------------

_WORKER_CLOCK: Clock | None = None


def _patch_worker() -> Clock:
    global _WORKER_CLOCK
    if _WORKER_CLOCK is not None:
        return _WORKER_CLOCK
    clock = _WORKER_CLOCK = Clock()
    import skillgraph.extract.api as api
    import skillgraph.page.work as pagework
    import skillgraph.tiers.evaluate as tiers_evaluate

    stages = {
        (api, "parse"): "parse",
        (api, "detect"): "content selection", (api, "main_content"): "content selection",
        (api, "Census"): "content selection", (api, "masses"): "content selection",
        (api, "descend"): "content selection", (api, "first_h1"): "title",
        (api, "_render"): "markdown rendering",
        (api, "structure_check"): "structure self-check",
        (api, "page_title"): "title", (api, "site_banner"): "title", (api, "head_title"): "title",
        (api, "_chrome"): "content selection",
        (tiers_evaluate, "link_offsets"): "notes for the commit (link offsets, description)",
        (tiers_evaluate, "describe"): "notes for the commit (link offsets, description)",
        (tiers_evaluate, "assess"): "assessment",
        (tiers_evaluate, "detect_shell"): "shell check",
        (pagework, "decode_and_parse"): "decode and parse",
        (pagework, "read_links"): "links",
        (pagework, "sha256_text"): "hash",
    }
    for (module, name), stage in stages.items():
        if hasattr(module, name):
            setattr(module, name, timed(clock, stage, getattr(module, name)))
    return clock


def timed_evaluate(job: Any) -> Any:
    """:func:`skillgraph.page.work.evaluate`, its steps timed; the figures ride back on the result."""
    global _FIRST_PROCESS_NS
    if _FIRST_PROCESS_NS is None:
        _FIRST_PROCESS_NS = time.process_time_ns()
    clock = _patch_worker()
    before = dict(clock.totals)
    entered = clock.enter("evaluate: response, decoding, other")
    try:
        result = _ORIGINAL_EVALUATE(job)
    finally:
        if entered:
            clock.leave()
    result.stage_ns = {k: v - before.get(k, 0) for k, v in clock.totals.items() if v - before.get(k, 0)}
    result.worker_process = (os.getpid(), _FIRST_PROCESS_NS, time.process_time_ns())
    return result


_FIRST_PROCESS_NS: int | None = None


def _original() -> Callable[..., Any]:
    import skillgraph.page.work as work

    return work.evaluate


_ORIGINAL_EVALUATE = _original()
