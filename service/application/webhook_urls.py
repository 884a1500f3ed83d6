"""Checks of the URLs the service sends webhooks and analysis callbacks to.

A URL must be ``http`` or ``https`` with a host, no user name or password, at most
:data:`MAX_URL_LENGTH` characters. Unless private addresses are allowed
(``BOXFISH_WEBHOOK_ALLOW_PRIVATE``), every address its host resolves to (``getaddrinfo``;
an IP literal is taken as it is) must be a public one: loopback, private, link-local (the
cloud metadata address 169.254.169.254 among them), shared (100.64.0.0/10), reserved,
documentation, multicast and unspecified addresses are refused, and so are IPv6 addresses
that carry one of those as an IPv4 address (IPv4-mapped ``::ffff:a.b.c.d``, NAT64
``64:ff9b::/96``, 6to4 ``2002::/16``) and the cloud metadata services' IPv6 addresses.

The check runs when a URL is registered and again before every delivery attempt, since what
a name resolves to can change. (The HTTP client resolves the name once more when it
connects; a name that changes between the two within milliseconds is not caught.)
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from ..errors import UrlRefused

MAX_URL_LENGTH = 2048

#: IPv6 networks whose last 32 bits are an IPv4 address that must itself be public.
_EMBEDS_IPV4 = (ipaddress.ip_network("64:ff9b::/96"),)
#: Cloud metadata services on addresses the ``ipaddress`` flags do not all catch.
_METADATA = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254", "169.254.170.2", "100.100.100.200", "fd00:ec2::254"))


def address_is_public(address: str) -> bool:
    """Whether ``address`` (an IPv4 or IPv6 literal, possibly with a ``%zone``) is a public
    unicast address, including what an IPv6 address carries as an IPv4 address."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if ip in _METADATA:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and any(ip in net for net in _EMBEDS_IPV4):
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None and not address_is_public(str(embedded)):
            return False
    return ip.is_global and not ip.is_multicast


def parse_url(url: str) -> tuple[str, int]:
    """``(host, port)`` of ``url`` if it is a URL the service may call, whatever its host
    resolves to; :class:`UrlRefused` (``invalid_url``) otherwise."""
    if len(url) > MAX_URL_LENGTH:
        raise UrlRefused("invalid_url", f"the URL is longer than {MAX_URL_LENGTH} characters")
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
        raise UrlRefused("invalid_url", "the URL contains whitespace or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UrlRefused("invalid_url", f"not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise UrlRefused("invalid_url", "the URL must start with https:// or http://")
    host = parts.hostname
    if not host:
        raise UrlRefused("invalid_url", "the URL has no host")
    if parts.username is not None or parts.password is not None:
        raise UrlRefused("invalid_url", "the URL must not carry a user name or password")
    try:
        host.encode("idna")
    except UnicodeError:
        raise UrlRefused("invalid_url", f"the host {host!r} is not a valid name") from None
    return host, port or (443 if parts.scheme == "https" else 80)


def _literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
        return True
    except ValueError:
        return False


def check_url(url: str, allow_private: bool) -> str:
    """``url`` if the service may call it now (see the module docstring); raises
    :class:`UrlRefused`: ``invalid_url`` for a malformed URL or a host that does not resolve,
    ``private_address`` for one that resolves to an address that is not public (unless
    ``allow_private``, which skips the resolution)."""
    host, port = parse_url(url)
    if allow_private:
        return url
    if _literal(host):
        addresses = [host]
    else:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            raise UrlRefused("invalid_url", f"the host {host!r} does not resolve ({exc})") \
                from None
        addresses = [info[4][0] for info in infos]
    for address in addresses:
        if not address_is_public(address):
            raise UrlRefused("private_address",
                             f"the host {host!r} resolves to {address}, which is not a public "
                             "address (loopback, private, link-local, reserved or metadata)")
    return url
