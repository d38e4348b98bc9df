"""A real ``redis-server`` on a free loopback port, for the tests (stoppable mid-crawl).

Locked down as docs/distributed.md asks: ``--requirepass`` with a random password per server, carried by
:attr:`RedisServer.url` and :meth:`RedisServer.client`, so every Redis test runs authenticated.
"""

from __future__ import annotations

import contextlib
import secrets
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
        self.password = secrets.token_hex(16)  # hex: safe in a URL and on a command line
        self.proc: subprocess.Popen[bytes] | None = None
        self.appendfsync: str | None = None  # AOF with this fsync policy ("always", "everysec"); None: no AOF

    @property
    def url(self) -> str:
        return f"redis://:{self.password}@127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, password=self.password, socket_timeout=5)

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--requirepass", self.password,
             "--save", "", *self.aof_args(),
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

    def aof_args(self) -> list[str]:
        """Persistence flags: an append-only file with :attr:`appendfsync`, or none (the default)."""
        if self.appendfsync is None:
            return ["--appendonly", "no"]
        return ["--appendonly", "yes", "--appendfsync", self.appendfsync, "--appenddirname", "aof"]

    def kill(self) -> None:
        """SIGKILL the server, as a crash would: no save; only what the AOF holds survives a :meth:`start`."""
        if self.proc is None:
            return
        self.proc.kill()
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
