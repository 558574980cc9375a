"""Host names in URLs and ZeroMQ endpoints: an IPv6 literal is written in brackets
(``zmq://[::1]:6650``, RFC 3986), and a ZeroMQ socket binds or connects one only with its
``IPV6`` option set (ZeroMQ's sockets are IPv4-only by default). A broker bound to every
interface (``*``, ``0.0.0.0``, ``::``) tells clients this machine's host name instead, as
Pulsar's default ``advertisedAddress`` does: nobody can connect to ``*``."""

from __future__ import annotations

import socket

__all__ = ["WILDCARD_HOSTS", "connect_host", "endpoint_is_ipv6", "is_ipv6_literal",
           "url_host"]

#: Bind hosts meaning every interface.
WILDCARD_HOSTS = frozenset({"*", "", "0.0.0.0", "::"})


def is_ipv6_literal(host: str) -> bool:
    """Whether ``host`` (bracketed or not) is an IPv6 address, e.g. ``::1`` or ``[::]``."""
    return ":" in host.strip("[]")


def url_host(host: str) -> str:
    """``host`` as it goes in a URL or endpoint: an IPv6 literal in brackets, once."""
    name = host.strip("[]")
    return f"[{name}]" if ":" in name else name


def connect_host(host: str, advertised_address: str = "") -> str:
    """The host a client is told to connect to (in a URL, bracketed when IPv6) for a
    broker bound to ``host``: ``advertised_address`` when set, else ``host``, unless that
    is a wildcard (every interface), then this machine's host name."""
    name = advertised_address or host
    if name.strip("[]") in WILDCARD_HOSTS:
        name = socket.gethostname()
    return url_host(name)


def endpoint_is_ipv6(endpoint: str) -> bool:
    """Whether a ``tcp://host:port`` endpoint names an IPv6 literal (its socket then needs
    ``IPV6``); ``False`` for ``ipc://``, ``inproc://`` and host names."""
    scheme, sep, rest = endpoint.partition("://")
    if not sep or scheme not in ("tcp", "zmq"):
        return False
    host = rest.rpartition(":")[0] if ":" in rest else rest
    return is_ipv6_literal(host)
