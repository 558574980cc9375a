"""IPv6 literals in URLs and ZeroMQ endpoints, and the host a client is told for a broker
bound to every interface (broker/hosts.py)."""

from __future__ import annotations

import socket

import pytest

from pulsarlab.broker.hosts import connect_host, endpoint_is_ipv6, is_ipv6_literal, url_host


@pytest.mark.parametrize(("host", "expected"), [
    ("::1", "[::1]"), ("[::1]", "[::1]"), ("::", "[::]"), ("fe80::1", "[fe80::1]"),
    ("127.0.0.1", "127.0.0.1"), ("*", "*"), ("localhost", "localhost"),
])
def test_url_host_brackets_ipv6_once(host, expected):
    assert url_host(host) == expected
    assert is_ipv6_literal(host) == expected.startswith("[")


@pytest.mark.parametrize(("endpoint", "expected"), [
    ("tcp://[::1]:5555", True), ("tcp://::1:5555", True), ("zmq://[::]:1", True),
    ("tcp://[::1]", True), ("tcp://127.0.0.1:5555", False), ("tcp://*:5555", False),
    ("tcp://localhost:5555", False), ("ipc:///tmp/x", False), ("inproc://a:b", False),
])
def test_endpoint_is_ipv6(endpoint, expected):
    assert endpoint_is_ipv6(endpoint) is expected


@pytest.mark.parametrize("wildcard", ["*", "", "0.0.0.0", "::", "[::]"])
def test_a_wildcard_bind_is_told_as_this_machines_host_name(wildcard):
    assert connect_host(wildcard) == url_host(socket.gethostname())
    assert connect_host(wildcard, "broker-1.example") == "broker-1.example"


@pytest.mark.parametrize(("host", "advertised", "expected"), [
    ("127.0.0.1", "", "127.0.0.1"), ("::1", "", "[::1]"), ("localhost", "", "localhost"),
    ("127.0.0.1", "localhost", "localhost"), ("127.0.0.1", "::1", "[::1]"),
    ("127.0.0.1", "*", url_host(socket.gethostname())),
])
def test_connect_host_is_the_advertised_address_else_the_bind_host(host, advertised, expected):
    assert connect_host(host, advertised) == expected
