"""Serve a directory on 127.0.0.1 (OS-chosen port) from a daemon thread, quietly: the benches' docs server."""

from __future__ import annotations

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


def serve_directory(root: Path, latency: float = 0.0) -> ThreadingHTTPServer:
    """Start serving ``root``, each answer ``latency`` seconds late; call ``.shutdown()`` on the result to stop."""
    handler = type("LatentHandler", (QuietHandler,), {"latency": latency}) if latency else QuietHandler
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(root)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
