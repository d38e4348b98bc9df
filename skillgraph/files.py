"""One atomic file writer for every file others read (graphs, items, stats, reports).

DESIGN.md: a reader never sees half a file. So a file is written to a temp
file beside its target (same filesystem), made readable by everyone (0644:
``mkstemp`` would leave 0600, which a web server or another user's agent
could not read), optionally fsynced (disk items must survive a crash before
they are queued), and moved into place with ``os.replace``. A failed write
leaves no temp file behind.

:class:`DiskWriter` does the crawl's many small writes (page files, disk items) on
one thread, a batch at a time, with one ``syncfs`` for a batch's durable files.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast
from weakref import WeakKeyDictionary

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

_T = TypeVar("_T")


def write_all(fd: int, *parts: bytes) -> None:
    """Write each of ``parts`` whole to the blocking descriptor ``fd`` (``os.write`` may write less than asked)."""
    for part in parts:
        view = memoryview(part)
        while view:
            view = view[os.write(fd, view):]


def write_atomic(path: Path, data: str | bytes, mode: int = 0o644, durable: bool = False) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` atomically, with ``mode``; ``durable`` fsyncs first."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, data: Any, **dumps: Any) -> None:
    """``data`` as indented JSON (UTF-8, non-ASCII kept), written with :func:`write_atomic`."""
    write_atomic(path, json.dumps(data, indent=2, ensure_ascii=False, **dumps) + "\n")


def write_stream(path: Path, chunks: Iterable[str], mode: int = 0o644) -> None:
    """:func:`write_atomic` for text given in chunks: never all of it in memory."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.writelines(chunks)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class Batch:
    """The files of one batch of a :class:`DiskWriter`: written to temp files now, made durable together,
    moved into place in order once the batch is done."""

    def __init__(self, umask: int | None = None) -> None:
        self.moves: list[tuple[str, str, int | None]] = []  # (temp file, target, open fd when durable)
        #: the process's umask (-1: unknown, every file fchmod-ed); None: read at the batch's first file
        self.umask = umask

    def write_atomic(self, path: Path | str, data: str | bytes, mode: int = 0o644, durable: bool = False) -> None:
        """:func:`write_atomic`, its ``os.replace`` (and fsync) done at the end of the batch.

        The crawl writes two files a page through here, so the temp file costs one ``open``: named
        from the process id and a counter (``O_EXCL`` still refuses a name that exists, a leftover
        or a symlink: the next number is tried), created with ``mode`` and ``fchmod``-ed only when
        the process's umask would take bits off it. ``mkstemp`` spent more Python time on its random
        name than the write took, and an ``fchmod`` every file.
        """
        payload = data.encode("utf-8") if isinstance(data, str) else data
        target = os.fspath(path)
        if self.umask is None:
            self.umask = _umask()
        fd, tmp = _open_temp(target, mode)
        try:
            if mode & self.umask:
                os.fchmod(fd, mode)
            write_all(fd, payload)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        if durable:
            self.moves.append((tmp, target, fd))
        else:
            os.close(fd)
            self.moves.append((tmp, target, None))

    def finish(self) -> None:
        """Make the durable files durable (one ``syncfs`` for the batch where Linux has it), then move all in place."""
        durable = [fd for _, _, fd in self.moves if fd is not None]
        try:
            if durable and not _syncfs(durable[0]):
                for fd in durable:
                    os.fsync(fd)
        finally:
            for fd in durable:
                os.close(fd)
        try:
            for tmp, path, _ in self.moves:
                os.replace(tmp, path)
        except BaseException:
            for tmp, _, _ in self.moves:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
            raise

    def abandon(self) -> None:
        for tmp, _, fd in self.moves:
            if fd is not None:
                os.close(fd)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_TEMP_NUMBERS = itertools.count()


def _open_temp(target: str, mode: int) -> tuple[int, str]:
    """A new temp file beside ``target`` (``.<name>.<pid>-<n>.tmp``), opened for writing with ``mode``."""
    head, name = os.path.split(target)
    prefix = os.path.join(head, f".{name}.{os.getpid()}-")
    while True:
        tmp = f"{prefix}{next(_TEMP_NUMBERS)}.tmp"
        try:
            return os.open(tmp, _TEMP_FLAGS, mode), tmp
        except FileExistsError:  # a leftover of an earlier process with this id: the next number
            continue


def _umask() -> int:
    """The process's umask, read without changing it (``/proc/self/status``); -1 (every bit) where unknown."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return -1


_LIBC: Any = None


def _syncfs(fd: int) -> bool:
    """``syncfs(2)`` on the file system holding ``fd``: one flush for a batch of files (False where unavailable)."""
    global _LIBC
    if _LIBC is None:
        import ctypes
        import ctypes.util

        try:
            _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            _LIBC.syncfs  # noqa: B018 - present on Linux (glibc 2.14+)
        except (OSError, AttributeError):
            _LIBC = False
    if _LIBC is False:
        return False
    if _LIBC.syncfs(fd) != 0:
        import ctypes

        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))
    return True


class DiskWriter:
    """The crawl's disk writes (page files, disk items) on one thread, a batch at a time.

    ``asyncio.to_thread`` per file spread a crawl's writes over the default
    executor's threads: two thread hand-offs and two wake-ups of the reactor a
    page, and an fsync per disk item. Here every write waiting when the thread
    wakes is one batch: durable files are made durable together (one
    ``syncfs``: 0.09 ms of CPU a file instead of 0.3 for an fsync each, a tenth
    of the wait), files move into place in the order they were handed in, and
    the reactor is woken once per batch. A job is a function of the
    :class:`Batch`; what it returns, or raises, is its awaiter's.
    """

    def __init__(self, name: str = "skillgraph-disk") -> None:
        self.name = name
        self.jobs: deque[tuple[asyncio.Future[Any], Callable[[Batch], Any]]] = deque()
        self.wake = threading.Event()
        self.thread: threading.Thread | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.closed = False
        self.batches = 0
        self.umask: int | None = None  # read once, at the first batch: a crawl does not change its umask

    async def run(self, job: Callable[[Batch], _T]) -> _T:
        """Run ``job`` in the next batch; its result once the batch's files are in place."""
        if self.closed:
            raise RuntimeError("the disk writer is closed")
        loop = self.loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self.jobs.append((future, job))
        if self.thread is None:
            self.thread = threading.Thread(target=self._serve, name=self.name, daemon=True)
            self.thread.start()
        self.wake.set()
        return cast("_T", await future)

    def _serve(self) -> None:
        while True:
            self.wake.wait()
            self.wake.clear()
            while self.jobs:
                batch: list[tuple[asyncio.Future[Any], Callable[[Batch], Any]]] = []
                while self.jobs:
                    batch.append(self.jobs.popleft())
                self._write(batch)
            if self.closed and not self.jobs:
                return

    def _write(self, jobs: list[tuple[asyncio.Future[Any], Callable[[Batch], Any]]]) -> None:
        if self.umask is None:
            self.umask = _umask()
        files = Batch(self.umask)
        outcomes: list[tuple[asyncio.Future[Any], Any, BaseException | None]] = []
        for future, job in jobs:
            try:
                outcomes.append((future, job(files), None))
            except BaseException as exc:  # handed to its awaiter
                outcomes.append((future, None, exc))
        try:
            files.finish()
        except BaseException as exc:  # every job of the batch failed with it
            files.abandon()
            outcomes = [(future, None, error or exc) for future, _, error in outcomes]
        self.batches += 1
        assert self.loop is not None
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody awaits any more
            self.loop.call_soon_threadsafe(_settle, outcomes)

    def close(self) -> None:
        """Let the thread end once the jobs handed in are written."""
        self.closed = True
        self.wake.set()


def _settle(outcomes: list[tuple[asyncio.Future[Any], Any, BaseException | None]]) -> None:
    for future, result, error in outcomes:
        if future.cancelled():
            continue
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)


_WRITERS: WeakKeyDictionary[Crawler, DiskWriter] = WeakKeyDictionary()


def disk_writer(crawler: Crawler) -> DiskWriter:
    """The crawl's one disk writer (its thread ends when the engine stops)."""
    writer = _WRITERS.get(crawler)
    if writer is None:
        writer = _WRITERS[crawler] = DiskWriter()
        from scrapy import signals

        crawler.signals.connect(writer.close, signal=signals.engine_stopped, weak=False)
    return writer
