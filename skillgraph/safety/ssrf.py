"""The SSRF decision: may skillgraph connect to ``host:port`` at these addresses?

A pure function (no I/O), so it is unit-tested over every address class and
spelling. Two callers apply it: :class:`skillgraph.middlewares.ssrf.SSRFMiddleware`
checks literal addresses early (and every redirect hop), and
:class:`skillgraph.safety.resolver.GuardedNameResolver` checks the addresses a
name resolves to, once, right before the connection is made to exactly those
addresses (so DNS rebinding cannot slip between the check and the connect).

``ipaddress`` knows the special-purpose registries; this module adds what it
leaves out: the legacy IPv4 spellings ``inet_aton`` accepts (decimal ``2130706433``,
octal ``0177.0.0.1``, hex ``0x7f.1``, short ``127.1``), IPv4 embedded in IPv6
(``::ffff:`` mapped, 6to4, NAT64), cloud metadata endpoints that ``is_global``
calls public, multicast (also "global" for ``ipaddress``), and host normalisation
(brackets, trailing dots, case, IDNA).
"""

from __future__ import annotations

import functools
import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

#: Cloud metadata endpoints, refused even where ``ipaddress`` calls them global.
METADATA = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "100.100.100.200", "192.0.0.192", "fd00:ec2::254")
)
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# inet_aton's forms: 1 to 4 parts, each decimal, octal (leading 0) or hex (0x).
_LEGACY_V4 = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)(?:\.(?:0x[0-9a-f]*|[0-9]+)){0,3}")


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str
    kind: str  # "allowlisted", "public", or the refused class ("loopback", "private"...)


def normalize_host(host: str) -> str:
    """Lower-case ASCII form: no brackets, no trailing dots, IDNA-encoded."""
    host = host.strip().strip("[]").rstrip(".").lower()
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host


@functools.lru_cache(maxsize=4096)
def parse_ip(host: str) -> IPAddress | None:
    """The address a host spelling stands for, or None when it is a name."""
    host = normalize_host(host)
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        pass
    if _LEGACY_V4.fullmatch(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


@functools.lru_cache(maxsize=4096)
def address_class(ip: IPAddress) -> str | None:
    """The special-purpose class an address belongs to, or None for a public unicast one."""
    if isinstance(ip, ipaddress.IPv6Address) and (inner := _embedded_v4(ip)) is not None:
        return address_class(inner)
    if ip in METADATA:
        return "metadata"
    for name, hit in (
        ("unspecified", ip.is_unspecified),
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("cgnat", isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT),
        ("site-local", isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local),
        ("private", ip.is_private and not ip.is_reserved),
        ("reserved", ip.is_reserved),
    ):
        if hit:
            return name
    return None if ip.is_global else "non-global"


def parse_allowlist(entries: Iterable[str]) -> frozenset[tuple[str, int]]:
    """``host:port`` entries (``[v6]:port`` for IPv6) as normalised pairs; bad entries raise ValueError."""
    pairs = set()
    for entry in entries:
        if not entry.strip():
            continue
        host, sep, port = entry.strip().rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"SSRF allowlist entry {entry!r} is not host:port")
        pairs.add((canonical_host(host), int(port)))
    return frozenset(pairs)


def canonical_host(host: str) -> str:
    """One spelling per host: the compressed address for IP literals, else :func:`normalize_host`."""
    ip = parse_ip(host)
    return str(ip) if ip is not None else normalize_host(host)


def decide(
    host: str,
    port: int,
    addresses: Iterable[str | IPAddress],
    allowlist: frozenset[tuple[str, int]] = frozenset(),
    local: frozenset[IPAddress] = frozenset(),
) -> Decision:
    """Allow ``host:port`` at ``addresses`` only if it is allowlisted or every address is public.

    ``local`` holds the machine's own interface addresses (the container host's
    view of itself), refused like loopback.
    """
    if (canonical_host(host), port) in allowlist:
        return Decision(True, "allowlisted", "allowlisted")
    checked = 0
    for address in addresses:
        ip = address if not isinstance(address, str) else parse_ip(address)
        if ip is None:
            return Decision(False, f"{address} is not an address", "invalid")
        checked += 1
        kind = address_class(ip) or ("local-interface" if ip in local else None)
        if kind is not None:
            return Decision(False, f"{host} resolves to {ip}, which is {kind}", kind)
    if not checked:
        return Decision(False, f"{host} has no address", "unresolved")
    return Decision(True, "public", "public")
