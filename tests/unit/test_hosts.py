"""IPv6 literals in URLs and ZeroMQ endpoints (broker/hosts.py)."""

from __future__ import annotations

import pytest

from pulsarlab.broker.hosts import endpoint_is_ipv6, is_ipv6_literal, url_host


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
