"""The admin REST API is served by the broker thread itself (no web thread, no hand-off
between threads per call), stops and starts with it, and shares it with every other face."""

from __future__ import annotations

import socket
import threading
import urllib.request

import pytest

from pulsarlab import Broker, Client
from pulsarlab.broker.web.pump import PumpedLoop


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as resp:
        return resp.read()


@pytest.mark.skipif(not PumpedLoop.supported(), reason="no pollable selector")
def test_requests_are_handled_on_the_broker_thread():
    with Broker(storage="memory") as broker:
        handled_on = []
        original = broker.admin.call

        def call(op, args):
            handled_on.append(threading.current_thread().name)
            return original(op, args)

        broker.admin.call = call
        assert b'"public"' in _get(broker.web_url + "/admin/v2/tenants")
        assert handled_on == ["pulsarlab-broker"]
        assert "pulsarlab-web" not in {t.name for t in threading.enumerate()}
        # A request awaiting two broker calls in turn: the second, submitted while the
        # broker thread pumps the REST loop, runs in that same loop turn (no wake-up).
        broker.call(lambda service: service.create_partitioned_topic("pt", 2))
        handled_on.clear()
        answer = _get(broker.web_url + "/admin/v2/persistent/public/default/partitioned")
        assert answer == b'["persistent://public/default/pt"]'
        assert handled_on == ["pulsarlab-broker"] * 2
    assert "pulsarlab-web" not in {t.name for t in threading.enumerate()}


@pytest.mark.skipif(not PumpedLoop.supported(), reason="no pollable selector")
def test_the_broker_serves_every_face_while_a_request_is_half_read_and_a_timer_runs():
    """A pump that blocked (or never ran) would stall one side: a REST request half sent,
    a timer armed on the REST loop, then ZeroMQ and pulsar:// traffic, then the rest of
    the request."""
    with Broker(storage="memory") as broker:
        half = socket.create_connection((broker.host, broker.web.port))
        try:
            half.sendall(b"GET /admin/v2/clusters HTTP/1.1\r\nHost: x\r\n")
            fired = threading.Event()
            loop = broker.web._loop
            assert isinstance(loop, PumpedLoop)
            loop.call_soon_threadsafe(loop.call_later, 0.05, fired.set)
            for url in (broker.service_url, broker.pulsar_url):
                with Client(url) as client:
                    topic = f"pump-{url.split(':')[0]}"
                    consumer = client.subscribe(topic, "s")
                    client.create_producer(topic).send(b"served")
                    assert consumer.receive(timeout_millis=30_000).data() == b"served"
            assert fired.wait(30), "a timer of the REST loop did not fire"
            half.sendall(b"\r\n")
            half.settimeout(30)
            assert half.recv(64).startswith(b"HTTP/1.1 200 OK")
        finally:
            half.close()
