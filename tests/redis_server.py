"""A real ``redis-server`` on a free loopback port, for the tests (stoppable mid-crawl)."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.servers import free_port


class RedisServer:
    """``redis-server`` with its data in ``directory``; :meth:`stop` saves it, :meth:`start` loads it back."""

    def __init__(self, directory: Path) -> None:
        if shutil.which("redis-server") is None:
            pytest.fail("redis-server missing: install Debian's redis-server (.ci/apt-packages.txt)")
        self.dir = directory
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5)

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.dir), "--dbfilename", "dump.rdb"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                self.client().ping()
                return
            except redis.ConnectionError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise
                time.sleep(0.05)

    def stop(self) -> None:
        """Save the data set and exit (a later :meth:`start` on the same port loads it back)."""
        if self.proc is None:
            return
        with contextlib.suppress(redis.ConnectionError):  # the server closes the connection as it exits
            self.client().shutdown(save=True)
        self.proc.wait(timeout=10)
        self.proc = None

    def flush(self) -> None:
        self.client().flushall()


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path)
    server.start()
    yield server
    if server.proc is not None:
        server.proc.terminate()
        server.proc.wait(timeout=10)
