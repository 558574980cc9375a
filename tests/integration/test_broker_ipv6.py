"""A broker on the IPv6 loopback: every face binds ``::1`` (ZeroMQ only with its IPV6
option), reports bracketed URLs, and pulsarlab's client, the admin REST client and an event
subscriber reach it through them."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import msgpack
import pytest
import zmq

from pulsarlab import Admin, Broker
from pulsarlab.broker.client import Client

DEADLINE_S = 20.0
WAIT_MS = 10_000


def ipv6_loopback_missing() -> str | None:
    """Why this machine cannot serve on ``::1``, or ``None`` when it can."""
    if not socket.has_ipv6:
        return "Python was built without IPv6 (socket.has_ipv6 is False)"
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as sock:
            sock.bind(("::1", 0))
    except OSError as exc:
        return f"this machine has no IPv6 loopback (binding ::1: {exc})"
    return None


pytestmark = pytest.mark.skipif(ipv6_loopback_missing() is not None,
                                reason=ipv6_loopback_missing() or "")


@pytest.fixture(scope="module", params=["::1", "[::1]"])
def broker(request) -> Iterator[Broker]:
    with Broker(host=request.param, storage="memory") as b:
        yield b


def test_the_reported_urls_bracket_the_address(broker):
    assert broker.service_url == f"zmq://[::1]:{broker.port}"
    assert broker.pulsar_url == f"pulsar://[::1]:{broker.pulsar_port}"
    assert broker.events_url == f"tcp://[::1]:{broker.events_port}"
    assert broker.web_url.startswith("http://[::1]:")


@pytest.mark.parametrize("face", ["service_url", "pulsar_url"])
def test_pulsarlab_client_produces_and_consumes_over_ipv6(broker, face):
    topic = f"ipv6-{face}"
    client = Client(getattr(broker, face), operation_timeout_seconds=10)
    try:
        consumer = client.subscribe(topic, "sub")
        producer = client.create_producer(topic)
        producer.send(b"over ::1")
        msg = consumer.receive(WAIT_MS)
        assert msg.data() == b"over ::1"
        consumer.acknowledge(msg)
    finally:
        client.close()


def test_admin_rest_api_answers_over_ipv6(broker):
    client = Client(broker.service_url, operation_timeout_seconds=10)
    try:
        client.create_producer("ipv6-admin").close()
    finally:
        client.close()
    with Admin(broker.web_url) as admin:
        assert "persistent://public/default/ipv6-admin" in admin.topics.get_list()


def test_event_stream_publishes_over_ipv6(broker):
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.linger = 0
    sub.ipv6 = True
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(broker.events_url)
    client = Client(broker.service_url, operation_timeout_seconds=10)
    try:
        producer = client.create_producer("ipv6-events")
        deadline = time.monotonic() + DEADLINE_S
        while not sub.poll(100):  # the subscription reaches the XPUB asynchronously
            assert time.monotonic() < deadline, "no event arrived over tcp://[::1]"
            producer.send(b"x")  # each send publishes an event once someone listens
        kind, body = sub.recv_multipart()
        assert kind and isinstance(msgpack.unpackb(body), dict)
    finally:
        client.close()
        sub.close()
