"""Hostile inputs served on loopback: every case ends within its bound, with a logged
reason and a stat, while the crawl goes on and writes the honest pages.

The server is raw sockets (``http.server`` cannot send 1 byte a second, stream 50 MB
without a length, or lie about its encoding). Bounds are small test settings:
``DOWNLOAD_TIMEOUT=3`` and no retries, so the file runs in well under a minute.
"""

from __future__ import annotations

import contextlib
import gzip
import re
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.servers import LoopbackHTTPServer

HOSTILE = Path(__file__).parent / "fixtures" / "hostile"
MB = 1024 * 1024

Send = Callable[[socket.socket, str], None]


def respond(sock: socket.socket, status: str, headers: dict[str, str], body: bytes = b"") -> None:
    head = [f"HTTP/1.1 {status}", "Connection: close", *(f"{k}: {v}" for k, v in headers.items())]
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)


def page(body: bytes, ctype: str = "text/html; charset=utf-8", **extra: str) -> Send:
    return lambda sock, _: respond(sock, "200 OK", {"Content-Type": ctype, "Content-Length": str(len(body)), **extra},
                                   body)


def stream(total: int, with_length: bool) -> Send:
    """Send up to ``total`` bytes of a page in 64 KB chunks, until the client hangs up."""
    def send(sock: socket.socket, _: str) -> None:
        headers = {"Content-Type": "text/html; charset=utf-8"}
        if with_length:
            headers["Content-Length"] = str(total)
        respond(sock, "200 OK", headers, b"<!doctype html><html><body><p>")
        chunk = b"a" * 65536
        sent = 0
        while sent < total:
            sock.sendall(chunk)
            sent += len(chunk)
    return send


def slow_loris(sock: socket.socket, _: str) -> None:
    respond(sock, "200 OK", {"Content-Type": "text/html", "Content-Length": "120"})
    for _ in range(120):  # 1 byte a second: two minutes, far past any sane timeout
        sock.sendall(b"<")
        time.sleep(1)


def redirect(location: Callable[[str], str]) -> Send:
    return lambda sock, path: respond(sock, "302 Found", {"Location": location(path), "Content-Length": "0"})


def not_found(sock: socket.socket, _: str) -> None:
    respond(sock, "404 Not Found", {"Content-Type": "text/plain", "Content-Length": "9"}, b"not found")


class _ReusableTCPServer(socketserver.ThreadingTCPServer):
    allow_reuse_address = True


class RawServer(LoopbackHTTPServer):
    """A threaded loopback HTTP server whose routes write raw bytes; records each request's path, time, agent."""

    def __init__(self, routes: dict[str, Send], fallback: Send = not_found) -> None:
        self.routes = routes
        self.paths: list[str] = []
        self.times: list[float] = []  # monotonic arrival of each request, in order
        self.agents: list[str] = []  # the User-Agent of each request
        server = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                data = b""
                while b"\r\n\r\n" not in data and len(data) < 65536:
                    chunk = self.request.recv(4096)
                    if not chunk:
                        return
                    data += chunk
                target = data.split(b" ", 2)[1].decode("latin-1")
                agent = re.search(rb"(?im)^user-agent:\s*(.*?)\r?$", data)
                server.times.append(time.monotonic())
                server.agents.append(agent.group(1).decode("latin-1") if agent else "")
                server.paths.append(target)
                path = target.split("?", 1)[0]
                with contextlib.suppress(OSError):  # the client gave up: the point of most cases
                    server.routes.get(path, fallback)(self.request, target)

        super().__init__(Handler, _ReusableTCPServer)


class Listener:
    """A bare loopback port that only counts connections (the SSRF escape target)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.accepted = 0
        self.running = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while self.running:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def stop(self) -> None:
        self.running = False
        self.sock.close()


@pytest.fixture(scope="module")
def hostile() -> Iterator[tuple[RawServer, Listener]]:
    escape_target = Listener()
    ok = (HOSTILE / "site" / "ok.html").read_bytes()
    html = b"<!doctype html><html><head><title>%s</title></head><body><main><h1>%s</h1><p>%s</p></main></body></html>"
    text = "Zürich, Ünïcödé — „quoted“ text that must survive the charset mix-up intact. " * 3
    routes: dict[str, Send] = {
        "/robots.txt": page((HOSTILE / "robots-binary.txt").read_bytes(), "text/plain"),
        "/llms.txt": page((HOSTILE / "llms-binary.txt").read_bytes(), "text/plain"),
        "/docs/llms.txt": stream(20 * MB, with_length=True),
        "/docs/sitemap.xml": page((HOSTILE / "sitemap-bomb.xml").read_bytes(), "application/xml"),
        "/docs/": page((HOSTILE / "site" / "index.html").read_bytes()),
        "/docs/ok-one.html": page(ok),
        "/docs/ok-two.html": page(ok.replace(b"Honest page", b"Second honest page")),
        "/docs/gzip-bomb.html": page(gzip.compress(b"\0" * (30 * MB)), "text/html", **{"Content-Encoding": "gzip"}),
        "/docs/huge.html": stream(50 * MB, with_length=True),
        "/docs/huge-chunked.html": stream(50 * MB, with_length=False),
        "/docs/slow.html": slow_loris,
        "/docs/loop.html": redirect(lambda p: f"/docs/loop.html?n={int([*p.split('n='), '0'][1]) + 1}"),
        "/docs/escape.html": redirect(lambda _: f"http://127.0.0.1:{escape_target.port}/docs/"),
        "/docs/bad-utf8.html": page(html % (b"Bad UTF-8", b"Bad UTF-8", b"valid text \xff\xfe\xc3\x28 invalid bytes"
                                            + text.encode())),
        "/docs/wrong-charset.html": page(html % (b"Wrong charset", b"Wrong charset", text.encode()),
                                         "text/html; charset=iso-8859-1"),
        "/docs/bogus-charset.html": page(html % (b"Bogus charset", b"Bogus charset", text.encode()),
                                         "text/html; charset=x-bogus-42"),
        "/docs/wrong-type.html": page(html % (b"Wrong type", b"Wrong type", text.encode()), "image/png"),
    }
    server = RawServer(routes)
    yield server, escape_target
    server.stop()
    escape_target.stop()


def test_every_hostile_case_is_bounded_logged_and_counted(crawl, hostile: tuple[RawServer, Listener]) -> None:
    server, escape_target = hostile
    started = time.monotonic()
    result = crawl("docs", url=server.url + "docs/", graph="hostile", timeout=150, settings={
        "SKILLGRAPH_SSRF_ALLOWLIST": f"127.0.0.1:{server.port}", "DOWNLOAD_TIMEOUT": 3, "RETRY_TIMES": 0,
        "SKILLGRAPH_RENDER_ENABLED": "False"})
    assert result.returncode == 0, result.log[-3000:]
    stats, log = result.stats, result.log
    sources = result.sources
    pages = {p["url"].removeprefix(server.url + "docs/") for p in sources["pages"]}
    # the crawl went on: the honest pages and the mis-encoded ones were written
    # (an HTML page served as image/png is recognised from its body, like a browser would)
    assert {"", "ok-one.html", "ok-two.html", "bad-utf8.html", "wrong-charset.html", "bogus-charset.html",
            "wrong-type.html"} <= pages
    for name in ("bad-utf8.html", "wrong-charset.html", "bogus-charset.html", "wrong-type.html"):
        md = (result.graph / next(p["file"] for p in sources["pages"] if p["url"].endswith(name))).read_text()
        assert "charset mix-up" in md
    assert not pages & {"gzip-bomb.html", "huge.html", "huge-chunked.html", "slow.html", "loop.html", "escape.html"}
    probes = {p["url"].removeprefix(server.url): p["outcome"] for p in sources["scrape_profile"]["probes"]}
    # 20 MB llms.txt: cancelled at DOWNLOAD_MAXSIZE, the probe says why, detection goes on
    assert probes["docs/llms.txt"].startswith("error:") and "max size" in probes["docs/llms.txt"]
    assert stats["skillgraph/profiler/probe/error"] >= 1
    assert re.search(r"Probe \S+/docs/llms.txt error: .*max size", log)
    # binary/NUL llms.txt: parsed, rejected, no crash
    assert probes["llms.txt"] == "rejected: no links"
    # XML bomb: entities are never expanded (lxml resolve_entities=False): no URLs, no blow-up
    assert probes["docs/sitemap.xml"] == "rejected: no URLs in scope"
    assert stats["skillgraph/profiler/probe/rejected"] >= 2  # the bomb sitemap and the binary llms.txt
    assert re.search(r"Probe \S+/docs/sitemap.xml rejected: no URLs in scope", log)
    assert sources["scrape_profile"]["strategy"] == "crawl"
    # binary robots.txt: parsed by protego without an error, and obeyed
    assert stats["robotstxt/response_count"] == 1
    assert not any(k.startswith("robotstxt/exception_count") for k in stats)
    # gzip bomb: decompression stops at DOWNLOAD_MAXSIZE
    assert stats["skillgraph/limits/decompression_bomb"] == 1
    assert "exceeded DOWNLOAD_MAXSIZE" in log
    # 50 MB page, with and without Content-Length (plus the 20 MB llms.txt probe)
    assert stats["downloader/exception_type_count/scrapy.exceptions.DownloadCancelledError"] >= 3
    assert len(re.findall(r"larger than download max size", log)) >= 3
    # slow loris: DOWNLOAD_TIMEOUT
    assert stats["downloader/exception_type_count/scrapy.exceptions.DownloadTimeoutError"] == 1
    assert "slow.html" in log and "took longer than 3" in log
    # endless redirects: REDIRECT_MAX_TIMES
    assert stats["skillgraph/limits/max_redirects"] == 1
    assert "Redirect limit (10) reached" in log
    assert sum(p.startswith("/docs/loop.html") for p in server.paths) == 11
    # redirect to a loopback port outside the allowlist: refused, never connected
    assert stats["skillgraph/ssrf/refused_redirect"] >= 1
    assert escape_target.accepted == 0
    assert time.monotonic() - started < 150  # never hangs (the subprocess timeout is the hard bound)


@pytest.fixture(scope="module")
def big_sitemap() -> Iterator[RawServer]:
    ok = (HOSTILE / "site" / "ok.html").read_bytes()
    holder: dict[str, Any] = {}
    urls = "".join(f"<url><loc>http://127.0.0.1:{{port}}/docs/p{i}.html</loc></url>" for i in range(100_000))
    routes: dict[str, Send] = {
        "/docs/sitemap.xml": lambda sock, path: page(holder["xml"], "application/xml")(sock, path)}
    def distinct_page(sock: socket.socket, path: str) -> None:  # distinct bodies: content dedup keeps each
        page(ok.replace(b"Honest page", f"Page {path}".encode()))(sock, path)

    server = RawServer(routes, fallback=distinct_page)
    holder["xml"] = ('<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                     + urls.replace("{port}", str(server.port)) + "</urlset>").encode()
    yield server
    server.stop()


def test_sitemap_with_100k_urls_is_capped(crawl, big_sitemap: RawServer) -> None:
    result = crawl("docs", url=big_sitemap.url + "docs/", graph="bigmap", timeout=150, settings={
        "SKILLGRAPH_SSRF_ALLOWLIST": f"127.0.0.1:{big_sitemap.port}", "SKILLGRAPH_SITEMAP_MAX_URLS": 2000,
        "SKILLGRAPH_MAX_PAGES": 5, "SKILLGRAPH_RENDER_ENABLED": "False"})
    assert result.returncode == 0, result.log[-3000:]
    sources = result.sources
    assert sources["scrape_profile"]["strategy"] == "sitemap"
    outcomes = {p["url"]: p["outcome"] for p in sources["scrape_profile"]["probes"]}
    assert outcomes[big_sitemap.url + "docs/sitemap.xml"] == "accepted: 100000 URLs in scope"
    assert len(sources["pages"]) == 5
    assert sources["truncated"]["reason"] == "max_pages"
    assert result.stats["finish_reason"] == "max_pages"
    pages_fetched = [p for p in big_sitemap.paths if p.startswith("/docs/p")]
    assert len(pages_fetched) < 2000, "bounded by the URL cap and the page budget"
