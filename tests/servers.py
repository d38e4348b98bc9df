"""Real HTTP servers for the tests: one origin per fixture site, on 127.0.0.1:0.

Each site is a directory served by ``http.server`` in a thread, plus per-path
rules (status, extra headers, delays, bodies) for the cases a static tree
cannot express: a ``Link`` header, a 500 on every page, a slow response.
"""

from __future__ import annotations

import gzip
import shutil
import socket
import socketserver
import threading
import time
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar


@dataclass
class Rule:
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    delay: float = 0.0


#: Running servers: their exact ``127.0.0.1:PORT`` origins are allowlisted for test crawls.
LIVE: set[SiteServer] = set()


def live_origins() -> list[str]:
    """``host:port`` of every running SiteServer (the SSRF guard's exact allowlist entries)."""
    return sorted(f"127.0.0.1:{server.port}" for server in LIVE)


def free_port() -> int:
    """A loopback port nobody listens on (for services that take a port, and for refused connections)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


_Server = TypeVar("_Server", bound=socketserver.TCPServer)


def listening(server_class: type[_Server], handler: Any, address: tuple[str, int] = ("127.0.0.1", 0)) -> _Server:
    """``server_class`` bound to ``address`` and listening with the kernel's largest accept queue.

    ``socketserver`` listens with a queue of 5: a crawl opening 16 connections at once overflows it,
    the kernel drops the SYNs and the client retries each a second later (a test a second slower, a
    timing assertion a second off). A production server listens with hundreds (nginx 511).
    """
    server = server_class(address, handler, bind_and_activate=False)
    server.request_queue_size = socket.SOMAXCONN
    try:
        server.server_bind()
        server.server_activate()
    except BaseException:
        server.server_close()
        raise
    return server


class LoopbackHTTPServer:
    """A threaded server for ``handler`` on 127.0.0.1 with an OS-chosen port, until :meth:`stop`.

    ``server_class`` is ``ThreadingHTTPServer`` for ``http.server`` handlers, or a
    ``socketserver.ThreadingTCPServer`` for handlers that write raw bytes.
    """

    def __init__(self, handler: type[socketserver.BaseRequestHandler],
                 server_class: type[socketserver.ThreadingTCPServer] = ThreadingHTTPServer) -> None:
        self.httpd = listening(server_class, handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class SiteServer(LoopbackHTTPServer):
    """Serve ``root`` on a free loopback port until :meth:`stop`."""

    def __init__(self, root: Path, rules: dict[str, Rule] | None = None, default: Rule | None = None) -> None:
        self.root = Path(root)
        self.rules: dict[str, Rule] = rules or {}
        self.default = default  # applied to every path without its own rule
        self.requests: list[tuple[float, str, dict[str, str]]] = []
        server = self

        class Handler(SimpleHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, directory=str(server.root), **kwargs)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:
                server.requests.append((time.monotonic(), self.path, dict(self.headers.items())))
                self._extra: dict[str, str] = {}  # one handler serves every request of a keep-alive connection
                rule = server.rules.get(self.path.split("?")[0]) or server.default
                if rule is None:
                    return super().do_GET()
                if rule.delay:
                    time.sleep(rule.delay)
                if rule.body is None and rule.status is None:
                    self._extra = rule.headers
                    return super().do_GET()
                body = rule.body if rule.body is not None else b""
                self.send_response(rule.status or 200)
                for name, value in rule.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def end_headers(self) -> None:
                for name, value in getattr(self, "_extra", {}).items():
                    self.send_header(name, value)
                super().end_headers()

            def guess_type(self, path: Any) -> str:
                p = str(path)
                if p.endswith(".md"):
                    return "text/markdown; charset=utf-8"
                if p.endswith(".txt"):
                    return "text/plain; charset=utf-8"
                if p.endswith(".gz"):
                    return "application/gzip"
                return super().guess_type(path)

        super().__init__(Handler)
        LIVE.add(self)  # the SSRF allowlist of test crawls (conftest.run_scrapy)

    def paths(self) -> list[str]:
        return [path for _, path, _ in self.requests]

    def stop(self) -> None:
        LIVE.discard(self)
        super().stop()


def copy_site(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def gzip_in_place(plain: Path) -> Path:
    """Replace ``a.xml`` by ``a.xml.gz``."""
    packed = plain.with_name(plain.name + ".gz")
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    plain.unlink()
    return packed
