"""Admin unload over ZeroMQ: pulsarlab's client reconnects its producer and consumer."""

from __future__ import annotations

import pytest

from pulsarlab import Admin, Broker
from pulsarlab.broker.client import Client

from .client_support import unique


@pytest.fixture(scope="module")
def broker():
    with Broker(storage="memory") as b:
        yield b


def test_producer_and_consumer_survive_an_unload(broker):
    topic = f"persistent://public/default/{unique('unloaded')}"
    client = Client(broker.service_url, operation_timeout_seconds=10)
    try:
        consumer = client.subscribe(topic, "s")
        producer = client.create_producer(topic, batching_enabled=False)
        producer.send(b"a")
        assert consumer.receive(10_000).data() == b"a"  # not acked
        with Admin(broker.web_url) as admin:
            admin.topics.unload(topic)
        producer.send(b"b")  # the producer was opened again before this send
        got = [consumer.receive(10_000).data() for _ in range(2)]
        assert got == [b"a", b"b"]  # the unacked message is delivered again
        producer.close()
        consumer.close()
    finally:
        client.close()
