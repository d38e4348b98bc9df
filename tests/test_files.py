"""The atomic file writer and the crawl's disk writer thread (skillgraph/files.py)."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import pytest

from skillgraph.files import Batch, DiskWriter, write_atomic


def test_write_atomic_leaves_a_readable_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "page.md"
    write_atomic(target, "# Page\n", durable=True)
    assert target.read_text() == "# Page\n"
    assert oct(target.stat().st_mode & 0o777) == oct(0o644)
    assert [p.name for p in tmp_path.iterdir()] == ["page.md"]


def test_the_disk_writer_writes_many_files_in_few_batches_on_one_thread(tmp_path: Path) -> None:
    threads: set[str] = set()

    def job(n: int, batch: Batch) -> int:
        threads.add(threading.current_thread().name)
        batch.write_atomic(tmp_path / f"{n}.json", f'{{"n": {n}}}', durable=n % 2 == 0)
        return n

    async def scenario() -> tuple[list[int], int]:
        writer = DiskWriter()
        results = await asyncio.gather(*(writer.run(lambda b, n=n: job(n, b)) for n in range(200)))
        writer.close()
        return list(results), writer.batches

    results, batches = asyncio.run(scenario())
    assert results == list(range(200)), "each awaiter gets its own job's answer"
    assert batches < 200, "jobs waiting together are written together"
    assert threads == {"skillgraph-disk"}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{n}.json" for n in range(200)), "no temp file left"
    assert (tmp_path / "7.json").read_text() == '{"n": 7}'


def test_a_failing_job_fails_only_its_awaiter_and_a_failed_batch_leaves_no_temp(tmp_path: Path) -> None:
    def good(batch: Batch) -> str:
        batch.write_atomic(tmp_path / "good.md", "ok")
        return "ok"

    def bad(batch: Batch) -> str:
        raise OSError(28, os.strerror(28))

    def nowhere(batch: Batch) -> None:
        batch.write_atomic(tmp_path / "missing" / "x.md", "x")  # no such folder

    async def scenario() -> list[object]:
        writer = DiskWriter()
        outcomes = await asyncio.gather(writer.run(good), writer.run(bad), writer.run(nowhere),
                                        return_exceptions=True)
        writer.close()
        return list(outcomes)

    good_result, bad_result, nowhere_result = scenario_result = asyncio.run(scenario())
    assert good_result == "ok", scenario_result
    assert isinstance(bad_result, OSError) and bad_result.errno == 28
    assert isinstance(nowhere_result, FileNotFoundError)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.md"]


def test_a_closed_writer_takes_no_more_jobs(tmp_path: Path) -> None:
    async def scenario() -> None:
        writer = DiskWriter()
        await writer.run(lambda batch: batch.write_atomic(tmp_path / "a", "a"))
        writer.close()
        with pytest.raises(RuntimeError):
            await writer.run(lambda batch: None)

    asyncio.run(scenario())
    assert (tmp_path / "a").read_text() == "a"


def test_a_batch_file_is_0644_under_any_umask_and_a_taken_temp_name_is_skipped(tmp_path: Path) -> None:
    from skillgraph import files

    previous = os.umask(0o077)  # stricter than 0644: the batch fchmods
    try:
        batch = Batch()
        batch.write_atomic(tmp_path / "strict.md", "x")
        batch.finish()
    finally:
        os.umask(previous)
    assert oct((tmp_path / "strict.md").stat().st_mode & 0o777) == oct(0o644)
    number = next(files._TEMP_NUMBERS) + 1
    (tmp_path / f".taken.md.{os.getpid()}-{number}.tmp").write_text("left over")  # the next temp name exists
    batch = Batch()
    batch.write_atomic(str(tmp_path / "taken.md"), b"new")
    batch.finish()
    assert (tmp_path / "taken.md").read_bytes() == b"new"
    assert (tmp_path / f".taken.md.{os.getpid()}-{number}.tmp").read_text() == "left over", "never overwritten"
