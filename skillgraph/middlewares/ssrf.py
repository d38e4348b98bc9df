"""SSRF guard: never fetch loopback, private, link-local, metadata... addresses.

A crawler follows URLs strangers wrote (llms.txt links, sitemaps, redirects).
Scrapy has no such guard, so this middleware adds one, in two layers:

* here, for every request and every redirect hop (``RedirectMiddleware``'s new
  requests come through again): non-HTTP schemes and literal addresses in any
  spelling are refused before anything is sent;
* in :class:`~skillgraph.safety.resolver.GuardedNameResolver`, which this
  middleware installs on the reactor: host names are checked on the addresses
  they resolve to, right before the connection to exactly those addresses.
  A refusal there surfaces as a DNS error, turned back into ``IgnoreRequest``
  with the reason in :meth:`process_exception`.

``SKILLGRAPH_SSRF_ALLOWLIST`` (``host:port`` entries) opens exact mirrors and
test servers; ``SKILLGRAPH_SSRF_ENABLED = False`` switches the guard off. Each
refusal is counted (``skillgraph/ssrf/refused/<class>``), logged once per host
and reported as a build warning. Proxies named by request meta are trusted
(they are the operator's); through an HTTP proxy or ``socks5h://`` the proxy
resolves names, so only literal addresses are checked for those requests.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from scrapy import signals
from scrapy.exceptions import CannotResolveHostError, IgnoreRequest, NotConfigured
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.url import add_http_if_no_scheme

from skillgraph.safety.resolver import GuardedNameResolver
from skillgraph.safety.ssrf import Decision, canonical_host, decide, parse_allowlist, parse_ip
from skillgraph.signals import build_warning

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

_SCHEMES = ("http", "https")
_DEFAULT_PORTS = {"http": 80, "https": 443}
_PROXY_PORTS = {"http": 80, "https": 443}  # Scrapy's defaults; SOCKS proxies default to 1080


class SSRFMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.getbool("SKILLGRAPH_SSRF_ENABLED", True):
            raise NotConfigured("SKILLGRAPH_SSRF_ENABLED is False")
        self.crawler = crawler
        try:
            self.allowlist = parse_allowlist(settings.getlist("SKILLGRAPH_SSRF_ALLOWLIST"))
        except ValueError as exc:
            raise ValueError(f"SKILLGRAPH_SSRF_ALLOWLIST: {exc}") from exc
        self.guard: GuardedNameResolver | None = None
        self.uses_reactor = settings.getbool("TWISTED_REACTOR_ENABLED", True)
        self._logged: set[tuple[str, int]] = set()
        crawler.signals.connect(self.engine_started, signal=signals.engine_started)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def engine_started(self) -> None:
        self._ensure_guard()

    def _ensure_guard(self) -> None:
        """Install the guarded resolver, again if ``CrawlerProcess`` installed its own after us."""
        if not self.uses_reactor:
            return
        from twisted.internet import reactor

        if self.guard is None or reactor.nameResolver is not self.guard:
            self.guard = GuardedNameResolver.install(reactor, self.allowlist)
            logger.debug("SSRF guard installed on the reactor's resolver (%d allowlist entries)", len(self.allowlist))

    def process_request(self, request: Request) -> None:
        self._ensure_guard()
        parts = urlparse_cached(request)
        if parts.scheme not in _SCHEMES:
            self._refuse(request, Decision(False, f"the {parts.scheme}: scheme is not fetched", "scheme"))
        proxy = request.meta.get("proxy")
        if proxy and self.guard is not None:
            proxy_parts = urlsplit(add_http_if_no_scheme(proxy))
            if proxy_parts.hostname:
                port = proxy_parts.port or _PROXY_PORTS.get(proxy_parts.scheme, 1080)
                self.guard.trust_proxy(proxy_parts.hostname, port)
        host, port = self._host_port(request)
        ip = parse_ip(host)
        if ip is not None:
            decision = decide(host, port, [ip], self.allowlist, self.guard.local if self.guard else frozenset())
            if not decision.allowed:
                self._refuse(request, decision)

    def process_exception(self, request: Request, exception: Exception) -> None:
        if self.guard is None or not isinstance(exception, CannotResolveHostError):
            return
        decision = self.guard.refusal(*self._host_port(request))
        if decision is not None:
            self._refuse(request, decision)

    @staticmethod
    def _host_port(request: Request) -> tuple[str, int]:
        parts = urlparse_cached(request)
        return parts.hostname or "", parts.port or _DEFAULT_PORTS.get(parts.scheme, 0)

    def _refuse(self, request: Request, decision: Decision) -> None:
        stats = self.crawler.stats
        assert stats is not None
        stats.inc_value("skillgraph/ssrf/refused")
        stats.inc_value(f"skillgraph/ssrf/refused/{decision.kind}")
        redirected = bool(request.meta.get("redirect_times"))
        if redirected:
            stats.inc_value("skillgraph/ssrf/refused_redirect")
        host, port = self._host_port(request)
        key = (canonical_host(host), port)
        if key not in self._logged:
            self._logged.add(key)
            via = " (redirect)" if redirected else ""
            logger.warning("SSRF guard refused %s%s: %s", request.url, via, decision.reason)
            self.crawler.signals.send_catch_log(
                build_warning, kind="ssrf", url=request.url, message=f"refused: {decision.reason}"
            )
        raise IgnoreRequest(f"SSRF guard: {decision.reason}")
