"""Which addresses a webhook may reach: the guard against server-side request forgery.

Any user can name a webhook URL, and the worker POSTs to it from inside the operator's network,
so a URL must not lead to loopback, private, link-local, multicast, reserved or unspecified
addresses (the database, Redis, a cloud's metadata service at 169.254.169.254). The rule, checked
when preferences are saved and again before every delivery:

- A host the operator's allow-list (``TIDINGS_WEBHOOK_ALLOW``: host names, addresses, networks)
  names — by name, or an address literal inside a listed network — or whose every address lies in
  a listed network is *allowed*: ``http`` or ``https``, any address.
- Any other host must use ``https``, and every address it resolves to must be public.

Host names are resolved by the system resolver, which also reads the numeric forms a URL parser
leaves alone (``0x7f000001``, ``2130706433``, ``127.1``), and addresses that carry an IPv4
address inside IPv6 (``::ffff:127.0.0.1``, 6to4, NAT64) are judged by that IPv4 address. The
delivery connects to an address this check returned (``channels/pinned.py``), so a DNS answer
that changes between the check and the connection (rebinding) cannot redirect it.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache

import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], list[str]]

_HOSTNAME = re.compile(r"(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,62})(\.[a-z0-9_]([a-z0-9_-]{0,62}))*")
_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"),)
_LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")


class UnsafeUrl(ValueError):
    """The URL is refused: malformed, not https, or leading to an address that is not public."""


class Unresolvable(ValueError):
    """The host has no address now (a DNS failure): worth trying again later."""


@dataclass(frozen=True)
class AllowList:
    """The operator's exceptions: host names (exact, case-insensitive) and networks."""

    names: frozenset[str] = frozenset()
    networks: tuple[Network, ...] = ()

    @classmethod
    def parse(cls, entries: Iterable[str]) -> AllowList:
        """Read ``TIDINGS_WEBHOOK_ALLOW`` entries; a ValueError names a bad one."""
        names: set[str] = set()
        networks: list[Network] = []
        for entry in entries:
            text = entry.strip().lower()
            if not text:
                continue
            try:
                networks.append(ipaddress.ip_network(text.strip("[]"), strict=False))
                continue
            except ValueError:
                pass
            name = text.rstrip(".")
            if not _HOSTNAME.fullmatch(name):
                raise ValueError(f"not a host name, address or network: {entry!r}")
            names.add(name)
        return cls(frozenset(names), tuple(networks))

    def covers(self, address: IPAddress) -> bool:
        """Whether a listed network holds the address (an IPv4-mapped one by its IPv4 form)."""
        plain = _unmapped(address)
        return any(plain in network for network in self.networks)

    def names_host(self, host: str) -> bool:
        """Whether the list names this host: by name, or an address literal it covers."""
        if host.rstrip(".") in self.names:
            return True
        address = _literal(host)
        return address is not None and self.covers(address)


@lru_cache(maxsize=16)
def allow_list(entries: tuple[str, ...]) -> AllowList:
    """:meth:`AllowList.parse`, kept for the entries of one configuration."""
    return AllowList.parse(entries)


@dataclass(frozen=True)
class Target:
    """A checked URL: where to connect (``addresses``, in the resolver's order) and what to
    say there (``url``, whose host goes into the Host header and TLS SNI)."""

    url: httpx.URL
    host: str
    port: int
    addresses: tuple[str, ...]


def endpoint_of(url: str) -> str:
    """The host a URL's deliveries count against (lower-case, IDNA), or the URL if it has none."""
    try:
        return httpx.URL(url).raw_host.decode("ascii").lower().rstrip(".") or url[:255]
    except (httpx.InvalidURL, UnicodeDecodeError):
        return url[:255]


def forbidden(address: IPAddress) -> str | None:
    """Why a webhook may not reach this address, or None if it is public."""
    if address.is_unspecified:
        return "unspecified"
    if address.is_loopback:
        return "loopback"
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            reason = forbidden(embedded)
            return f"{reason} (as {embedded})" if reason else None
        if address in _LOCAL_NAT64 or address.is_site_local:
            return "private"
    if address.is_link_local:
        return "link-local"
    if address.is_multicast:
        return "multicast"
    if address.is_private:
        return "private"
    if address.is_reserved:
        return "reserved"
    if not address.is_global:
        return "non-public"
    return None


def system_resolver(host: str, port: int) -> list[str]:
    """The host's addresses from the system resolver, in its order, without repeats."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise Unresolvable(f"{host} does not resolve: {exc}") from None
    addresses: list[str] = []
    for info in infos:
        address = str(info[4][0])
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise Unresolvable(f"{host} has no address")
    return addresses


def check(url: str, allow: AllowList, *, resolver: Resolver = system_resolver,
          unresolved_ok: bool = False) -> Target:
    """Resolve ``url``'s host and apply the rule of this module; raise :class:`UnsafeUrl` or
    :class:`Unresolvable`. ``unresolved_ok`` (saving preferences) accepts a host that does
    not resolve now, provided it would need none of the allow-list: delivery checks again."""
    parsed, host, port = _parse(url)
    named = allow.names_host(host)
    try:
        found = resolver(host, port)
    except Unresolvable:
        if not unresolved_ok:
            raise
        if parsed.scheme != "https" and not named:
            raise UnsafeUrl("webhooks must use https (unless the operator's allow-list names "
                            "the host)") from None
        return Target(parsed, host, port, ())
    addresses = [_address(a) for a in found]
    if not (named or all(allow.covers(a) for a in addresses)):
        for address in addresses:
            reason = forbidden(address)
            if reason:
                article = "an" if reason[0] in "aeiou" else "a"
                raise UnsafeUrl(f"{host} leads to {address}, {article} {reason} address; "
                                "webhooks may only reach public addresses")
        if parsed.scheme != "https":
            raise UnsafeUrl("webhooks must use https (unless the operator's allow-list names "
                            "the host)")
    return Target(parsed, host, port, tuple(str(a) for a in addresses))


def _parse(url: str) -> tuple[httpx.URL, str, int]:
    try:
        parsed = httpx.URL(url)
        host = parsed.raw_host.decode("ascii").lower()
    except (httpx.InvalidURL, UnicodeError, TypeError) as exc:
        raise UnsafeUrl(f"not a valid URL: {exc}") from None
    if parsed.scheme not in ("http", "https"):
        raise UnsafeUrl("a webhook URL starts with https://")
    if not host:
        raise UnsafeUrl("a webhook URL names a host")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    return parsed, host, port


def _address(text: str) -> IPAddress:
    return ipaddress.ip_address(text.split("%", 1)[0])  # a scope id names a link-local zone


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def _unmapped(address: IPAddress) -> IPAddress:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address leads to: mapped, 6to4, NAT64, IPv4-compatible."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _IPV4_COMPATIBLE or any(address in net for net in _NAT64):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None
