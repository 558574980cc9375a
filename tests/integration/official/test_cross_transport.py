"""One core, two transports: the official client over pulsar:// and pulsarlab's Client over
ZeroMQ see the same messages (ids, keys, properties, event and publish times); shared
subscriptions across faces are in tests/integration/behaviour/test_mixed_subscriptions.py."""

from __future__ import annotations

from collections.abc import Iterator

import pulsar
import pytest

import pulsarlab
from pulsarlab import Broker

from .conftest import WAIT_MS, unique


@pytest.fixture
def zmq_client(broker: Broker) -> Iterator[pulsarlab.Client]:
    c = pulsarlab.Client(broker.service_url)
    yield c
    c.close()


def _drain_zmq(consumer: pulsarlab.Consumer, quiet_ms: int = 300) -> list:
    out = []
    while True:
        try:
            msg = consumer.receive(timeout_millis=quiet_ms)
        except pulsarlab.Timeout:
            return out
        consumer.acknowledge(msg)
        out.append(msg)


def _same_id(official: pulsar.MessageId, ours: pulsarlab.MessageId) -> bool:
    return (official.ledger_id(), official.entry_id(), official.partition(),
            official.batch_index()) == (ours.ledger_id(), ours.entry_id(), ours.partition(),
                                        ours.batch_index())


@pytest.mark.parametrize("batched", [False, True])
def test_official_producer_to_zmq_consumer(
    client: pulsar.Client, zmq_client: pulsarlab.Client, batched: bool
) -> None:
    topic = unique("x-off-to-zmq")
    consumer = zmq_client.subscribe(topic, "s")
    producer = client.create_producer(topic, batching_enabled=batched,
                                      batching_max_publish_delay_ms=20)
    sent = []
    for i in range(4):
        producer.send_async(
            f"m{i}".encode(), lambda res, mid, sent=sent: sent.append(mid),
            properties={"i": str(i)}, partition_key=f"k{i}", event_timestamp=500 + i,
        )
    producer.flush()
    received = [consumer.receive(timeout_millis=WAIT_MS) for _ in range(4)]
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    official_view = [reader.read_next(WAIT_MS) for _ in range(4)]
    for i, (mine, theirs) in enumerate(zip(received, official_view, strict=True)):
        assert mine.data() == theirs.data() == f"m{i}".encode()
        assert _same_id(theirs.message_id(), mine.message_id())
        assert mine.partition_key() == f"k{i}"
        assert mine.properties() == {"i": str(i)}
        assert mine.event_timestamp() == 500 + i
        assert mine.publish_timestamp() == theirs.publish_timestamp()
        consumer.acknowledge(mine)
    assert sorted(str(m) for m in sent) == sorted(str(m.message_id()) for m in official_view)


@pytest.mark.parametrize("batched", [False, True])
def test_zmq_producer_to_official_consumer(
    client: pulsar.Client, zmq_client: pulsarlab.Client, batched: bool
) -> None:
    topic = unique("x-zmq-to-off")
    consumer = client.subscribe(topic, "s")
    producer = zmq_client.create_producer(topic, batching_enabled=batched,
                                          batching_max_publish_delay_ms=20)
    for i in range(4):
        producer.send_async(
            f"m{i}".encode(), None, properties={"i": str(i)}, partition_key=f"k{i}",
            event_timestamp=700 + i,
        )
    producer.flush()
    zmq_reader = zmq_client.create_reader(topic, pulsarlab.MessageId.earliest)
    ours = [zmq_reader.read_next(WAIT_MS) for _ in range(4)]
    for i, mine in enumerate(ours):
        theirs = consumer.receive(timeout_millis=WAIT_MS)
        assert theirs.data() == mine.data() == f"m{i}".encode()
        assert _same_id(theirs.message_id(), mine.message_id())
        assert theirs.partition_key() == f"k{i}"
        assert theirs.properties() == {"i": str(i)}
        assert theirs.event_timestamp() == 700 + i
        assert theirs.publish_timestamp() == mine.publish_timestamp()
        consumer.acknowledge(theirs)


