"""The SOCKS5 client handshake as a Twisted protocol, on ``socksio``'s sans-I/O messages.

``socksio`` packs and parses the messages and tracks the protocol state; it does
not frame them, so this protocol buffers until a whole reply is in (2 bytes for
the method and password replies, 10/22/7+n bytes for the CONNECT reply by
address type). Once the tunnel is open the wrapped protocol (HTTP, or TLS then
HTTP) takes over the same transport and receives every later byte.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from socksio import socks5
from twisted.internet.defer import Deferred
from twisted.internet.error import ConnectionLost
from twisted.internet.interfaces import IResolutionReceiver
from twisted.internet.protocol import Factory, Protocol
from twisted.python.failure import Failure
from zope.interface import implementer

if TYPE_CHECKING:
    from twisted.internet.interfaces import IAddress

_AUTH, _PASSWORD, _CONNECT = "auth", "password", "connect"
_LOST = Failure(ConnectionLost())
_ADDRESS_SIZES = {1: 4, 4: 16}


def first_address(reactor: Any, host: str, port: int) -> Deferred[str | None]:
    """The first address ``reactor.nameResolver`` gives for ``host:port`` (None if it gives none)."""
    result: Deferred[str | None] = Deferred()
    found: list[str] = []

    @implementer(IResolutionReceiver)
    class Receiver:
        def resolutionBegan(self, resolution: Any) -> None:  # noqa: N802
            pass

        def addressResolved(self, address: IAddress) -> None:  # noqa: N802
            found.append(str(getattr(address, "host", "")))

        def resolutionComplete(self) -> None:  # noqa: N802
            result.callback(found[0] if found else None)

    reactor.nameResolver.resolveHostName(Receiver(), host, port)
    return result


class _SocksHandshake(Protocol):
    factory: SocksHandshakeFactory

    def __init__(self) -> None:
        self.connection = socks5.SOCKS5Connection()
        self.buffer = b""
        self.stage = _AUTH
        self.inner: Any = None  # the wrapped protocol once the tunnel is open

    @property
    def tx(self) -> Any:
        """The TCP transport to the proxy (zope-typed as ``ITransport``, opaque to mypy)."""
        return self.transport

    def connectionMade(self) -> None:  # noqa: N802
        methods = [socks5.SOCKS5AuthMethod.NO_AUTH_REQUIRED]
        if self.factory.username is not None:
            methods.append(socks5.SOCKS5AuthMethod.USERNAME_PASSWORD)
        self._send(socks5.SOCKS5AuthMethodsRequest(methods))

    def _send(self, message: Any) -> None:
        self.connection.send(message)
        self.tx.write(self.connection.data_to_send())

    def dataReceived(self, data: bytes) -> None:  # noqa: N802
        if self.inner is not None:
            self.inner.dataReceived(data)
            return
        self.buffer += data
        try:
            self._advance()
        except Exception as exc:  # a malformed or refusing reply: the tunnel fails
            self.factory.fail(exc)
            self.tx.loseConnection()

    def _reply_size(self) -> int | None:
        if self.stage in (_AUTH, _PASSWORD):
            return 2
        if len(self.buffer) < 5:
            return None
        atype = self.buffer[3]
        return 6 + (_ADDRESS_SIZES.get(atype) or 1 + self.buffer[4])

    def _advance(self) -> None:
        while self.inner is None:
            size = self._reply_size()
            if size is None or len(self.buffer) < size:
                return
            message, self.buffer = self.buffer[:size], self.buffer[size:]
            reply = self.connection.receive_data(message)
            if isinstance(reply, socks5.SOCKS5AuthReply):
                if reply.method == socks5.SOCKS5AuthMethod.USERNAME_PASSWORD and self.factory.username is not None:
                    self.stage = _PASSWORD
                    self._send(socks5.SOCKS5UsernamePasswordRequest(self.factory.username,
                                                                     self.factory.password or b""))
                    continue
                if reply.method != socks5.SOCKS5AuthMethod.NO_AUTH_REQUIRED:
                    raise self.factory.error(f"SOCKS5 proxy accepts none of our auth methods ({reply.method.name})")
                self._connect()
            elif isinstance(reply, socks5.SOCKS5UsernamePasswordReply):
                if not reply.success:
                    raise self.factory.error("SOCKS5 proxy refused the username/password")
                self._connect()
            else:
                assert isinstance(reply, socks5.SOCKS5Reply)
                if reply.reply_code != socks5.SOCKS5ReplyCode.SUCCEEDED:
                    host, port = self.factory.target
                    raise self.factory.error(f"SOCKS5 proxy could not connect to {host}:{port}: "
                                             f"{reply.reply_code.name}")
                self._open()

    def _connect(self) -> None:
        self.stage = _CONNECT
        self._send(socks5.SOCKS5CommandRequest.from_address(socks5.SOCKS5Command.CONNECT, self.factory.target))

    def _open(self) -> None:
        inner = self.factory.wrapped.buildProtocol(self.tx.getPeer())
        if inner is None:
            raise self.factory.error("the wrapped factory built no protocol")
        self.inner = inner
        inner.makeConnection(self.tx)
        rest, self.buffer = self.buffer, b""
        self.factory.opened(inner)
        if rest:
            inner.dataReceived(rest)

    def connectionLost(self, reason: Failure = _LOST) -> None:  # noqa: N802
        if self.inner is not None:
            self.inner.connectionLost(reason)
        else:
            self.factory.fail(self.factory.error(f"SOCKS5 proxy closed the connection: {reason.getErrorMessage()}"))


class SocksHandshakeFactory(Factory):
    """Builds the handshake; :attr:`ready` fires with the wrapped protocol once the tunnel is open."""

    protocol = _SocksHandshake  # type: ignore[assignment]

    def __init__(self, target: tuple[str, int], username: bytes | None, password: bytes | None,
                 wrapped: Any, error: type[Exception]) -> None:
        self.target = target
        self.username = username
        self.password = password
        self.wrapped = wrapped
        self.error = error
        self.connected: Any = None  # the handshake protocol, whose transport is aborted on cancel
        self.connecting: Deferred[Any] | None = None  # the TCP connection to the proxy, cancelled before that
        self.ready: Deferred[Any] = Deferred(canceller=self._cancel)

    def buildProtocol(self, addr: IAddress | None) -> Any:  # noqa: N802
        protocol = super().buildProtocol(addr)
        self.connected = protocol
        return protocol

    def _cancel(self, _: Deferred[Any]) -> None:
        if self.connected is not None and self.connected.transport is not None:
            self.connected.transport.abortConnection()
        elif self.connecting is not None and not self.connecting.called:
            self.connecting.cancel()

    def opened(self, inner: Any) -> None:
        if not self.ready.called:
            self.ready.callback(inner)

    def fail(self, exc: Exception) -> None:
        if not self.ready.called:
            self.ready.errback(exc)

    def failed(self, failure: Failure) -> None:
        """The TCP connection to the proxy itself failed (refused, timed out, unresolvable)."""
        if not self.ready.called:
            self.ready.errback(failure)
