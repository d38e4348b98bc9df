"""Proxies: real crawls through a real SOCKS5/HTTP proxy on loopback (pproxy), and the
fail-open fallback when it is down (or the failure when fail-open is off)."""

from __future__ import annotations

import base64
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from scrapy import Request, Spider
from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.settings import Settings
from scrapy.utils.misc import build_from_crawler, load_object
from scrapy.utils.test import get_crawler
from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

from skillgraph.addon import Addon
from skillgraph.handlers.socks import SocksDownloadHandlerMixin, SocksProxy
from skillgraph.middlewares.proxy import ProxyMiddleware, redact
from tests.servers import SiteServer, free_port, listening

SSRF_SITE = Path(__file__).parent / "fixtures" / "hostile" / "ssrf_site"
#: The browser tier is not what these tests exercise (and a short fixture page would start Chromium).
FAST = {"SKILLGRAPH_RENDER_ENABLED": "False"}




class Pproxy:
    """``pproxy`` serving SOCKS5 and HTTP proxying on one loopback port; logs each tunnel (-v)."""

    def __init__(self, log: Path) -> None:
        self.port = free_port()
        self.log = log
        self.proc = subprocess.Popen(
            [str(Path(sys.executable).with_name("pproxy")), "-l", f"http+socks5://127.0.0.1:{self.port}", "-v"],
            stdout=log.open("w"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        self.stop()
        pytest.fail("pproxy did not start")

    def tunnels(self) -> list[str]:
        return [line for line in self.log.read_text().splitlines() if " -> " in line]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture
def pproxy(tmp_path: Path) -> Iterator[Pproxy]:
    proxy = Pproxy(tmp_path / "pproxy.log")
    yield proxy
    proxy.stop()


def test_crawl_through_socks5_resolves_locally(crawl, python_docs: SiteServer, pproxy: Pproxy) -> None:
    """Default settings (render tier on: scrapy-playwright's handler, SOCKS-capable) on the Python docs."""
    site = python_docs
    url = f"http://localhost:{site.port}/library/"
    result = crawl("docs", url=url, graph="via_socks5", settings={
        "SKILLGRAPH_PROXY_URL": f"socks5://127.0.0.1:{pproxy.port}", "SKILLGRAPH_MAX_PAGES": 3,
        "SKILLGRAPH_SSRF_ALLOWLIST": f"localhost:{site.port}"})
    assert result.returncode == 0, result.log[-3000:]
    assert len(result.sources["pages"]) == 3
    tunnels = pproxy.tunnels()
    assert len([t for t in tunnels if t.endswith(f"-> 127.0.0.1:{site.port}")]) >= 3, tunnels
    assert not any("localhost" in t for t in tunnels), "socks5://: the name is resolved (and guarded) locally"
    assert "skillgraph/proxy/fallback" not in result.stats


def test_crawl_through_socks5h_and_http_proxies(crawl, sites: dict[str, SiteServer], pproxy: Pproxy) -> None:
    site = sites["crawl_site"]
    allow = {"SKILLGRAPH_SSRF_ALLOWLIST": f"localhost:{site.port}", **FAST}
    url = f"http://localhost:{site.port}/docs/"
    remote = crawl("docs", url=url, graph="via_socks5h",
                   settings={"SKILLGRAPH_PROXY_URL": f"socks5h://127.0.0.1:{pproxy.port}", **allow})
    assert remote.returncode == 0 and len(remote.sources["pages"]) >= 7, remote.log[-3000:]
    assert len([t for t in pproxy.tunnels() if t.endswith(f"-> localhost:{site.port}")]) >= 7, "the proxy resolves"
    before = len(pproxy.tunnels())
    http = crawl("docs", url=url, graph="via_http",
                 settings={"SKILLGRAPH_PROXY_URL": f"http://127.0.0.1:{pproxy.port}", **allow})
    assert http.returncode == 0 and len(http.sources["pages"]) >= 7, http.log[-3000:]
    assert len(pproxy.tunnels()) - before >= 7


def _self_signed(directory: Path) -> tuple[Path, Path]:
    """A throwaway certificate for ``localhost`` (cryptography ships with Scrapy's TLS stack)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.now(UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - timedelta(hours=1))
            .not_valid_after(now + timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def test_https_through_socks5h(crawl, tmp_path: Path, pproxy: Pproxy) -> None:
    """TLS runs inside the SOCKS tunnel: the proxy sees only the name and port."""
    cert, key = _self_signed(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server = listening(ThreadingHTTPServer, partial(QuietHandler, directory=str(SSRF_SITE)))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        result = crawl("docs", url=f"https://localhost:{port}/docs/", graph="tls", settings={
            **FAST, "SKILLGRAPH_PROXY_URL": f"socks5h://127.0.0.1:{pproxy.port}",
            "SKILLGRAPH_SSRF_ALLOWLIST": f"localhost:{port}"})
    finally:
        server.shutdown()
        server.server_close()
    assert result.returncode == 0, result.log[-3000:]
    assert {p["url"].rsplit("/", 1)[-1] for p in result.sources["pages"]} == {"", "intro.html", "usage.html"}
    assert len([t for t in pproxy.tunnels() if t.endswith(f"-> localhost:{port}")]) >= 3


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


def test_unreachable_proxy_falls_back_to_direct(crawl, sites: dict[str, SiteServer]) -> None:
    dead = free_port()  # nothing listens there
    result = crawl("docs", url=sites["crawl_site"].url + "docs/", graph="fallback",
                   settings={"SKILLGRAPH_PROXY_URL": f"socks5h://user:secret@127.0.0.1:{dead}", **FAST})
    assert result.returncode == 0, result.log[-3000:]
    assert len(result.sources["pages"]) >= 7, "every page came over the direct connection"
    assert result.stats["skillgraph/proxy/fallback"] >= 7
    assert result.log.count(f"Proxy socks5h://127.0.0.1:{dead} unreachable") == 1, "warned once per proxy"
    assert "secret" not in result.log


def test_unreachable_proxy_fails_when_fail_open_is_off(crawl, sites: dict[str, SiteServer]) -> None:
    dead = free_port()
    result = crawl("docs", url=sites["crawl_site"].url + "docs/", graph="closed", settings={
        "SKILLGRAPH_PROXY_URL": f"http://127.0.0.1:{dead}", "SKILLGRAPH_PROXY_FAIL_OPEN": "False", "RETRY_TIMES": 0,
        **FAST})
    assert result.stats["skillgraph/proxy/unreachable"] >= 1
    assert "skillgraph/proxy/fallback" not in result.stats
    assert result.stats["skillgraph/graph/failed"] == "no pages were written"


def test_proxy_setting_meta_and_credentials() -> None:
    crawler = get_crawler(Spider, {"SKILLGRAPH_PROXY_URL": "socks5h://127.0.0.1:1080"})
    mw = build_from_crawler(ProxyMiddleware, crawler)
    request = Request("http://example.com/")
    mw.process_request(request)
    assert request.meta["proxy"] == "socks5h://127.0.0.1:1080"
    opted_out = Request("http://example.com/", meta={"proxy": None})
    mw.process_request(opted_out)
    assert opted_out.meta["proxy"] is None
    with pytest.raises(ValueError, match="SKILLGRAPH_PROXY_URL"):
        build_from_crawler(ProxyMiddleware, get_crawler(Spider, {"SKILLGRAPH_PROXY_URL": "socks4://h:1"}))
    # HttpProxyMiddleware moves URL credentials into a header; the SOCKS handler reads them back
    auth = Request("http://example.com/", meta={"proxy": "socks5://proxy.example:1081"},
                   headers={"Proxy-Authorization": b"Basic " + base64.b64encode(b"me:p%40ss")})
    proxy = SocksProxy.from_request(auth)
    assert proxy == SocksProxy("proxy.example", 1081, False, b"me", b"p@ss")
    assert SocksProxy.from_request(Request("http://example.com/", meta={"proxy": "http://h:1"})) is None
    assert redact("socks5h://me:secret@10.0.0.1:1080") == "socks5h://10.0.0.1:1080"


def test_http_handlers_are_socks_capable() -> None:
    for render in (True, False):
        settings = Settings({"SKILLGRAPH_RENDER_ENABLED": render})
        Addon().update_settings(settings)
        handlers = settings.getdict("DOWNLOAD_HANDLERS")
        assert handlers["http"] is handlers["https"]
        handler = load_object(handlers["http"])
        assert issubclass(handler, SocksDownloadHandlerMixin) and issubclass(handler, HTTP11DownloadHandler)
        assert issubclass(handler, ScrapyPlaywrightDownloadHandler) == render, "composes with the render tier"
        assert handlers["file"] is handlers["data"] is handlers["ftp"] is handlers["s3"] is None
