"""SSRF guard: the decision over every address class and spelling, the middleware,
the guarded resolver, and real crawls where test names resolve to loopback.

No test sends a packet beyond 127.0.0.0/8: refused addresses outside loopback are
only ever given to the pure decision function or to the middleware, which refuses
them before any connection.
"""

from __future__ import annotations

import ipaddress
import logging
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.resolver import CachingThreadedResolver
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler
from twisted.internet import defer
from twisted.internet._resolver import SimpleResolverComplexifier

from skillgraph.middlewares.ssrf import SSRFMiddleware
from skillgraph.safety.resolver import GuardedNameResolver
from skillgraph.safety.ssrf import address_class, decide, parse_allowlist, parse_ip
from tests.servers import Rule, SiteServer

HOSTILE = Path(__file__).parent / "fixtures" / "hostile"


class LoopbackDNS(CachingThreadedResolver):
    """Test DNS (``TWISTED_DNS_RESOLVER``): every ``*.test`` name resolves to 127.0.0.1."""

    def getHostByName(self, name: str, timeout: Any = ()) -> defer.Deferred[str]:  # noqa: N802
        if name.rstrip(".").endswith(".test"):
            return defer.succeed("127.0.0.1")
        return super().getHostByName(name, timeout)


# -- the decision -----------------------------------------------------------------

REFUSED = [
    ("127.0.0.1", "loopback"),
    ("127.1", "loopback"),  # short form
    ("2130706433", "loopback"),  # decimal
    ("0177.0.0.1", "loopback"),  # octal
    ("0x7f.0.0.1", "loopback"),  # hex
    ("0x7f000001", "loopback"),
    ("017700000001", "loopback"),
    ("127.0.0.1.", "loopback"),  # trailing dot
    ("LOCALHOST-IS-A-NAME-SO-SKIP", None),
    ("[::1]", "loopback"),
    ("::ffff:127.0.0.1", "loopback"),  # IPv4-mapped
    ("::ffff:7f00:1", "loopback"),
    ("2002:7f00:1::", "loopback"),  # 6to4 wrapping 127.0.0.1
    ("64:ff9b::a00:1", "private"),  # NAT64 wrapping 10.0.0.1
    ("１２７.０.０.１", "loopback"),  # full-width digits, IDNA-normalised
    ("0.0.0.0", "unspecified"),
    ("0", "unspecified"),
    ("::", "unspecified"),
    ("10.0.0.1", "private"),
    ("172.16.5.4", "private"),
    ("192.168.1.1", "private"),
    ("::ffff:192.168.1.1", "private"),
    ("198.18.0.1", "private"),
    ("fc00::1", "private"),  # unique local fc00::/7
    ("fd12:3456::1", "private"),
    ("169.254.169.254", "metadata"),
    ("fd00:ec2::254", "metadata"),
    ("100.100.100.200", "metadata"),
    ("192.0.0.192", "metadata"),
    ("169.254.1.1", "link-local"),
    ("fe80::1", "link-local"),
    ("fe80::1%eth0", "link-local"),
    ("100.64.0.1", "cgnat"),
    ("100.127.255.254", "cgnat"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("ff02::1", "multicast"),
    ("fec0::1", "site-local"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "reserved"),
]


@pytest.mark.parametrize(("host", "kind"), [c for c in REFUSED if c[1]])
def test_every_special_address_class_and_spelling_is_refused(host: str, kind: str) -> None:
    ip = parse_ip(host)
    assert ip is not None, f"{host} is an address"
    decision = decide(host, 80, [ip])
    assert not decision.allowed
    assert decision.kind == kind, decision.reason


@pytest.mark.parametrize("host", ["93.184.216.34", "8.8.8.8", "2606:4700::1", "::ffff:93.184.216.34"])
def test_public_addresses_are_allowed(host: str) -> None:
    decision = decide(host, 443, [parse_ip(host)])  # type: ignore[list-item]
    assert decision.allowed and decision.kind == "public"


def test_names_are_decided_on_their_addresses() -> None:
    assert parse_ip("docs.python.org") is None
    assert parse_ip("0x7g.1") is None, "not an inet_aton form: a name"
    assert not decide("localhost", 80, ["127.0.0.1"]).allowed
    mixed = decide("rebind.example", 80, ["93.184.216.34", "10.1.2.3"])
    assert not mixed.allowed and mixed.kind == "private", "one private answer refuses the name"
    assert not decide("nothing.example", 80, []).allowed
    assert decide("docs.example", 80, ["93.184.216.34"]).allowed


def test_allowlist_is_exact_host_and_port() -> None:
    allow = parse_allowlist(["127.0.0.1:8000", "Docs.Test.:9000", "[::1]:7000"])
    assert decide("127.0.0.1", 8000, ["127.0.0.1"], allow).allowed
    assert decide("2130706433", 8000, ["127.0.0.1"], allow).allowed, "same address, other spelling"
    assert not decide("127.0.0.1", 8001, ["127.0.0.1"], allow).allowed, "another port stays closed"
    assert decide("docs.test", 9000, ["127.0.0.1"], allow).allowed
    assert not decide("evil.test", 9000, ["127.0.0.1"], allow).allowed
    assert decide("::1", 7000, ["::1"], allow).allowed
    with pytest.raises(ValueError, match="host:port"):
        parse_allowlist(["127.0.0.1"])


def test_local_interface_addresses_are_refused() -> None:
    me = ipaddress.ip_address("93.184.216.34")
    decision = decide("me.example", 80, ["93.184.216.34"], local=frozenset({me}))
    assert not decision.allowed and decision.kind == "local-interface"


def test_address_class_of_public_unicast_is_none() -> None:
    assert address_class(ipaddress.ip_address("1.1.1.1")) is None


# -- the middleware ---------------------------------------------------------------


def _middleware(**settings: Any) -> tuple[SSRFMiddleware, Any]:
    crawler = get_crawler(Spider, settings)
    crawler.spider = Spider("t")
    return build_from_crawler(SSRFMiddleware, crawler), crawler


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:8000/", "http://0x7f.1/", "http://2130706433/", "http://[::ffff:127.0.0.1]/",
    "http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/", "http://[fe80::1]/",
    "http://10.0.0.1/", "http://100.64.1.1/", "http://127.0.0.1.:8000/",
    "file:///etc/passwd", "ftp://127.0.0.1/", "data:text/plain,hi", "s3://bucket/key",
])
def test_middleware_refuses_literals_and_other_schemes(url: str) -> None:
    mw, crawler = _middleware()
    with pytest.raises(IgnoreRequest, match="SSRF guard"):
        mw.process_request(Request(url))
    assert crawler.stats.get_value("skillgraph/ssrf/refused") == 1


def test_middleware_allowlist_names_and_switch(caplog: pytest.LogCaptureFixture) -> None:
    mw, crawler = _middleware(SKILLGRAPH_SSRF_ALLOWLIST="127.0.0.1:8000")
    assert mw.process_request(Request("http://127.0.0.1:8000/docs/")) is None
    assert mw.process_request(Request("https://docs.python.org/3/")) is None, "names wait for the resolver"
    with caplog.at_level(logging.WARNING, logger="skillgraph.middlewares.ssrf"):
        for path in ("a", "b", "c"):
            with pytest.raises(IgnoreRequest):
                mw.process_request(Request(f"http://127.0.0.1:8001/{path}", meta={"redirect_times": 1}))
    assert crawler.stats.get_value("skillgraph/ssrf/refused/loopback") == 3
    assert crawler.stats.get_value("skillgraph/ssrf/refused_redirect") == 3
    assert len([r for r in caplog.records if "SSRF guard refused" in r.message]) == 1, "logged once per host"
    with pytest.raises(NotConfigured):
        _middleware(SKILLGRAPH_SSRF_ENABLED=False)


def test_guarded_resolver_checks_every_answer() -> None:
    """A rebinding name: the first answer is public, the next is loopback; each is checked."""
    answers = iter(["93.184.216.34", "127.0.0.1"])

    class Rebinding:
        def getHostByName(self, name: str, timeout: Any = ()) -> defer.Deferred[str]:  # noqa: N802
            return defer.succeed(next(answers))

    guard = GuardedNameResolver(SimpleResolverComplexifier(Rebinding()))
    got: list[list[str]] = []

    class Receiver:
        def __init__(self) -> None:
            self.addresses: list[str] = []

        def resolutionBegan(self, resolution: Any) -> None:  # noqa: N802
            pass

        def addressResolved(self, address: Any) -> None:  # noqa: N802
            self.addresses.append(address.host)

        def resolutionComplete(self) -> None:  # noqa: N802
            got.append(self.addresses)

    guard.resolveHostName(Receiver(), "rebind.example", 80)
    guard.resolveHostName(Receiver(), "rebind.example", 80)
    assert got == [["93.184.216.34"], []], "the loopback answer never reaches the connector"
    refusal = guard.refusal("rebind.example", 80)
    assert refusal is not None and refusal.kind == "loopback"


# -- real crawls: test names resolve to loopback --------------------------------------


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The allowed mirror (docs.test:A) and a second loopback server (B) that must stay unreached."""
    other = SiteServer(tmp_path_factory.mktemp("other"))
    site = SiteServer(HOSTILE / "ssrf_site")
    site.rules["/docs/to-port.html"] = Rule(status=302, headers={"Location": f"http://127.0.0.1:{other.port}/docs/"})
    site.rules["/docs/to-name.html"] = Rule(status=302, headers={"Location": f"http://evil.test:{site.port}/docs/"})
    yield site, other
    site.stop()
    other.stop()


def _settings(site: SiteServer) -> dict[str, str]:
    return {"TWISTED_DNS_RESOLVER": "tests.test_ssrf.LoopbackDNS",
            "SKILLGRAPH_SSRF_ALLOWLIST": f"docs.test:{site.port}", "SKILLGRAPH_RENDER_ENABLED": "False"}


def test_crawl_refuses_redirects_to_loopback_outside_the_allowlist(crawl, mirror: Any) -> None:
    site, other = mirror
    result = crawl("docs", url=f"http://docs.test:{site.port}/docs/", graph="mirror", settings=_settings(site))
    assert result.returncode == 0, result.log[-3000:]
    pages = {p["url"].rsplit("/", 1)[-1] for p in result.sources["pages"]}
    assert pages == {"", "intro.html", "usage.html"}, "the allowed pages are written, the refused hops are not"
    assert other.requests == [], "the loopback port outside the allowlist is never connected to"
    hosts = {headers.get("Host") for _, _, headers in site.requests}
    assert hosts == {f"docs.test:{site.port}"}, "evil.test is refused before connecting, though it is the same server"
    stats = result.stats
    assert stats["skillgraph/ssrf/refused_redirect"] >= 2
    assert stats["skillgraph/ssrf/refused/loopback"] >= 2
    # The first refusal per host is logged (the robots.txt fetch for the new host comes first).
    assert result.log.count(f"SSRF guard refused http://127.0.0.1:{other.port}/") == 1
    assert result.log.count(f"SSRF guard refused http://evil.test:{site.port}/") == 1
    assert any(w["kind"] == "ssrf" for w in result.sources["warnings"])


def test_crawl_refuses_a_name_resolving_to_loopback(crawl, mirror: Any) -> None:
    site, _ = mirror
    before = len(site.requests)
    result = crawl("docs", url=f"http://evil.test:{site.port}/docs/", graph="evil", settings=_settings(site))
    assert result.stats["skillgraph/ssrf/refused"] >= 1
    assert result.stats["skillgraph/ssrf/refused/loopback"] >= 1
    assert result.log.count(f"SSRF guard refused http://evil.test:{site.port}/") == 1, "logged once per host"
    assert len(site.requests) == before, "nothing reached the server"
    assert not (result.graphs / "evil").exists()
    assert result.stats["skillgraph/graph/failed"] == "no pages were written"
