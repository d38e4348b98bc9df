"""The guarded resolver: every connection's addresses pass the SSRF decision, once.

Twisted's ``HostnameEndpoint`` (which Scrapy's HTTP/1.1 and HTTP/2 agents use)
resolves every host, IP literals included, through ``reactor.nameResolver``
with the port, then connects to exactly the addresses it was handed. Wrapping
that resolver is therefore the one place where "resolve once, check what is
actually connected to" holds: an address refused here is never connected to,
and DNS rebinding cannot answer differently between check and connect.

It wraps whatever resolver is installed (Scrapy's caching resolver, or a
test resolver set with ``TWISTED_DNS_RESOLVER``), so caching and timeouts stay
Scrapy's. The resolver is per reactor: the SSRF middleware installs it when the
engine starts (after ``CrawlerProcess`` has installed its own) and re-installs
it if something replaced it. Refusals are recorded here and reported by the
middleware (which has the crawler's stats and logs).
"""

from __future__ import annotations

import logging
import socket
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from twisted.internet.interfaces import IHostnameResolver, IResolutionReceiver
from zope.interface import implementer

from skillgraph.safety.ssrf import Decision, IPAddress, canonical_host, decide, parse_ip

if TYPE_CHECKING:
    from collections.abc import Sequence

    from twisted.internet.interfaces import IAddress, IHostResolution

logger = logging.getLogger(__name__)

_MAX_REFUSALS = 1024


def local_addresses() -> frozenset[IPAddress]:
    """This machine's own addresses (as the network sees the container host)."""
    found = set()
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None, proto=socket.IPPROTO_TCP):
            ip = parse_ip(str(info[4][0]))
            if ip is not None:
                found.add(ip)
    except OSError:
        logger.debug("Could not list the local addresses", exc_info=True)
    return frozenset(found)


@implementer(IHostnameResolver)
class GuardedNameResolver:
    """An ``IHostnameResolver`` that hands on only addresses the SSRF decision allows."""

    def __init__(self, upstream: IHostnameResolver, local: frozenset[IPAddress] = frozenset()) -> None:
        self.upstream: Any = upstream  # zope interfaces are opaque to mypy
        self.local = local
        self.allowlist: frozenset[tuple[str, int]] = frozenset()
        self.proxies: frozenset[tuple[str, int]] = frozenset()
        self.refusals: OrderedDict[tuple[str, int], Decision] = OrderedDict()

    @classmethod
    def install(cls, reactor: Any, allowlist: frozenset[tuple[str, int]]) -> GuardedNameResolver:
        """Wrap the reactor's resolver (once); later crawlers add their allowlist entries."""
        current = reactor.nameResolver
        if isinstance(current, cls):
            guard = current
        else:
            guard = cls(current, local_addresses())
            reactor.installNameResolver(guard)
        guard.allowlist |= allowlist
        return guard

    def trust_proxy(self, host: str, port: int) -> None:
        """A configured proxy is the operator's choice: connections to it are allowed."""
        pair = (canonical_host(host), port)
        if pair not in self.proxies:
            self.proxies |= {pair}

    def decide(self, host: str, port: int, addresses: list[str]) -> Decision:
        canon = canonical_host(host)
        if (canon, port) in self.proxies or (port == 0 and any(h == canon for h, _ in self.proxies)):
            return Decision(True, "configured proxy", "proxy")
        return decide(host, port, addresses, self.allowlist, self.local)

    def refusal(self, host: str, port: int) -> Decision | None:
        return self.refusals.get((canonical_host(host), port))

    def _refused(self, host: str, port: int, decision: Decision) -> None:
        self.refusals[(canonical_host(host), port)] = decision
        while len(self.refusals) > _MAX_REFUSALS:
            self.refusals.popitem(last=False)

    def resolveHostName(  # noqa: N802 (Twisted's interface)
        self,
        resolutionReceiver: IResolutionReceiver,  # noqa: N803
        hostName: str,  # noqa: N803
        portNumber: int = 0,  # noqa: N803
        addressTypes: Sequence[type[IAddress]] | None = None,  # noqa: N803
        transportSemantics: str = "TCP",  # noqa: N803
    ) -> IHostResolution:
        checked = _CheckingReceiver(self, resolutionReceiver, hostName, portNumber)
        return self.upstream.resolveHostName(checked, hostName, portNumber, addressTypes, transportSemantics)


@implementer(IResolutionReceiver)
class _CheckingReceiver:
    """Holds the addresses until resolution completes, then passes on all of them or none."""

    def __init__(self, guard: GuardedNameResolver, receiver: IResolutionReceiver, host: str, port: int) -> None:
        self.guard = guard
        self.receiver: Any = receiver
        self.host = host
        self.port = port
        self.addresses: list[IAddress] = []

    def resolutionBegan(self, resolution: IHostResolution) -> None:  # noqa: N802
        self.receiver.resolutionBegan(resolution)

    def addressResolved(self, address: IAddress) -> None:  # noqa: N802
        self.addresses.append(address)

    def resolutionComplete(self) -> None:  # noqa: N802
        if self.addresses:
            hosts = [str(getattr(a, "host", "")) for a in self.addresses]
            decision = self.guard.decide(self.host, self.port, hosts)
            if decision.allowed:
                for address in self.addresses:
                    self.receiver.addressResolved(address)
            else:
                self.guard._refused(self.host, self.port, decision)
        self.receiver.resolutionComplete()
