"""Idle or slow HTTP peers (slowloris) are closed after web_service_idle_timeout_ms, and
the admin REST API keeps answering everyone else meanwhile."""

from __future__ import annotations

import socket
import time

import pytest

from pulsarlab import Broker

from .conftest import Rest

_TIMEOUT_MS = 300


def _closed_by_peer(sock: socket.socket) -> bool:
    try:
        return sock.recv(1024) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def _wait_closed(sock: socket.socket, within_s: float) -> None:
    """Poll until the broker closes ``sock`` (a deadline, not a sleep-and-hope)."""
    sock.settimeout(0.05)
    deadline = time.monotonic() + within_s
    while not _closed_by_peer(sock):
        assert time.monotonic() < deadline, f"still open after {within_s} s"


@pytest.fixture(scope="module")
def quick() -> Broker:
    with Broker(storage="memory", web_service_idle_timeout_ms=_TIMEOUT_MS) as running:
        yield running


def test_slow_and_idle_http_connections_are_closed_and_others_served(quick):
    host, port = quick.host, quick.web.port
    idle = socket.create_connection((host, port))
    slow_headers = socket.create_connection((host, port))
    slow_headers.sendall(b"GET /admin/v2/clusters HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    slow_body = socket.create_connection((host, port))
    slow_body.sendall(b"PUT /admin/v2/tenants/t HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
    assert Rest(quick.web_url).get("/admin/v2/clusters").status == 200
    for sock in (idle, slow_headers, slow_body):
        _wait_closed(sock, within_s=30)
        sock.close()
    assert Rest(quick.web_url).get("/admin/v2/clusters").status == 200



def test_connections_past_max_http_server_connections_are_closed_at_once():
    with Broker(storage="memory", web_service_idle_timeout_ms=120_000,
                max_http_server_connections=2) as broker:
        host, port = broker.host, broker.web.port
        held = [socket.create_connection((host, port)) for _ in range(2)]
        extra = socket.create_connection((host, port))
        _wait_closed(extra, within_s=20)  # the idle timeout (120 s) has nothing to do with it
        extra.close()
        for sock in held:
            sock.close()
        deadline = time.monotonic() + 20
        while _status(Rest(broker.web_url)) != 200:  # once the broker saw them close
            assert time.monotonic() < deadline, "the REST API did not answer again"


def _status(rest: Rest) -> int:
    try:
        return rest.get("/admin/v2/clusters").status
    except OSError:
        return 0  # closed at once: the broker has not yet seen the others go
