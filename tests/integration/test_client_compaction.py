"""Compaction end to end over ZeroMQ: pulsarlab's Admin compacts, pulsarlab's client reads
the compacted view with ``is_read_compacted``."""

from __future__ import annotations

import pytest

from pulsarlab import Admin
from pulsarlab.broker.client import ConsumerType, MessageId

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
