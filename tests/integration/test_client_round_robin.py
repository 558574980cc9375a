"""Shared round robin end to end: turns are counted in messages, so batches alternate.

A third consumer holds ten batches of ten and closes: its entries are replayed in one read
to the two waiting consumers, in turns of ``dispatcher_max_round_robin_batch_size`` (20)
messages, i.e. two batches each.
"""

from __future__ import annotations

import pytest

from pulsarlab import Broker
from pulsarlab.broker.client import Client, ConsumerType, InitialPosition

from .client_support import receive_n, unique


@pytest.fixture
def client():
    with Broker(storage="memory") as broker:
        c = Client(broker.service_url, operation_timeout_seconds=10)
        yield c
        c.close()


def test_batches_alternate_two_by_two_between_shared_consumers(client):
    topic = unique("rr-batches")

    def shared(name):
        return client.subscribe(topic, "s", consumer_type=ConsumerType.Shared,
                                consumer_name=name, initial_position=InitialPosition.Earliest)

    holder = shared("holder")
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=10,
                                      batching_max_publish_delay_ms=60_000)
    for i in range(100):
        producer.send_async(f"m{i}".encode(), None)
    producer.flush()
    receive_n(holder, 100, ack=False)
    a, b = shared("A"), shared("B")
    holder.close()  # its ten entries are replayed to A and B in one read
    entries = {}
    for consumer in (a, b):
        got = receive_n(consumer, 40, ack=False)
        entries[consumer] = sorted({m.message_id().entry_id() for m in got})
    first, second = (a, b) if 0 in entries[a] else (b, a)
    entries[first] += sorted({m.message_id().entry_id() for m in receive_n(first, 20)})
    assert entries[first] == [0, 1, 4, 5, 8, 9]
    assert entries[second] == [2, 3, 6, 7]
