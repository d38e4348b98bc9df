"""Serve a directory on 127.0.0.1 (OS-chosen port) from a daemon thread, quietly: the benches' docs server."""

from __future__ import annotations

import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


def serve_directory(root: Path) -> ThreadingHTTPServer:
    """Start serving ``root``; call ``.shutdown()`` on the result to stop."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(QuietHandler, directory=str(root)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
