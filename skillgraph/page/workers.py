"""Worker processes on pipes the event loop reads: the page pool's transport, without helper threads.

``ProcessPoolExecutor`` moves each job through a queue whose feeder thread
pickles it and each result through a manager thread that unpickles it and wakes
the event loop: three threads handing one page over, each wake-up a fight for
the GIL with the reactor (0.76 ms of the crawl process's CPU a page in
bench/stages.py, for ~0.05 ms of pickling). Here each worker has a pipe for its
jobs and one for its results. The event loop writes jobs (non-blocking: a job
larger than the pipe's buffer is finished when the pipe drains) and reads
results when their pipe is readable (``loop.add_reader``), on its own thread.

A worker is sent at most :data:`IN_FLIGHT` jobs at a time, so that the next one
waits in its pipe while it works on one; the rest wait here, for the first
worker that answers. A worker that dies breaks the pool, as it breaks
``ProcessPoolExecutor``: every job not answered fails with
:class:`~concurrent.futures.process.BrokenProcessPool`, which the page pool
answers by evaluating the page in the crawl process, so no page is lost.

:meth:`WorkerPipes.submit` is the :class:`~concurrent.futures.Executor` face for
the graph's commit, which hands chunks of pages to the same workers and waits
for them on the reactor thread: :meth:`~WorkerPipes.wait` reads the pipes itself
while the loop cannot.
"""

from __future__ import annotations

import asyncio
import gc
import os
import pickle
import select
import signal
import threading
import traceback
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Executor, Future
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.context import ForkServerContext
from typing import Any

from skillgraph.files import write_all

#: Jobs a worker holds at once: the one it works on and the next, already in its pipe.
IN_FLIGHT = 2
_HEADER = 8  #: bytes of a message's length, big-endian, before the message
_PROTOCOL = pickle.HIGHEST_PROTOCOL
#: How long :meth:`WorkerPipes.close` waits for a worker to finish and exit before killing it.
EXIT_WAIT = 10.0


class RemoteTraceback(Exception):  # noqa: N818 - concurrent.futures' name for the same thing
    """The worker's traceback of an exception raised there (set as the exception's ``__cause__``)."""

    def __str__(self) -> str:
        return str(self.args[0])


def serve(jobs: int, results: int, initializer: Callable[[], None] | None) -> None:
    """A worker's life: read a job, run it, write its outcome, until the jobs pipe closes."""
    if initializer is not None:
        initializer()
    reader = open(jobs, "rb", buffering=1 << 16, closefd=False)  # noqa: SIM115 - read for the whole life
    while True:
        header = reader.read(_HEADER)
        if len(header) < _HEADER:
            return  # the crawl closed the pipe: no more jobs
        payload = reader.read(int.from_bytes(header, "big"))
        function, args = pickle.loads(payload)
        del payload
        try:
            outcome = pickle.dumps((True, function(*args)), _PROTOCOL)
        except BaseException as exc:  # handed to the job's future, as ProcessPoolExecutor does
            outcome = _failure(exc)
        write_all(results, len(outcome).to_bytes(_HEADER, "big"), outcome)


def _serve_connections(jobs: Connection, results: Connection, initializer: Callable[[], None] | None) -> None:
    """:func:`serve` on the file descriptors the worker was handed (the connections keep them open)."""
    serve(jobs.fileno(), results.fileno(), initializer)


def _failure(exc: BaseException) -> bytes:
    remote = "".join(traceback.format_exception(exc))
    try:
        return pickle.dumps((False, (exc, remote)), _PROTOCOL)
    except Exception:  # an exception that does not pickle: its text, as a RuntimeError
        return pickle.dumps((False, (RuntimeError(f"{type(exc).__name__}: {exc}"), remote)), _PROTOCOL)


def _read_exactly(fd: int, size: int) -> bytes:
    """``size`` bytes from a blocking pipe (the worker is writing them now); EOFError if it closed first."""
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        size -= len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _quiet_worker() -> None:
    """Ctrl-C is the crawl's to handle (it finishes its pages, then stops the pool); the modules the
    worker started with are frozen out of the garbage collector's walks, as the crawl's are."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.freeze()


@dataclass(eq=False)
class _Worker:
    process: Any
    jobs: int  #: write end of the jobs pipe (non-blocking)
    results: int  #: read end of the results pipe (blocking: a result is read whole once it starts)
    outbox: deque[memoryview] = field(default_factory=deque)  #: job bytes not yet in the pipe
    waiting: deque[Future[Any] | asyncio.Future[Any]] = field(default_factory=deque)  #: sent, not answered
    writing: bool = False  #: the loop watches the jobs pipe for room


class WorkerPipes(Executor):
    """``count`` worker processes from ``context``, each fed through its own pair of pipes."""

    def __init__(self, count: int, context: ForkServerContext, initializer: Callable[[], None] | None = _quiet_worker
                 ) -> None:
        self.lock = threading.RLock()  # the loop's callbacks and a thread waiting in :meth:`wait`
        self.workers: list[_Worker] = []
        self.backlog: deque[tuple[bytes, Future[Any] | asyncio.Future[Any]]] = deque()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.broken: BrokenProcessPool | None = None
        self.closed = False
        try:
            for _ in range(count):
                self.workers.append(self._spawn(context, initializer))
        except BaseException:
            self._kill()
            for worker in self.workers:
                os.close(worker.jobs)
                os.close(worker.results)
            raise

    @staticmethod
    def _spawn(context: ForkServerContext, initializer: Callable[[], None] | None) -> _Worker:
        job_read, job_write = os.pipe()
        result_read, result_write = os.pipe()
        # Connection objects only carry the worker's two ends to it (multiprocessing passes their file
        # descriptors to the new process); the messages are this module's own (a length, then the bytes).
        theirs = (Connection(job_read, writable=False), Connection(result_write, readable=False))
        try:
            process = context.Process(target=_serve_connections, args=(*theirs, initializer), daemon=True)
            process.start()
        except BaseException:
            os.close(job_write)
            os.close(result_read)
            raise
        finally:
            for end in theirs:  # the worker's ends are the worker's: EOF on either side means the other is gone
                end.close()
        os.set_blocking(job_write, False)
        return _Worker(process, job_write, result_read)

    # -- on the event loop --------------------------------------------------------------------------------------------

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Read the workers' results (and notice their deaths) on ``loop``."""
        self.loop = loop
        for worker in self.workers:
            loop.add_reader(worker.results, self._readable, worker)

    def run(self, function: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
        """``function(*args)`` in a worker, from the loop's thread: its outcome, as an asyncio future."""
        assert self.loop is not None
        if self.closed:
            raise RuntimeError("cannot run a job on closed worker processes")
        future = self.loop.create_future()
        payload = pickle.dumps((function, args), _PROTOCOL)
        with self.lock:  # the queues are shared with a thread that may be waiting in :meth:`wait`
            self._hand(payload, future)
        return future

    def _readable(self, worker: _Worker) -> None:
        with self.lock:
            if self.closed or self.broken is not None:
                self._forget(worker)  # a dead worker's pipe stays readable (EOF): stop watching it
            elif _ready(worker.results):  # not already read by a thread in :meth:`wait`
                self._receive(worker)

    # -- any thread ---------------------------------------------------------------------------------------------------

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        """:class:`~concurrent.futures.Executor`'s ``submit``; wait for the future with :meth:`wait` on the
        loop's thread (the loop cannot read the results while its thread waits)."""
        if kwargs:
            raise TypeError("WorkerPipes.submit takes positional arguments only")
        future: Future[Any] = _PumpedFuture(self)
        payload = pickle.dumps((fn, args), _PROTOCOL)
        with self.lock:
            if self.closed:
                raise RuntimeError("cannot submit to closed worker processes")
            self._hand(payload, future)
        return future

    def wait(self, futures: Iterable[Future[Any]]) -> None:
        """Until every one of ``futures`` is done, move jobs and results here (not on the loop)."""
        pending = list(futures)
        while not all(future.done() for future in pending):
            with self.lock:
                if self.broken is not None or self.closed:
                    return
                reads = {worker.results: worker for worker in self.workers}
                writes = {worker.jobs: worker for worker in self.workers if worker.outbox}
            readable, writable, _ = select.select(list(reads), list(writes), [], 1.0)
            with self.lock:
                for fd in writable:
                    if self.broken is None:
                        self._flush(writes[fd], from_wait=True)
                for fd in readable:
                    if self.broken is None and _ready(fd):
                        self._receive(reads[fd])

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.close()

    def close(self) -> None:
        """Cancel what waits here, let the workers finish what they hold and exit (killed after
        :data:`EXIT_WAIT` seconds), and stop reading their pipes."""
        with self.lock:
            if self.closed:
                return
            self.closed = True
            for _, future in self.backlog:
                future.cancel()
            self.backlog.clear()
            for worker in self.workers:
                self._forget(worker)
                os.close(worker.jobs)  # EOF: the worker ends after the jobs it has
        for worker in self.workers:
            worker.process.join(EXIT_WAIT)
        self._kill()
        for worker in self.workers:
            os.close(worker.results)

    # -- under the lock -----------------------------------------------------------------------------------------------

    def _hand(self, payload: bytes, future: Future[Any] | asyncio.Future[Any]) -> None:
        if self.broken is not None:
            future.set_exception(self.broken)
            return
        worker = min(self.workers, key=lambda w: len(w.waiting))
        if len(worker.waiting) >= IN_FLIGHT:
            self.backlog.append((payload, future))
            return
        self._send(worker, payload, future)

    def _send(self, worker: _Worker, payload: bytes, future: Future[Any] | asyncio.Future[Any]) -> None:
        worker.waiting.append(future)
        worker.outbox.append(memoryview(len(payload).to_bytes(_HEADER, "big")))
        worker.outbox.append(memoryview(payload))
        self._flush(worker)

    def _flush(self, worker: _Worker, from_wait: bool = False) -> None:
        """Write what the pipe takes now; the loop writes the rest when the pipe has room."""
        outbox = worker.outbox
        try:
            while outbox:
                written = os.write(worker.jobs, outbox[0])
                if written == len(outbox[0]):
                    outbox.popleft()
                else:
                    outbox[0] = outbox[0][written:]
        except BlockingIOError:
            pass
        except OSError as exc:  # EPIPE: the worker is gone
            self._break(f"a page worker process's pipe failed ({exc})")
            return
        on_loop = self.loop is not None and not from_wait and _on_thread(self.loop)
        if outbox and not worker.writing and self.loop is not None:
            worker.writing = True
            if on_loop:
                self.loop.add_writer(worker.jobs, self._writable, worker)
            else:
                self.loop.call_soon_threadsafe(self._watch_writes, worker)
        elif not outbox and worker.writing and on_loop:
            worker.writing = False
            self.loop.remove_writer(worker.jobs)  # type: ignore[union-attr]

    def _watch_writes(self, worker: _Worker) -> None:
        with self.lock:
            if worker.outbox and not self.closed and self.broken is None:
                self.loop.add_writer(worker.jobs, self._writable, worker)  # type: ignore[union-attr]
            else:
                worker.writing = False

    def _writable(self, worker: _Worker) -> None:
        with self.lock:
            if not self.closed and self.broken is None:
                self._flush(worker)

    def _receive(self, worker: _Worker) -> None:
        try:
            header = _read_exactly(worker.results, _HEADER)
            payload = _read_exactly(worker.results, int.from_bytes(header, "big"))
        except (EOFError, OSError):
            code = worker.process.exitcode
            self._break(f"a page worker process died (exit code {code})" if code is not None
                        else "a page worker process closed its pipe")
            return
        ok, value = pickle.loads(payload)
        del payload
        future = worker.waiting.popleft()
        if not ok:
            exc, remote = value
            exc.__cause__ = RemoteTraceback(remote)
        if self.backlog:
            self._send(worker, *self.backlog.popleft())
        if future.cancelled():
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(exc)

    def _break(self, why: str) -> None:
        """A worker is gone: every job not answered fails with BrokenProcessPool, the others are stopped."""
        if self.broken is not None:
            return
        self.broken = BrokenProcessPool(why)
        for worker in self.workers:
            self._forget(worker)
            while worker.waiting:
                future = worker.waiting.popleft()
                if not future.done():
                    future.set_exception(self.broken)
            worker.outbox.clear()
        while self.backlog:
            _, future = self.backlog.popleft()
            if not future.done():
                future.set_exception(self.broken)
        self._kill()

    def _forget(self, worker: _Worker) -> None:
        if self.loop is not None and not self.loop.is_closed() and _on_thread(self.loop):
            self.loop.remove_reader(worker.results)
            if worker.writing:
                self.loop.remove_writer(worker.jobs)
        worker.writing = False

    def _kill(self) -> None:
        for worker in self.workers:
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join(EXIT_WAIT)


class _PumpedFuture(Future[Any]):
    """A future of :meth:`WorkerPipes.submit` whose ``result()`` moves the pipes while it waits: the graph's
    commit waits on the loop's thread, where nothing else would read the answer."""

    def __init__(self, pipes: WorkerPipes) -> None:
        super().__init__()
        self.pipes = pipes

    def result(self, timeout: float | None = None) -> Any:
        if not self.done():
            self.pipes.wait([self])
        return super().result(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        if not self.done():
            self.pipes.wait([self])
        return super().exception(timeout)


def _ready(fd: int) -> bool:
    """Whether ``fd`` can be read without blocking (a result, or EOF), asked without waiting."""
    return bool(select.select([fd], [], [], 0)[0])


def _on_thread(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
