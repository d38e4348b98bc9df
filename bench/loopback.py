"""Serve a directory on 127.0.0.1 (OS-chosen port) from a daemon thread, quietly: the benches' docs server."""

from __future__ import annotations

import socket
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class QuietHandler(SimpleHTTPRequestHandler):
    latency = 0.0  #: seconds each GET waits before it answers (a remote host's response time)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:
        if self.latency:
            time.sleep(self.latency)
        super().do_GET()


class LoopbackServer(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` listening with the kernel's largest accept queue, as a production server does.

    ``socketserver`` listens with a queue of 5: connections a busy client opens faster than the server's
    accept thread takes them overflow it, the kernel drops their SYN and the client retries a second
    later. A build of the Python docs at 16 connections lost 114-136 connections a crawl that way (plain
    Scrapy fetching the same pages 13-18), each a second's stall of one of its 16 slots: the side that left
    the server's accept thread less CPU lost more. nginx listens with 511, asyncio servers with 100 to
    ``SOMAXCONN``.
    """

    request_queue_size = socket.SOMAXCONN


def listen_overflows() -> int:
    """Connections the machine's listening sockets dropped so far, their accept queue full (``/proc/net/netstat``,
    TcpExt ListenOverflows; 0 where unreadable): a rise during a bench round means stalled requests."""
    try:
        with open("/proc/net/netstat") as netstat:
            names, values = (line.split() for line in netstat if line.startswith("TcpExt:"))
        return int(values[names.index("ListenOverflows")])
    except (OSError, ValueError):
        return 0


def serve_directory(root: Path, latency: float = 0.0) -> ThreadingHTTPServer:
    """Start serving ``root``, each answer ``latency`` seconds late; call ``.shutdown()`` on the result to stop."""
    handler = type("LatentHandler", (QuietHandler,), {"latency": latency}) if latency else QuietHandler
    server = LoopbackServer(("127.0.0.1", 0), partial(handler, directory=str(root)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
