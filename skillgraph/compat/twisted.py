"""Twisted internals: the connection-pool key of ``twisted.web.client.Agent``.

Checked against Twisted 26.10.0 (:data:`skillgraph.compat.CHECKED_VERSIONS`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from twisted.web.client import Agent

if TYPE_CHECKING:
    from twisted.internet.defer import Deferred

__all__ = ["PoolKeyAgent"]


class PoolKeyAgent(Agent):
    """An ``Agent`` whose connection-pool key a subclass extends, through :meth:`pool_key`.

    Wraps the private ``_AgentBase._requestWithEndpoint(key, endpoint, method,
    parsedURI, headers, bodyProducer, requestPath)``: ``key`` (scheme, host,
    port) picks the pooled connection a request may reuse. Scrapy's own
    ``_BindAddressAgent`` extends it the same way; the SOCKS agent adds its
    proxy, so a connection tunnelled through one proxy (or with one user) is
    never reused for another. Checked against Twisted 26.10.0.
    """

    def pool_key(self, key: tuple[Any, ...]) -> tuple[Any, ...]:
        """The pool key of a request whose default key is ``key``. Checked against Twisted 26.10.0."""
        return key

    def _requestWithEndpoint(self, key: Any, *args: Any, **kwargs: Any) -> Deferred[Any]:  # noqa: N802
        return super()._requestWithEndpoint(self.pool_key(key), *args, **kwargs)
