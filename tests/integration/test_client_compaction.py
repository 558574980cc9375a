"""Compaction end to end over ZeroMQ: pulsarlab's Admin compacts, pulsarlab's client reads
the compacted view with ``is_read_compacted``."""

from __future__ import annotations

import pytest

from pulsarlab import Admin
from pulsarlab.broker.client import ConsumerType, InitialPosition, MessageId

from .client_support import unique


def test_read_compacted_reader_over_zeromq(broker, client):
    topic = f"persistent://public/default/{unique('compact')}"
    producer = client.create_producer(topic, batching_enabled=False)
    for key, value in [("k1", b"a"), ("k2", b"b"), ("k1", b"c"), ("k2", b"")]:
        producer.send(value, partition_key=key)
    with Admin(broker.web_url) as admin:
        assert admin.topics.compaction_status(topic)["status"] == "NOT_RUN"
        admin.topics.compact(topic)
        assert admin.topics.compaction_status(topic) == {"status": "SUCCESS", "lastError": ""}
    producer.send(b"d", partition_key="k3")
    reader = client.create_reader(topic, MessageId.earliest, is_read_compacted=True)
    seen = []
    while reader.has_message_available():
        msg = reader.read_next(5000)
        seen.append((msg.partition_key(), msg.data()))
    assert seen == [("k1", b"c"), ("k3", b"d")]
    reader.close()


def test_read_compacted_shared_consumer_is_refused(client):
    topic = f"persistent://public/default/{unique('compact')}"
    with pytest.raises(Exception, match="readCompacted only allowed"):
        client.subscribe(topic, "s", consumer_type=ConsumerType.Shared, is_read_compacted=True)


def test_read_compacted_over_zeromq_on_batches(broker, client):
    """A batch keeps its surviving messages at their ids; acking them acknowledges the
    entries (the compacted-out slots count as acknowledged)."""
    topic = f"persistent://public/default/{unique('compact-batches')}"
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=100,
                                      batching_max_publish_delay_ms=60_000)
    ids = []
    for batch in ([("k1", b"a"), ("k2", b"b"), ("k3", b"c")],
                  [("k1", b"d"), ("k2", None), ("k4", b"e")]):
        for key, value in batch:
            producer.send_async(value, lambda _res, mid: ids.append(mid), partition_key=key)
        producer.flush()
    with Admin(broker.service_url) as admin:
        admin.topics.compact(topic)
        consumer = client.subscribe(topic, "table", is_read_compacted=True,
                                    initial_position=InitialPosition.Earliest)
        got = [consumer.receive(5000) for _ in range(3)]
        assert [(m.message_id(), m.data()) for m in got] == [
            (ids[2], b"c"), (ids[3], b"d"), (ids[5], b"e")]
        for msg in got:
            consumer.acknowledge(msg)
        consumer.close()  # flushes the acks
        cursor = admin.topics.get_internal_stats(topic)["cursors"]["table"]
        assert cursor["markDeletePosition"] == "{}:{}".format(*ids[5].position)
