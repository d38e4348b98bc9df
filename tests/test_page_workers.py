"""WorkerPipes: the page pool's worker processes, fed and read through pipes on the event loop.

Real forkserver processes, real pipes: results come back whole and to the right
job (messages far larger than a pipe's buffer included), a job never blocks the
loop while its worker is busy, a worker's exception arrives with its traceback,
the commit's blocking wait on the loop's thread reads the pipes itself, and a
worker that dies fails every job not answered (never a hang) so the page pool
can evaluate them in the crawl process.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import time
from collections.abc import Iterator
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager

import pytest

from skillgraph.page.workers import RemoteTraceback, WorkerPipes

BIG = b"\x00\xff" * 1_500_000  # 3 MB: ~46 times a pipe's default buffer


def echo(value: object) -> object:
    return value


def nap(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def fail(text: str) -> None:
    raise ValueError(text)


def exit_now(code: int) -> None:
    os._exit(code)


@pytest.fixture
def context() -> multiprocessing.context.ForkServerContext:
    return multiprocessing.get_context("forkserver")


@contextmanager
def running(count: int, context: multiprocessing.context.ForkServerContext) -> Iterator[WorkerPipes]:
    """``count`` workers read by the running loop, closed on the way out."""
    pipes = WorkerPipes(count, context)
    pipes.attach(asyncio.get_running_loop())
    try:
        yield pipes
    finally:
        pipes.close()


def run(coroutine: object) -> object:
    return asyncio.run(coroutine)  # type: ignore[arg-type]


def test_results_come_back_whole_and_to_their_job(context: multiprocessing.context.ForkServerContext) -> None:
    async def main() -> list[object]:
        with running(2, context) as pipes:
            values: list[object] = [BIG if i % 9 == 0 else (i, "x" * i) for i in range(120)]
            results = await asyncio.gather(*(pipes.run(echo, value) for value in values))
            assert results == values
            pids = set(await asyncio.gather(*(pipes.run(nap_pid, 0.01) for _ in range(8))))
            return sorted(pids)

    pids = run(main())
    assert len(pids) == 2, "both workers took jobs"  # type: ignore[arg-type]


def nap_pid(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def test_a_big_job_for_a_busy_worker_does_not_block_the_loop(
        context: multiprocessing.context.ForkServerContext) -> None:
    async def main() -> None:
        with running(1, context) as pipes:
            busy = pipes.run(nap, 0.3)
            big = pipes.run(echo, BIG)  # the worker is asleep: the pipe takes ~64 kB of it, the loop the rest
            assert pipes.workers[0].outbox, "the job was written whole, blocking the loop on a busy worker"
            assert pipes.workers[0].writing
            assert await busy == 0.3
            assert await big == BIG
            assert not pipes.workers[0].outbox and not pipes.workers[0].writing

    run(main())


def test_at_most_two_jobs_per_worker_the_rest_wait_here(context: multiprocessing.context.ForkServerContext) -> None:
    async def main() -> None:
        with running(2, context) as pipes:
            futures = [pipes.run(nap, 0.05) for _ in range(9)]
            assert [len(worker.waiting) for worker in pipes.workers] == [2, 2]
            assert len(pipes.backlog) == 5
            assert await asyncio.gather(*futures) == [0.05] * 9
            assert not pipes.backlog and all(not worker.waiting for worker in pipes.workers)

    run(main())


def test_an_exception_in_a_worker_reaches_its_job_with_the_workers_traceback(
        context: multiprocessing.context.ForkServerContext) -> None:
    async def main() -> None:
        with running(1, context) as pipes:
            with pytest.raises(ValueError, match="broken page") as caught:
                await pipes.run(fail, "broken page")
            assert isinstance(caught.value.__cause__, RemoteTraceback)
            assert "in fail" in str(caught.value.__cause__)
            assert await pipes.run(echo, "still working") == "still working"

    run(main())


def test_submit_and_wait_on_the_loops_thread_reads_the_pipes_itself(
        context: multiprocessing.context.ForkServerContext) -> None:
    """The graph's commit hands chunks to the workers and blocks the loop's thread until they answer."""

    async def main() -> None:
        with running(2, context) as pipes:
            futures = [pipes.submit(echo, i) for i in range(7)] + [pipes.submit(echo, BIG)]
            # no await: the loop never runs its readers while this thread waits
            assert [future.result() for future in futures[:7]] == list(range(7))
            assert futures[7].result() == BIG
            assert await pipes.run(echo, "loop again") == "loop again"  # the loop's own reading still works

    run(main())


def test_a_worker_that_dies_fails_every_job_not_answered_and_never_hangs(
        context: multiprocessing.context.ForkServerContext) -> None:
    async def main() -> None:
        with running(2, context) as pipes:
            victim = pipes.workers[0].process.pid
            futures = [pipes.run(nap, 2.0) for _ in range(6)]
            os.kill(victim, signal.SIGKILL)
            outcomes = await asyncio.wait_for(asyncio.gather(*futures, return_exceptions=True), 30)
            assert all(isinstance(outcome, BrokenProcessPool) for outcome in outcomes), outcomes
            with pytest.raises(BrokenProcessPool):
                await pipes.run(echo, 1)
            assert not any(worker.process.is_alive() for worker in pipes.workers), "the other worker is stopped"

    run(main())


def test_a_job_that_ends_its_worker_breaks_the_pool_with_a_reason(
        context: multiprocessing.context.ForkServerContext) -> None:
    async def main() -> None:
        with running(1, context) as pipes, pytest.raises(BrokenProcessPool, match="page worker process"):
            await asyncio.wait_for(pipes.run(exit_now, 3), 30)

    run(main())


def test_close_lets_the_workers_exit_and_leaves_no_descriptor_open(
        context: multiprocessing.context.ForkServerContext) -> None:
    async def one_pool() -> list[object]:
        pipes = WorkerPipes(2, context)
        pipes.attach(asyncio.get_running_loop())
        assert await pipes.run(echo, 1) == 1
        processes = [worker.process for worker in pipes.workers]
        pipes.close()
        pipes.close()  # twice is harmless
        with pytest.raises(RuntimeError):
            pipes.submit(echo, 2)
        with pytest.raises(RuntimeError):
            pipes.run(echo, 3)
        return [process.exitcode for process in processes]

    run(one_pool())  # the fork server is up from here on (its connection stays open for the process)
    before = sorted(os.listdir("/proc/self/fd"))
    assert run(one_pool()) == [0, 0], "the workers ended on their own once their jobs pipe closed"
    assert sorted(os.listdir("/proc/self/fd")) == before, "a pipe was left open"
