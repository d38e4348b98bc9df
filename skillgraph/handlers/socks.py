"""SOCKS5 proxies (``socks5://``, ``socks5h://``) for Scrapy's HTTP/1.1 download handler.

Scrapy speaks HTTP proxies only. The choices were: Scrapy 2.19's private,
experimental ``httpx`` handler (a second HTTP stack, its own DNS outside the
SSRF guard, ``socks5://`` resolved remotely like ``socks5h://``), the Twisted
SOCKS endpoints of ``txsocksx`` (unmaintained since 2015), or the asyncio
``python-socks`` (a socket adopted into the reactor, around the pool). This
module keeps Scrapy's own handler, pool, TLS, size and timeout logic and adds
only a client endpoint: the SOCKS5 messages come from ``socksio`` (sans-I/O, the
implementation behind ``httpx[socks]``), the I/O is Twisted's. For ``socks5://``
the target name is resolved here, through the reactor's resolver, so the SSRF
guard checks the address; ``socks5h://`` leaves resolution to the proxy.

Credentials come from the proxy URL; Scrapy's ``HttpProxyMiddleware`` moves them
into a ``Proxy-Authorization`` header, which is read here (RFC 1929
username/password) and never sent to the target. Requests for the browser
(``meta["playwright"]``) and requests without a SOCKS proxy go to the parent
handler unchanged, so the mixin composes with scrapy-playwright's handler
(:func:`configure` puts it in front of whatever HTTP/1.1 subclass serves http(s)).
"""

from __future__ import annotations

import base64
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.misc import load_object
from twisted.internet.endpoints import HostnameEndpoint, wrapClientTLS
from twisted.internet.error import ConnectError, DNSLookupError
from twisted.web.client import Agent
from zope.interface import implementer

# HTTP11DownloadHandler through compat: its first import loads Scrapy's TLS modules without the cost of their
# inspect.stack() calls (skillgraph.compat.scrapy._InspectWithoutSource).
from skillgraph.compat.scrapy import HTTP11DownloadHandler, ScrapyAgent, scrapy_agent_options, wrap_twisted_exceptions
from skillgraph.compat.twisted import PoolKeyAgent
from skillgraph.handlers.socks_protocol import SocksHandshakeFactory, first_address

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.http import Response
    from scrapy.settings import BaseSettings
    from twisted.internet.defer import Deferred
    from twisted.internet.interfaces import IProtocol, IProtocolFactory
    from twisted.web.client import URI
    from twisted.web.iweb import IBodyProducer

from twisted.internet.interfaces import IStreamClientEndpoint
from twisted.web.iweb import IAgentEndpointFactory

SOCKS_SCHEMES = ("socks5", "socks5h")


class SocksError(ConnectError):
    """The SOCKS5 proxy answered, but would not (or could not) open the tunnel."""


@dataclass(frozen=True)
class SocksProxy:
    host: str
    port: int
    remote_dns: bool  # socks5h: the proxy resolves the target name
    username: bytes | None = None
    password: bytes | None = None

    @classmethod
    def from_request(cls, request: Request) -> SocksProxy | None:
        proxy = request.meta.get("proxy")
        if not proxy:
            return None
        parts = urlsplit(proxy)
        if parts.scheme not in SOCKS_SCHEMES or not parts.hostname:
            return None
        user, password = parts.username, parts.password
        header = request.headers.get(b"Proxy-Authorization")
        if header and header.startswith(b"Basic "):
            user, _, password = base64.b64decode(header[6:]).decode("latin-1").partition(":")
        return cls(
            parts.hostname,
            parts.port or 1080,
            parts.scheme == "socks5h",
            unquote(user).encode() if user else None,
            unquote(password or "").encode() if user else None,
        )

    @property
    def key(self) -> tuple[Any, ...]:
        return ("socks5h" if self.remote_dns else "socks5", self.host, self.port, self.username)


@implementer(IStreamClientEndpoint)
class SocksClientEndpoint:
    """Connect to ``host:port`` through a SOCKS5 proxy (CONNECT command)."""

    def __init__(self, reactor: Any, proxy: SocksProxy, host: str, port: int, timeout: float,
                 bind_address: Any = None) -> None:
        self.reactor = reactor
        self.proxy = proxy
        self.host = host
        self.port = port
        self.timeout = timeout
        self.bind_address = bind_address

    def connect(self, protocolFactory: IProtocolFactory) -> Deferred[IProtocol]:  # noqa: N803
        if self.proxy.remote_dns:
            from twisted.internet.defer import succeed

            target: Deferred[str | None] = succeed(self.host)
        else:  # resolved here, by the reactor's (guarded) resolver, for this port
            target = first_address(self.reactor, self.host, self.port)

        def tunnel(address: str | None) -> Deferred[IProtocol]:
            if address is None:
                raise DNSLookupError(f"no address for {self.host}")
            factory = SocksHandshakeFactory((address, self.port), self.proxy.username, self.proxy.password,
                                            protocolFactory, SocksError)
            endpoint = HostnameEndpoint(self.reactor, self.proxy.host, self.proxy.port, self.timeout,
                                        self.bind_address)
            connecting = endpoint.connect(factory)  # type: ignore[arg-type]
            factory.connecting = connecting
            connecting.addErrback(factory.failed)
            return factory.ready

        return target.addCallback(tunnel)


@implementer(IAgentEndpointFactory)
class _SocksEndpointFactory:
    def __init__(self, reactor: Any, proxy: SocksProxy, policy: Any, timeout: float,
                 bind_address: Any) -> None:
        self.reactor, self.proxy, self.policy = reactor, proxy, policy
        self.timeout, self.bind_address = timeout, bind_address

    def endpointForURI(self, uri: URI) -> Any:  # noqa: N802
        endpoint = SocksClientEndpoint(self.reactor, self.proxy, uri.host.decode("ascii"), uri.port, self.timeout,
                                       self.bind_address)
        if uri.scheme == b"https":
            return wrapClientTLS(self.policy.creatorForNetloc(uri.host, uri.port), endpoint)  # type: ignore[arg-type]
        return endpoint


class _SocksAgent(PoolKeyAgent):
    """An Agent whose pooled connections are keyed by the proxy too, and never leak its credentials."""

    proxy: SocksProxy

    def request(self, method: bytes, uri: bytes, headers: Any = None,
                bodyProducer: IBodyProducer | None = None) -> Deferred[Any]:  # noqa: N803
        if headers is not None:
            headers.removeHeader(b"Proxy-Authorization")
        return super().request(method, uri, headers, bodyProducer)

    def pool_key(self, key: tuple[Any, ...]) -> tuple[Any, ...]:
        return (*key, *self.proxy.key)


class _SocksScrapyAgent(ScrapyAgent):
    def __init__(self, *, proxy: SocksProxy, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._socks = proxy

    def twisted_agent(self, request: Request, timeout: float) -> Agent:
        from twisted.internet import reactor

        bind = request.meta.get("bindaddress") or self.bind_address
        factory = _SocksEndpointFactory(reactor, self._socks, self.context_factory, timeout, bind)
        agent = _SocksAgent.usingEndpointFactory(reactor, factory, pool=self.pool)
        agent.proxy = self._socks
        return agent


class SocksDownloadHandlerMixin:
    """Put before an ``HTTP11DownloadHandler`` subclass: SOCKS5-proxied requests are handled here."""

    async def download_request(self, request: Request) -> Response:
        proxy = SocksProxy.from_request(request)
        if proxy is None or request.meta.get("playwright"):
            return await super().download_request(request)  # type: ignore[misc]
        handler: HTTP11DownloadHandler = self  # type: ignore[assignment]
        agent = _SocksScrapyAgent(proxy=proxy, **scrapy_agent_options(handler))
        with wrap_twisted_exceptions():
            return await maybe_deferred_to_future(agent.download_request(request))


class SocksDownloadHandler(SocksDownloadHandlerMixin, HTTP11DownloadHandler):
    """Scrapy's HTTP/1.1 handler plus ``socks5://`` and ``socks5h://`` proxies."""



@functools.cache
def socks_capable(handler: type[HTTP11DownloadHandler]) -> type[HTTP11DownloadHandler]:
    """``handler`` with :class:`SocksDownloadHandlerMixin` first in its MRO (one class per handler)."""
    if handler is HTTP11DownloadHandler:
        return SocksDownloadHandler
    doc = f"{handler.__qualname__} plus socks5:// and socks5h:// proxies (skillgraph.handlers.socks)."
    namespace = {"__module__": __name__, "__doc__": doc}
    return type(f"Socks{handler.__name__}", (SocksDownloadHandlerMixin, handler), namespace)


def configure(settings: BaseSettings) -> None:
    """Make the http/https handlers SOCKS-capable; run after anything that picks them (the render tier).

    Any subclass of Scrapy's HTTP/1.1 handler qualifies (scrapy-playwright's handler
    is one: it hands non-browser requests to its parent), so the render tier and
    SOCKS proxies compose without either knowing the other.
    """
    handlers = settings["DOWNLOAD_HANDLERS"]
    base = settings.getdict("DOWNLOAD_HANDLERS_BASE")
    for scheme in ("http", "https"):
        current = handlers.get(scheme, base.get(scheme))
        if current is None:
            continue
        handler = load_object(current)
        if isinstance(handler, type) and issubclass(handler, HTTP11DownloadHandler) and not issubclass(
            handler, SocksDownloadHandlerMixin
        ):
            handlers.set(scheme, socks_capable(handler), handlers.getpriority(scheme) or "addon")
